// make_tool_backend: see backends.h. LS_HAVE_CUDA is defined (PUBLIC) by the
// layerstream_cuda target, which the CLI links in CUDA builds.
#include "tools/backends.h"

#include <cstdio>

#ifdef LS_HAVE_CUDA
#include "model/cuda_backend.h"
#endif

namespace ls {

Expected<std::unique_ptr<Backend>> make_tool_backend(const Model& m, const EngineOptions& opt,
                                                     const TierPlan& plan) {
  const bool want = opt.backend == "cuda";
#ifdef LS_HAVE_CUDA
  bool use = want;
  if (opt.backend == "auto" && cuda_device_count() > 0) {
    // auto takes the GPU only for what the CUDA backend runs today.
    use = plan.n_resident == static_cast<int32_t>(m.config().n_layer) &&
          opt.kv_type == KvType::F16;
    if (!use)
      std::fprintf(stderr,
                   "layerstream: auto: the CUDA backend runs all-resident plans with an f16 KV "
                   "cache only; using the CPU\n");
  }
  if (use) {
    if (cuda_device_count() == 0)
      return make_error("--backend cuda: no CUDA device found on this machine");
    if (plan.n_resident != static_cast<int32_t>(m.config().n_layer))
      return make_error(
          "--backend cuda: the plan streams %d of %u layers (RAM or storage tiers); the CUDA "
          "backend runs resident layers only for now: raise --vram-budget or use --tiers A",
          static_cast<int32_t>(m.config().n_layer) - plan.n_resident, m.config().n_layer);
    if (opt.kv_type != KvType::F16)
      return make_error("--backend cuda: the CUDA KV cache is f16 (got --kv-type f32)");
    CudaBackendOptions co;
    co.n_ctx = opt.n_ctx;
    auto be = CudaBackend::create(m, co);
    if (!be) return be.error();
    return std::unique_ptr<Backend>(std::move(*be));
  }
#else
  (void)plan;
  if (want)
    return make_error("--backend cuda: this build has no CUDA (configured without nvcc); use cpu");
#endif
  return make_cpu_backend(m, opt);
}

}  // namespace ls
