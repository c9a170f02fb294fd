// layerstream logits: the logits at every position of a prompt of token ids,
// for comparison with another implementation (tools/hf_check.py).
//
// The ids go in as one batch whose every entry wants logits (the prefill
// path); -o gets n_ids x n_vocab float32, row-major, little-endian, no header.
// With --greedy N, N tokens are then decoded greedily one at a time (the
// decode path: one-token batches against the KV cache); their ids are printed
// on stdout, one line, and --greedy-logits gets the N x n_vocab rows each was
// chosen from (row 0 = the prompt's last row). Ties go to the lowest id.
// Both backends default to the oracle settings, f32 activations and an f32
// KV cache, so that nothing of ours rounds below f32; --act q8 and --kv-type
// f16 measure the fast paths' error the same way.
// defines: add_logits()
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "model/cpu_backend.h"    // defines: CpuBackend
#include "model/model.h"          // defines: open_model, forward_resident
#include "runtime/thread_pool.h"  // defines: default_thread_count
#include "tools/commands.h"

#ifdef LS_HAVE_CUDA
#include "model/cuda_backend.h"  // defines: CudaBackend
#endif

namespace ls {
namespace {

struct LogitsArgs {
  std::string model, ids, out, greedy_out, backend = "cpu", act = "f32", kv_type = "f32";
  uint32_t greedy = 0;
  int threads = 0;
};

Status write_floats(const std::string& path, const std::vector<float>& v) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return make_error("%s: cannot create", path.c_str());
  const bool good = std::fwrite(v.data(), 4, v.size(), f) == v.size();
  if (std::fclose(f) != 0 || !good) return make_error("%s: write failed", path.c_str());
  return ok();
}

int32_t argmax(const float* x, uint32_t n) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return static_cast<int32_t>(best);
}

Status run_logits(const LogitsArgs& a) {
  std::vector<int32_t> ids;
  {
    std::istringstream in(a.ids);
    long long v;
    while (in >> v) ids.push_back(static_cast<int32_t>(v));
    if (!in.eof()) return make_error("--ids: not a list of integers: '%s'", a.ids.c_str());
  }
  if (ids.empty()) return make_error("--ids: no token ids given");
  auto model = open_model(a.model);
  if (!model) return model.error();
  const Model& m = **model;
  const uint32_t V = m.config().n_vocab;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= V)
      return make_error("--ids: id %d (entry %zu) is outside the vocabulary [0, %u)", ids[i], i, V);
  const uint32_t n_ctx = static_cast<uint32_t>(ids.size()) + a.greedy;
  const auto act = cpu_act_from_name(a.act);
  if (!act) return make_error("--act must be q8 or f32 (got '%s')", a.act.c_str());
  if (a.kv_type != "f32" && a.kv_type != "f16")
    return make_error("--kv-type must be f16 or f32 (got '%s')", a.kv_type.c_str());
  const KvType kv = a.kv_type == "f32" ? KvType::F32 : KvType::F16;

  std::unique_ptr<Backend> be;
  if (a.backend == "cpu") {
    be = std::make_unique<CpuBackend>(m.config(), m.globals(), n_ctx, 1, kv,
                                      a.threads > 0 ? a.threads : default_thread_count(), *act);
  } else if (a.backend == "cuda") {
#ifdef LS_HAVE_CUDA
    CudaBackendOptions co;
    co.n_ctx = n_ctx;
    co.act_q8 = *act == CpuAct::Q8;
    co.kv_type = kv;
    auto c = CudaBackend::create(m, co);
    if (!c) return c.error();
    be = std::move(*c);
#else
    return make_error("--backend cuda: this build has no CUDA; use cpu");
#endif
  } else {
    return make_error("--backend: '%s' is not cpu or cuda", a.backend.c_str());
  }

  // The prompt: one batch, every entry wanting logits.
  Batch b;
  for (size_t i = 0; i < ids.size(); ++i) b.add(ids[i], static_cast<int32_t>(i), 0, true);
  std::vector<float> logits(ids.size() * V);
  LS_TRY(forward_resident(m, *be, b, logits.data()));
  if (!a.out.empty()) LS_TRY(write_floats(a.out, logits));
  if (a.greedy == 0) return ok();

  // Greedy steps, one token per batch.
  std::vector<float> chosen_from(static_cast<size_t>(a.greedy) * V);
  std::vector<float> row(logits.end() - V, logits.end());
  std::vector<int32_t> out;
  for (uint32_t s = 0; s < a.greedy; ++s) {
    std::copy(row.begin(), row.end(), chosen_from.begin() + static_cast<size_t>(s) * V);
    out.push_back(argmax(row.data(), V));
    if (s + 1 == a.greedy) break;
    b.clear();
    b.add(out.back(), static_cast<int32_t>(ids.size() + s), 0, true);
    LS_TRY(forward_resident(m, *be, b, row.data()));
  }
  for (size_t i = 0; i < out.size(); ++i) std::printf("%s%d", i ? " " : "", out[i]);
  std::printf("\n");
  if (!a.greedy_out.empty()) LS_TRY(write_floats(a.greedy_out, chosen_from));
  return ok();
}

}  // namespace

Command add_logits(CLI::App& app) {
  auto* sub = app.add_subcommand("logits", "Write the logits at every position of a prompt of ids");
  auto a = std::make_shared<LogitsArgs>();
  sub->add_option("-m,--model", a->model, "GGUF model")->required();
  sub->add_option("--ids", a->ids, "Prompt token ids, space-separated (e.g. \"1 2 3\")")
      ->required();
  sub->add_option("-o,--all-logits", a->out, "Output: n_ids x n_vocab float32");
  sub->add_option("--greedy", a->greedy, "Then decode this many tokens greedily; ids on stdout");
  sub->add_option("--greedy-logits", a->greedy_out,
                  "Output: the greedy x n_vocab float32 rows each greedy token was chosen from");
  sub->add_option("--backend", a->backend, "cpu or cuda")->capture_default_str();
  sub->add_option("--act", a->act, "Matmul activations: f32 (exact, the oracle) or q8")
      ->capture_default_str();
  sub->add_option("--kv-type", a->kv_type, "KV cache type: f32 (exact, the oracle) or f16")
      ->capture_default_str();
  sub->add_option("-t,--threads", a->threads, "CPU threads (default: the CPUs this process may use: affinity, cgroup quota)");
  return [a] {
    Status st = run_logits(*a);
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
      return 1;
    }
    return 0;
  };
}

}  // namespace ls
