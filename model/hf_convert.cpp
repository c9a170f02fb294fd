#include "model/hf_convert.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "io/gguf_writer.h"     // defines: GgufWriter
#include "kernels/half.h"       // defines: fp16_to_fp32, bf16_to_fp32
#include "kernels/ref/quant.h"  // defines: quantize_row
#include "model/hf_checkpoint.h"  // defines: read_hf_llama_config, open_hf_checkpoint, hf_llama_name, hf_row_of
#include "model/hf_tokenizer.h"  // defines: hf_tokenizer_to_gguf
#include "model/synth.h"  // defines: SynthShape, synth_tensor_plan, llama_file_type, llama31_rope_freqs
#include "runtime/thread_pool.h"  // defines: ThreadPool

namespace ls {
namespace {

namespace fs = std::filesystem;

std::string dims(const std::vector<uint64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

// One GGUF tensor to fill from the checkpoint (src null: rope_freqs.weight).
struct Job {
  const SynthTensor* t;
  const HfCheckpoint::Ref* src;
  uint32_t permute_heads;  // Q: n_head, K: n_head_kv, else 0
};

// Row r of a source tensor of ne0 elements as floats.
void widen_row(const HfCheckpoint::Ref& src, uint64_t r, uint64_t ne0, float* out) {
  const uint32_t eb = st_dtype_bytes(src.tensor->dtype);
  const uint8_t* p = src.file->data(*src.tensor).data() + r * ne0 * eb;
  switch (src.tensor->dtype) {
    case StDtype::F32:
      std::memcpy(out, p, ne0 * 4);
      break;
    case StDtype::F16:
    case StDtype::BF16: {
      const bool f16 = src.tensor->dtype == StDtype::F16;
      for (uint64_t k = 0; k < ne0; ++k) {
        uint16_t h;
        std::memcpy(&h, p + 2 * k, 2);  // the data need not be aligned
        out[k] = f16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
      }
      break;
    }
    default:
      break;  // refused before anything is written
  }
}

// auto: the checkpoint's own float type when every matrix has it, else f32.
std::string auto_quant(const HfCheckpoint& ck) {
  std::set<StDtype> types;
  for (const auto& [name, ref] : ck.tensors)
    if (ref.tensor->shape.size() == 2) types.insert(ref.tensor->dtype);
  if (types.size() == 1 && *types.begin() == StDtype::F16) return "f16";
  if (types.size() == 1 && *types.begin() == StDtype::BF16) return "bf16";
  return "f32";
}

}  // namespace

Status hf_convert(const HfConvertOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path dir(opt.dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return make_error(
        "%s: not a directory (a Hugging Face checkpoint folder: config.json, "
        "tokenizer.json, *.safetensors)",
        opt.dir.c_str());
  const std::string cfg_path = (dir / "config.json").string();
  auto cfg = read_hf_llama_config(cfg_path);
  if (!cfg) return cfg.error();
  const HfLlamaConfig& c = *cfg;
  auto ckr = open_hf_checkpoint(opt.dir);
  if (!ckr) return ckr.error();
  const HfCheckpoint& ck = *ckr;

  // The model's shape, in synth's terms, and the recipe.
  SynthShape s;
  s.name = dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();
  s.n_layer = c.n_layer;
  s.n_embd = c.n_embd;
  s.n_head = c.n_head;
  s.n_head_kv = c.n_head_kv;
  s.n_ff = c.n_ff;
  s.n_vocab = c.n_vocab;
  s.n_ctx = c.n_ctx;
  s.rope_base = c.rope_theta;
  s.llama31_rope = c.rope_type == "llama3";
  s.rope_factor = c.rope_factor;
  s.rope_low = c.rope_low;
  s.rope_high = c.rope_high;
  s.rope_orig_ctx = c.rope_orig_ctx;
  s.tied = c.tied;
  const std::string qname = opt.quant == "auto" ? auto_quant(ck) : opt.quant;
  auto quant = synth_quant_from_name(qname);
  if (!quant)
    return make_error(
        "convert: unknown or unsupported type '%s' (f32 f16 bf16 q8_0 q4_0 q4_1 "
        "q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m q5_k_m, or auto)",
        opt.quant.c_str());
  const std::vector<SynthTensor> plan = synth_tensor_plan(s, *quant);

  // Every source tensor: present, a float type, HF's shape ([out, in]: GGUF's reversed).
  std::vector<Job> jobs;
  std::set<std::string> used;
  for (const SynthTensor& t : plan) {
    Job j{&t, nullptr, 0};
    if (t.name != "rope_freqs.weight") {
      const std::string hf = hf_llama_name(t.name);
      j.src = ck.find(hf);
      if (!j.src)
        return make_error("%s: tensor '%s' is missing (no shard has it; GGUF %s)", opt.dir.c_str(),
                          hf.c_str(), t.name.c_str());
      const StTensor& st = *j.src->tensor;
      const char* file = j.src->file->path().c_str();
      if (st.dtype != StDtype::F32 && st.dtype != StDtype::F16 && st.dtype != StDtype::BF16)
        return make_error("%s: tensor '%s' is %s; convert reads F32, F16 and BF16", file,
                          hf.c_str(), st_dtype_name(st.dtype));
      const std::vector<uint64_t> want(t.shape.rbegin(), t.shape.rend());
      if (st.shape != want)
        return make_error("%s: tensor '%s' has shape %s, but config.json's sizes give %s", file,
                          hf.c_str(), dims(st.shape).c_str(), dims(want).c_str());
      if (t.name.ends_with(".attn_q.weight")) j.permute_heads = c.n_head;
      if (t.name.ends_with(".attn_k.weight")) j.permute_heads = c.n_head_kv;
      used.insert(hf);
    }
    jobs.push_back(j);
  }
  // Nothing else: a tensor convert would drop is a model it does not understand.
  for (const auto& [name, ref] : ck.tensors) {
    if (used.count(name) || name.ends_with(".rotary_emb.inv_freq")) continue;
    if (name == "lm_head.weight" && c.tied) continue;  // HF ties it to embed_tokens on load
    return make_error("%s: tensor '%s' is not part of a Llama model%s", ref.file->path().c_str(),
                      name.c_str(),
                      name == "lm_head.weight" ? "" : " (biases, or another architecture?)");
  }

  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_str("general.name", s.name);
  w.set_u32("general.file_type", llama_file_type(*quant));
  w.set_u32("general.quantization_version", 2);
  w.set_u32("llama.block_count", c.n_layer);
  w.set_u32("llama.context_length", c.n_ctx);
  w.set_u32("llama.embedding_length", c.n_embd);
  w.set_u32("llama.feed_forward_length", c.n_ff);
  w.set_u32("llama.attention.head_count", c.n_head);
  w.set_u32("llama.attention.head_count_kv", c.n_head_kv);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", c.rms_eps);
  w.set_f32("llama.rope.freq_base", c.rope_theta);
  w.set_u32("llama.rope.dimension_count", c.head_dim);
  w.set_u32("llama.vocab_size", c.n_vocab);
  if (c.rope_type == "linear") {
    w.set_str("llama.rope.scaling.type", "linear");
    w.set_f32("llama.rope.scaling.factor", c.rope_factor);
  } else if (c.rope_type == "llama3") {
    // As synth writes it: the tensor carries the scaling; the keys keep the
    // parameters for `export` (see model/synth.cpp).
    w.set_f32(kLlama3RopeFactorKey, c.rope_factor);
    w.set_f32(kLlama3RopeLowKey, c.rope_low);
    w.set_f32(kLlama3RopeHighKey, c.rope_high);
    w.set_u32(kLlama3RopeOrigCtxKey, c.rope_orig_ctx);
  }
  LS_TRY(hf_tokenizer_to_gguf(opt.dir, c, w));
  for (const SynthTensor& t : plan) w.add_tensor(t.name, t.type, t.shape);
  LS_TRY(w.create(opt.out));  // from here an error unlinks the temporary file (~GgufWriter)

  ThreadPool pool(opt.threads > 0 ? opt.threads : default_thread_count());
  struct Scratch {
    std::vector<float> row;
    std::vector<uint8_t> out;
  };
  std::vector<Scratch> scratch(pool.size());
  std::atomic<bool> failed{false};
  Status first_error;
  std::mutex err_mu;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const SynthTensor& t = *j.t;
    if (!j.src) {
      const std::vector<float> f = llama31_rope_freqs(s, c.head_dim);
      LS_TRY(w.write_tensor(i, {reinterpret_cast<const uint8_t*>(f.data()), f.size() * 4}));
      continue;
    }
    const GgmlTypeTraits tr = ggml_traits(t.type);
    const uint64_t ne0 = t.shape[0];
    uint64_t n_rows = 1;
    for (size_t k = 1; k < t.shape.size(); ++k) n_rows *= t.shape[k];
    const uint64_t row_bytes = ne0 / tr.block_elems * tr.block_bytes;
    const uint64_t head_rows = j.permute_heads ? n_rows / j.permute_heads : 0;
    const uint64_t per_task = std::max<uint64_t>(1, (1ull << 20) / ne0);  // ~4 MiB of floats
    const int64_t n_tasks = static_cast<int64_t>((n_rows + per_task - 1) / per_task);
    pool.run(n_tasks, [&](int64_t task, int thread) {
      if (failed.load()) return;
      const uint64_t r0 = static_cast<uint64_t>(task) * per_task;
      const uint64_t n = std::min(per_task, n_rows - r0);
      Scratch& sc = scratch[thread];
      sc.row.resize(ne0);
      sc.out.resize(n * row_bytes);
      for (uint64_t r = 0; r < n; ++r) {
        const uint64_t g = r0 + r;  // the GGUF row; its HF row is permuted for Q and K
        widen_row(*j.src, head_rows ? hf_row_of(g, head_rows) : g, ne0, sc.row.data());
        quantize_row(t.type, sc.row.data(), sc.out.data() + r * row_bytes,
                     static_cast<int64_t>(ne0));
      }
      Status st = w.write_tensor_part(i, r0 * row_bytes, {sc.out.data(), n * row_bytes});
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (!failed.exchange(true)) first_error = st;
      }
    });
    if (failed.load()) return first_error;
  }
  LS_TRY(w.finish());
  if (!opt.quiet) {
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr,
                 "convert: wrote %s: %u layers, %zu tensors from %zu shard(s), %s%s%s, %.3f GB in "
                 "%.1f s\n",
                 opt.out.c_str(), c.n_layer, plan.size(), ck.shards.size(), quant->name.c_str(),
                 c.tied ? ", tied embeddings" : "",
                 c.rope_type == "llama3" ? ", llama3 rope scaling" : "", w.total_bytes() / 1e9,
                 secs);
  }
  return ok();
}

}  // namespace ls
