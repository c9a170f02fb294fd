#include "model/synth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "kernels/half.h"
#include "kernels/ref/quant.h"
#include "model/tokenizer.h"
#include "runtime/thread_pool.h"

namespace ls {
namespace {

// Counter-based random numbers: value i of stream s depends only on (seed, s,
// i), so any thread can produce any part of a tensor and the file is the same
// for every thread count.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline double uniform01(uint64_t bits) { return ((bits >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
// Standard normal (Box-Muller on two hashed uniforms).
inline float normal(uint64_t key) {
  const double u1 = uniform01(splitmix64(key));
  const double u2 = uniform01(splitmix64(key ^ 0x5851f42d4c957f2dull));
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

// llama.cpp's rule for which layers of a mixture get more bits: the first and
// last eighth, and every third layer in between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// A type that can hold a row of n elements: llama.cpp's fallbacks for rows
// that are not a multiple of a K-quant's 256-element block.
GgmlType fit_row(GgmlType t, uint64_t n) {
  if (n % ggml_traits(t).block_elems == 0) return t;
  GgmlType alt = t;
  switch (t) {
    case GgmlType::Q4_K: alt = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: alt = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: alt = GgmlType::Q8_0; break;
    case GgmlType::Q2_K: case GgmlType::Q3_K: alt = GgmlType::Q4_0; break;
    default: alt = GgmlType::F16; break;
  }
  if (n % ggml_traits(alt).block_elems == 0) return alt;
  return GgmlType::F16;
}

// A pool of quantized blocks of N(0, stddev) data. Quantizing 70 billion
// random floats with the K-quant reference quantizers would take far longer
// than the 2 minutes we allow for the 70b preset; instead each block of a
// large tensor is a block drawn (by the counter RNG) from this pool, which
// makes every block a genuine quantization of normal data at memory speed.
struct BlockPool {
  std::vector<uint8_t> blocks;
  uint32_t n_blocks = 0;
  uint32_t block_bytes = 0;
};

BlockPool make_pool(GgmlType type, float stddev, uint64_t seed, ThreadPool& pool) {
  const GgmlTypeTraits tr = ggml_traits(type);
  BlockPool p;
  p.n_blocks = tr.block_elems == 1 ? 0 : 8192;
  p.block_bytes = tr.block_bytes;
  if (p.n_blocks == 0) return p;
  p.blocks.resize(static_cast<size_t>(p.n_blocks) * tr.block_bytes);
  const int64_t per_task = 256;
  pool.run(p.n_blocks / per_task, [&](int64_t task, int) {
    std::vector<float> tmp(per_task * tr.block_elems);
    for (size_t k = 0; k < tmp.size(); ++k)
      tmp[k] = stddev * normal(seed ^ splitmix64(task * tmp.size() + k + 0x1234567ull));
    quantize_row(type, tmp.data(), p.blocks.data() + task * per_task * tr.block_bytes,
                 static_cast<int64_t>(tmp.size()));
  });
  return p;
}

// Fill `out` with elements [first, first + n) of a plain-typed tensor.
void fill_plain(const SynthTensor& t, uint64_t stream, uint64_t first, uint64_t n, uint8_t* out) {
  for (uint64_t k = 0; k < n; ++k) {
    float v = t.stddev * normal(stream ^ splitmix64(first + k));
    if (t.is_norm) v += 1.0f;
    switch (t.type) {
      case GgmlType::F32: std::memcpy(out + 4 * k, &v, 4); break;
      case GgmlType::F16: { uint16_t h = fp32_to_fp16(v); std::memcpy(out + 2 * k, &h, 2); break; }
      case GgmlType::BF16: { uint16_t h = fp32_to_bf16(v); std::memcpy(out + 2 * k, &h, 2); break; }
      default: break;
    }
  }
}

}  // namespace

uint32_t llama_file_type(const SynthQuant& q) {
  if (q.mixture == 4) return 15;
  if (q.mixture == 5) return 17;
  switch (q.base) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1;
    case GgmlType::Q4_0: return 2;
    case GgmlType::Q4_1: return 3;
    case GgmlType::Q8_0: return 7;
    case GgmlType::Q5_0: return 8;
    case GgmlType::Q5_1: return 9;
    case GgmlType::Q2_K: return 10;
    case GgmlType::Q3_K: return 12;
    case GgmlType::Q4_K: return 14;
    case GgmlType::Q5_K: return 16;
    case GgmlType::Q6_K: return 18;
    case GgmlType::BF16: return 32;
    default: return 0;
  }
}

std::vector<float> llama31_rope_freqs(const SynthShape& s, uint32_t n_rot) {
  std::vector<float> out(n_rot / 2);
  const double low_wavelen = s.rope_orig_ctx / s.rope_low;
  const double high_wavelen = s.rope_orig_ctx / s.rope_high;
  for (uint32_t i = 0; i < n_rot / 2; ++i) {
    const double freq = std::pow(static_cast<double>(s.rope_base), -2.0 * i / n_rot);
    const double wavelen = 2 * M_PI / freq;
    double factor;
    if (wavelen < high_wavelen) factor = 1;
    else if (wavelen > low_wavelen) factor = s.rope_factor;
    else {
      const double smooth =
          (s.rope_orig_ctx / wavelen - s.rope_low) / (s.rope_high - s.rope_low);
      factor = 1.0 / ((1 - smooth) / s.rope_factor + smooth);
    }
    out[i] = static_cast<float>(factor);
  }
  return out;
}

std::optional<SynthShape> synth_preset(const std::string& name) {
  SynthShape s;
  s.name = name;
  if (name == "tiny") {
    // Small enough for CI, but with GQA and Llama 3.1 rope scaling.
    s.n_layer = 4; s.n_embd = 256; s.n_head = 4; s.n_head_kv = 2; s.n_ff = 768; s.n_vocab = 512;
    s.n_ctx = 2048; s.llama31_rope = true; s.rope_orig_ctx = 256;
    return s;
  }
  // Llama 3.2 1B, Llama 3.1 8B and 70B shapes.
  s.n_vocab = 128256; s.rope_base = 500000.0f; s.llama31_rope = true; s.n_ctx = 131072;
  if (name == "1b") {
    s.n_layer = 16; s.n_embd = 2048; s.n_head = 32; s.n_head_kv = 8; s.n_ff = 8192;
    s.rope_factor = 32.0f; s.tied = true;
    return s;
  }
  if (name == "8b") {
    s.n_layer = 32; s.n_embd = 4096; s.n_head = 32; s.n_head_kv = 8; s.n_ff = 14336;
    return s;
  }
  if (name == "70b") {
    s.n_layer = 80; s.n_embd = 8192; s.n_head = 64; s.n_head_kv = 8; s.n_ff = 28672;
    return s;
  }
  return std::nullopt;
}

std::optional<SynthQuant> synth_quant_from_name(const std::string& name) {
  SynthQuant q;
  q.name = name;
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "q4_k_m") { q.base = GgmlType::Q4_K; q.mixture = 4; return q; }
  if (lower == "q5_k_m") { q.base = GgmlType::Q5_K; q.mixture = 5; return q; }
  auto t = ggml_type_from_name(lower);
  if (!t || !ggml_traits(*t).dequantizable || !can_quantize(*t)) return std::nullopt;
  q.base = *t;
  return q;
}

std::vector<SynthTensor> synth_tensor_plan(const SynthShape& s, const SynthQuant& q) {
  const uint64_t E = s.n_embd, F = s.n_ff, V = s.n_vocab;
  const uint64_t KV = static_cast<uint64_t>(s.n_head_kv) * (s.n_embd / s.n_head);
  const bool is_70b = s.n_layer == 80 && s.n_embd == 8192;  // llama.cpp's LLM_TYPE_70B rule
  const float in_std = 1.0f / std::sqrt(static_cast<float>(E));
  // Residual projections shrink with depth (GPT-2 style), so 80 layers of
  // random updates do not blow up the residual stream.
  const float depth = std::sqrt(2.0f * s.n_layer);
  auto weight_type = [&](GgmlType t, uint64_t row) { return fit_row(t, row); };
  std::vector<SynthTensor> out;
  const GgmlType head_type = q.mixture ? GgmlType::Q6_K : q.base;
  out.push_back({"token_embd.weight", weight_type(s.tied ? head_type : q.base, E), {E, V}, 1.0f,
                 false});
  if (s.llama31_rope)
    out.push_back({"rope_freqs.weight", GgmlType::F32, {(s.n_embd / s.n_head) / 2}, 0.0f, false});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    GgmlType v_type = q.base, down_type = q.base;
    if (q.mixture) {
      if (use_more_bits(static_cast<int>(l), static_cast<int>(s.n_layer))) {
        v_type = GgmlType::Q6_K;
        down_type = GgmlType::Q6_K;
      } else if (is_70b && q.base == GgmlType::Q4_K) {
        v_type = GgmlType::Q5_K;  // 8 heads share attn_v in the 70B: more bits, little size
      }
    }
    out.push_back({p + "attn_norm.weight", GgmlType::F32, {E}, 0.1f, true});
    out.push_back({p + "attn_q.weight", weight_type(q.base, E), {E, E}, in_std, false});
    out.push_back({p + "attn_k.weight", weight_type(q.base, E), {E, KV}, in_std, false});
    out.push_back({p + "attn_v.weight", weight_type(v_type, E), {E, KV}, in_std, false});
    out.push_back({p + "attn_output.weight", weight_type(q.base, E), {E, E}, in_std / depth, false});
    out.push_back({p + "ffn_norm.weight", GgmlType::F32, {E}, 0.1f, true});
    out.push_back({p + "ffn_gate.weight", weight_type(q.base, E), {E, F}, in_std, false});
    out.push_back({p + "ffn_up.weight", weight_type(q.base, E), {E, F}, in_std, false});
    out.push_back({p + "ffn_down.weight", weight_type(down_type, F), {F, E},
                   1.0f / std::sqrt(static_cast<float>(F)) / depth, false});
  }
  out.push_back({"output_norm.weight", GgmlType::F32, {E}, 0.1f, true});
  // A head of std 3/sqrt(E) gives logits of std ~3: peaked enough that greedy
  // decoding is not decided by rounding noise.
  if (!s.tied) out.push_back({"output.weight", weight_type(head_type, E), {E, V}, 3.0f * in_std, false});
  if (s.tied) out[0].stddev = 3.0f * in_std;
  return out;
}

Status synth_write(const SynthOptions& opt, const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  SynthShape s = opt.shape;
  if (s.n_layer == 0 || s.n_embd == 0 || s.n_head == 0 || s.n_head_kv == 0 || s.n_ff == 0)
    return make_error("synth: layers, dim, heads, kv-heads and ffn must all be positive");
  if (s.n_embd % s.n_head != 0)
    return make_error("synth: dim %u is not a multiple of heads %u", s.n_embd, s.n_head);
  if (s.n_head % s.n_head_kv != 0)
    return make_error("synth: heads %u is not a multiple of kv-heads %u", s.n_head, s.n_head_kv);
  if ((s.n_embd / s.n_head) % 2 != 0)
    return make_error("synth: the head size %u must be even (rope rotates pairs)",
                      s.n_embd / s.n_head);

  GgufWriter w;
  // Vocabulary first: a vocab file fixes n_vocab.
  std::shared_ptr<GgufFile> vocab;
  if (!opt.vocab_path.empty()) {
    auto v = GgufFile::open(opt.vocab_path);
    if (!v) return v.error();
    vocab = *v;
    auto n = copy_vocab(*vocab, w);
    if (!n) return n.error();
    s.n_vocab = *n;
  } else {
    LS_TRY(write_builtin_vocab(w, s.n_vocab));
  }

  w.set_str("general.architecture", "llama");
  w.set_str("general.name", "layerstream synthetic " + s.name + " " + opt.quant.name);
  w.set_u32("general.file_type", llama_file_type(opt.quant));
  w.set_u32("general.quantization_version", 2);
  w.set_u64("layerstream.synth.seed", opt.seed);
  w.set_u32("llama.block_count", s.n_layer);
  w.set_u32("llama.context_length", s.n_ctx);
  w.set_u32("llama.embedding_length", s.n_embd);
  w.set_u32("llama.feed_forward_length", s.n_ff);
  w.set_u32("llama.attention.head_count", s.n_head);
  w.set_u32("llama.attention.head_count_kv", s.n_head_kv);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_f32("llama.rope.freq_base", s.rope_base);
  w.set_u32("llama.rope.dimension_count", s.n_embd / s.n_head);
  w.set_u32("llama.vocab_size", s.n_vocab);
  if (s.llama31_rope) {
    // Llama 3 scaling is the rope_freqs.weight tensor alone, as in the files
    // llama.cpp's converter writes: no llama.rope.scaling.* key. llama.cpp
    // aborts on the type "llama3", and without a type it takes
    // llama.rope.scaling.factor as a *linear* factor on top of the tensor.
    // The parameters the tensor is computed from (HF's rope_scaling) go under
    // our own names, which other readers ignore: `export` needs them for
    // HF's config.json when they are not Llama 3.1's defaults.
    w.set_f32(kLlama3RopeFactorKey, s.rope_factor);
    w.set_f32(kLlama3RopeLowKey, s.rope_low);
    w.set_f32(kLlama3RopeHighKey, s.rope_high);
    w.set_u32(kLlama3RopeOrigCtxKey, s.rope_orig_ctx);
  }

  const std::vector<SynthTensor> plan = synth_tensor_plan(s, opt.quant);
  for (const SynthTensor& t : plan) w.add_tensor(t.name, t.type, t.shape);
  LS_TRY(w.create(path));

  ThreadPool pool(opt.threads > 0 ? opt.threads : default_thread_count());
  // One block pool per (type, stddev) pair; a model has only a handful.
  std::map<std::pair<int, float>, BlockPool> pools;
  for (size_t i = 0; i < plan.size(); ++i) {
    const SynthTensor& t = plan[i];
    if (ggml_traits(t.type).block_elems == 1) continue;
    auto key = std::make_pair(static_cast<int>(t.type), t.stddev);
    if (!pools.count(key))
      pools[key] = make_pool(t.type, t.stddev, splitmix64(opt.seed * 1000003 + pools.size()), pool);
  }

  // Each tensor in chunks of at most 16 MiB, spread over the pool; every
  // thread writes its own chunk with pwrite. Memory: threads x 16 MiB.
  constexpr uint64_t kChunk = 16ull << 20;
  std::vector<std::vector<uint8_t>> scratch(pool.size(), std::vector<uint8_t>(kChunk));
  std::atomic<bool> failed{false};
  Status first_error;
  std::mutex err_mu;
  uint64_t done_bytes = 0;
  const uint64_t total = w.total_bytes();
  for (size_t i = 0; i < plan.size(); ++i) {
    const SynthTensor& t = plan[i];
    const GgmlTypeTraits tr = ggml_traits(t.type);
    const uint64_t bytes = w.tensor_bytes(i);
    const uint64_t stream = splitmix64(opt.seed ^ splitmix64(0xabcdef00ull + i));
    if (t.name == "rope_freqs.weight") {
      std::vector<float> f = llama31_rope_freqs(s, s.n_embd / s.n_head);
      LS_TRY(w.write_tensor(i, {reinterpret_cast<const uint8_t*>(f.data()), f.size() * 4}));
      continue;
    }
    if (opt.zero_layers && t.name.starts_with("blk.") && !t.is_norm) {
      done_bytes += bytes;  // left a hole: create() sized the file
      continue;
    }
    const uint64_t chunk = std::max<uint64_t>(tr.block_bytes, kChunk / tr.block_bytes * tr.block_bytes);
    const int64_t n_chunks = static_cast<int64_t>((bytes + chunk - 1) / chunk);
    const BlockPool* bp = nullptr;
    if (tr.block_elems > 1) bp = &pools.at({static_cast<int>(t.type), t.stddev});
    pool.run(n_chunks, [&](int64_t c, int thread) {
      if (failed.load()) return;
      const uint64_t at = static_cast<uint64_t>(c) * chunk;
      const uint64_t n = std::min(chunk, bytes - at);
      uint8_t* buf = scratch[thread].data();
      if (bp) {
        const uint64_t first_block = at / tr.block_bytes;
        for (uint64_t b = 0; b < n / tr.block_bytes; ++b) {
          const uint64_t pick = splitmix64(stream ^ (first_block + b)) % bp->n_blocks;
          std::memcpy(buf + b * tr.block_bytes, bp->blocks.data() + pick * tr.block_bytes,
                      tr.block_bytes);
        }
      } else {
        fill_plain(t, stream, at / tr.block_bytes, n / tr.block_bytes, buf);
      }
      Status st = w.write_tensor_part(i, at, {buf, n});
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (!failed.exchange(true)) first_error = st;
      }
    });
    if (failed.load()) return first_error;
    done_bytes += bytes;
    if (!opt.quiet && (i % 9 == 0 || i + 1 == plan.size()) && total > (1ull << 30)) {
      std::fprintf(stderr, "\rsynth: %5.1f%% (%.1f of %.1f GB)", 100.0 * done_bytes / total,
                   done_bytes / 1e9, total / 1e9);
    }
  }
  LS_TRY(w.finish());
  if (!opt.quiet) {
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "%ssynth: wrote %s: %s %s, %u layers, %.3f GB in %.1f s (%.2f GB/s)\n",
                 total > (1ull << 30) ? "\n" : "", path.c_str(), s.name.c_str(),
                 opt.quant.name.c_str(), s.n_layer, total / 1e9, secs, total / 1e9 / secs);
  }
  return ok();
}

}  // namespace ls
