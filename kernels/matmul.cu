// matmul: y (n_tok, n_out) = x (n_tok, n_in) · Wᵀ for a weight W of any GGUF
// type in device memory (n_out rows of n_in elements, GGUF blocks), x and y
// f32 row-major. This file is the dispatch and the GEMM half; the kernels
// that touch quant bits live in kernels/gemv_q.cu (fused decode GEMV) and
// kernels/dequant.cu (W -> f16), both over kernels/quant_decode.cuh.
//
// Paths (MatmulPath::Auto picks by n_tok and the activations):
//   n_tok <= 8  one pass over W for the whole batch: for Q4_K, Q5_K, Q6_K,
//               Q8_0 and Q4_0, x quantized to int8 (quantize_act_q8_cuda,
//               into the context's scratch, skipped when the caller says x
//               is unchanged) and gemv_q8 (v5, dp4a); for the other types,
//               or all of them under LS_GEMV_VERSION=2, gemv_q (f32).
//   f32 x       (set_act_q8(false): --act f32, the exact oracle) gemv_q at
//               every width, 8 tokens a launch: nothing rounds to f16.
//   n_tok >  8  dequant W to f16 scratch (skipped for F16 weights), x to f16,
//               then a tensor-core GEMM with f32 accumulation and f32 output
//               (a weight larger than the scratch, the output head, in slices
//               of rows: gemm_in_slices):
//               cublasGemmEx when libcublas loads, else gemm_wmma_f16 below.
//               PrefillPath (matmul.cuh) picks the dequantization kernel and
//               whether matmul_cuda_shared_x overlaps the next weight's
//               dequantization with the current GEMM: the GEMM is bound by
//               the tensor cores, the dequantization by memory, and at 512
//               tokens the second was 45 % of the matmul time of an 8b layer.
//
// Overlap, per group of weights w[0..n) sharing x (two scratches A, B):
//     main: deq w0 -> A | record e | GEMM w0 (A) | wait r | GEMM w1 (B) | ...
//     side:              wait e | deq w1 -> B | record r  ...
// The side stream waits for everything enqueued on main before GEMM i, which
// includes GEMM i-1, the last reader of the scratch it overwrites; main waits
// for the dequantization before the GEMM that reads it. cuBLAS runs on main
// only, with the shapes and inputs of the serial path, so the bits are the
// same.
//
// cuBLAS is opened with dlopen at context creation rather than linked: the
// binary then starts on machines without libcublas (and needs no 100 MiB of
// static cuBLAS), and the context says which GEMM it runs (gemm_backend()).
//
// gemm_wmma_f16 (the fallback, v1, correctness over speed): one warp per
// 16 x 16 tile of y (16 tokens x 16 outputs), grid (ceil(n_out/16),
// ceil(n_tok/16)). Per k-step of 16 the warp stages the x tile and the W tile
// in shared memory (16-byte loads, zeros past the edges), runs one
// 16x16x16 wmma, and at the end writes the in-bounds part of the tile.
// defines: MatmulContext, matmul_cuda, matmul_cuda_shared_x, matmul_gemm_f16
#include "kernels/matmul.cuh"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <mma.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/dequant.cuh"
#include "kernels/gemv_q.cuh"
#include "kernels/gemv_q8.cuh"
#include "kernels/mmq_q8.cuh"
#include "kernels/mmq_stream.cuh"
#include "kernels/quantize_act.cuh"
#include "runtime/env.h"
#include "runtime/cuda_util.cuh"

namespace ls {

namespace {

using CublasCreate = cublasStatus_t (*)(cublasHandle_t*);
using CublasDestroy = cublasStatus_t (*)(cublasHandle_t);
using CublasSetStream = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using CublasGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                        int, int, const void*, const void*, cudaDataType, int,
                                        const void*, cudaDataType, int, const void*, void*,
                                        cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

struct WmmaParams {
  const uint4* x16;  // (n_tok, n_in) f16, 8 per uint4
  const uint4* w16;  // (n_out, n_in) f16
  float* y;          // (n_tok, ldy): columns 0..n_out-1 written
  int64_t n_in, n_out, n_tok, ldy;
};

__global__ void __launch_bounds__(32) gemm_wmma_f16(WmmaParams p) {
  using namespace nvcuda;
  __shared__ __align__(32) __half xs[16 * 16];  // (tok, k)
  __shared__ __align__(32) __half ws[16 * 16];  // (out, k) = col-major (k, out)
  __shared__ __align__(32) float cs[16 * 16];   // (tok, out)
  const int lane = threadIdx.x;
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * 16,
                t0 = static_cast<int64_t>(blockIdx.y) * 16;
  const int r = lane >> 1, half8 = (lane & 1) * 8;  // each lane stages 8 halves of one tile row
  const int64_t k8 = p.n_in / 8;                    // uint4s per row
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.f);
  for (int64_t k0 = 0; k0 < p.n_in; k0 += 16) {
    const int64_t kc = (k0 + half8) / 8;  // this lane's uint4 column
    const bool k_in = k0 + half8 < p.n_in;
    uint4 zero = make_uint4(0, 0, 0, 0);
    uint4 xa = (k_in && t0 + r < p.n_tok) ? p.x16[(t0 + r) * k8 + kc] : zero;
    uint4 wa = (k_in && o0 + r < p.n_out) ? p.w16[(o0 + r) * k8 + kc] : zero;
    *reinterpret_cast<uint4*>(xs + r * 16 + half8) = xa;
    *reinterpret_cast<uint4*>(ws + r * 16 + half8) = wa;
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::load_matrix_sync(fa, xs, 16);
    wmma::load_matrix_sync(fb, ws, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    __syncwarp();
  }
  wmma::store_matrix_sync(cs, acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int i = lane; i < 256; i += 32) {
    const int64_t t = t0 + i / 16, o = o0 + i % 16;
    if (t < p.n_tok && o < p.n_out) p.y[t * p.ldy + o] = cs[i];
  }
}

}  // namespace

struct MatmulContext::Impl {
  cudaStream_t stream = nullptr;
  int64_t max_weight_elems = 0;
  uint16_t* w16 = nullptr;  // (max_weight_elems) f16 scratch for dequantized W
  uint16_t* x16 = nullptr;  // f16 activations, grown on demand
  int64_t x16_cap = 0;
  MatmulPath path = MatmulPath::Auto;
  int mmq_version = 0;  // set_mmq_version
  int mmq_decode = -1;  // set_mmq_decode
  bool act_q8 = true;   // set_act_q8
  PrefillPath prefill = kDefaultPrefillPath;
  // PrefillPath::Overlap: the second scratch, the side stream and the two
  // events of the fork / join, made on first use.
  uint16_t* w16b = nullptr;
  cudaStream_t side = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
  bool overlap_failed = false;  // the second scratch could not be had: run Tile
  // 8-bit x of the decode GEMV: (kGemvMaxTok, xq_cap) int8 and their
  // (kGemvMaxTok, xq_cap / 32) {d, sum q}; and which x they hold (the host's
  // view in stream order, so also right inside a captured graph).
  int8_t* xq = nullptr;
  float2* xds = nullptr;
  int64_t xq_cap = 0;
  // 8-bit x of the int8 GEMM (kernels/mmq_q8.cuh), block-major: (n_in / 32,
  // mmq_x_ld(n_tok), 32) and (n_in / 32, mmq_x_ld(n_tok)), grown
  // stream-ordered to the largest batch seen.
  int8_t* mq = nullptr;
  float2* mds = nullptr;
  int64_t mq_cap = 0;  // values
  const float* xq_src = nullptr;
  int64_t xq_n_in = 0, xq_n_tok = 0;
  L2Prefetch next_pf;  // set_next_prefetch
  // cuBLAS, when it loads.
  void* lib = nullptr;
  cublasHandle_t handle = nullptr;
  CublasDestroy destroy = nullptr;
  CublasSetStream set_stream = nullptr;
  CublasGemmEx gemm_ex = nullptr;
  std::string backend;

  void load_cublas() {
    const char* names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    const char* found = nullptr;
    for (const char* n : names)
      if ((lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) {
        found = n;
        break;
      }
    if (!lib) {
      const char* why = dlerror();
      backend = std::string("wmma (libcublas not loadable: ") + (why ? why : "?") + ")";
      return;
    }
    auto create = reinterpret_cast<CublasCreate>(dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<CublasDestroy>(dlsym(lib, "cublasDestroy_v2"));
    set_stream = reinterpret_cast<CublasSetStream>(dlsym(lib, "cublasSetStream_v2"));
    gemm_ex = reinterpret_cast<CublasGemmEx>(dlsym(lib, "cublasGemmEx"));
    if (!create || !destroy || !set_stream || !gemm_ex) {
      backend = std::string("wmma (") + found + " lacks a cuBLAS symbol)";
    } else if (create(&handle) != CUBLAS_STATUS_SUCCESS) {
      handle = nullptr;
      backend = std::string("wmma (cublasCreate failed in ") + found + ")";
    } else {
      backend = std::string("cublas (") + found + ")";
      return;
    }
    dlclose(lib);
    lib = nullptr;
  }
};

Expected<std::unique_ptr<MatmulContext>> MatmulContext::create(cudaStream_t stream,
                                                               int64_t max_weight_elems) {
  std::unique_ptr<MatmulContext> ctx(new MatmulContext());
  ctx->impl_ = std::make_unique<Impl>();
  Impl& im = *ctx->impl_;
  im.stream = stream;
  im.max_weight_elems = max_weight_elems;
  if (max_weight_elems > 0)
    LS_CUDA_TRY(cudaMalloc(&im.w16, static_cast<size_t>(max_weight_elems) * sizeof(uint16_t)));
  im.load_cublas();
  if (const char* e = std::getenv("LS_PREFILL_PATH")) {
    if (!std::strcmp(e, "legacy"))
      im.prefill = PrefillPath::Legacy;
    else if (!std::strcmp(e, "tile"))
      im.prefill = PrefillPath::Tile;
    else if (!std::strcmp(e, "overlap"))
      im.prefill = PrefillPath::Overlap;
    else
      return make_error("LS_PREFILL_PATH=%s: expected legacy, tile or overlap", e);
  }
  return std::move(ctx);
}

MatmulContext::~MatmulContext() {
  if (!impl_) return;
  cudaFree(impl_->w16);
  cudaFree(impl_->x16);
  cudaFree(impl_->w16b);
  if (impl_->side) cudaStreamDestroy(impl_->side);
  if (impl_->fork) cudaEventDestroy(impl_->fork);
  if (impl_->join) cudaEventDestroy(impl_->join);
  cudaFree(impl_->xq);
  cudaFree(impl_->xds);
  cudaFree(impl_->mq);
  cudaFree(impl_->mds);
  if (impl_->handle) impl_->destroy(impl_->handle);
  if (impl_->lib) dlclose(impl_->lib);
}

bool MatmulContext::has_cublas() const {
  return impl_->handle != nullptr;
}
const char* MatmulContext::gemm_backend() const {
  return impl_->backend.c_str();
}
void MatmulContext::set_path(MatmulPath p) {
  impl_->path = p;
}
MatmulPath MatmulContext::path() const {
  return impl_->path;
}
void MatmulContext::set_prefill_path(PrefillPath p) {
  impl_->prefill = p;
}
PrefillPath MatmulContext::prefill_path() const {
  return impl_->prefill;
}
const char* MatmulContext::prefill_path_name(PrefillPath p) {
  switch (p) {
    case PrefillPath::Legacy:
      return "legacy";
    case PrefillPath::Tile:
      return "tile";
    case PrefillPath::Overlap:
      return "overlap";
  }
  return "?";
}

void MatmulContext::set_mmq_decode(int on) {
  impl_->mmq_decode = on;
}

void MatmulContext::set_mmq_version(int v) {
  impl_->mmq_version = v;
}

void MatmulContext::set_act_q8(bool on) {
  impl_->act_q8 = on;
}

namespace {
// The int8 GEMM's x scratch grown to n values, stream-ordered; inside a
// capture an error, as a graph would keep the freed buffer.
Status grow_mmq_x(MatmulContext::Impl& im, int64_t n, cudaStream_t stream) {
  if (n <= im.mq_cap) return ok();
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  LS_CUDA_TRY(cudaStreamIsCapturing(stream, &cs));
  if (cs != cudaStreamCaptureStatusNone)
    return make_error(
        "matmul: the int8 GEMM's x scratch (%lld values) must be reserved before a CUDA graph "
        "capture (MatmulContext::reserve_gemv_x)",
        (long long)n);
  if (im.mq) LS_CUDA_TRY(cudaFreeAsync(im.mq, stream));
  if (im.mds) LS_CUDA_TRY(cudaFreeAsync(im.mds, stream));
  im.mq = nullptr;
  im.mds = nullptr;
  im.mq_cap = 0;
  LS_CUDA_TRY(cudaMallocAsync(&im.mq, static_cast<size_t>(n), stream));
  LS_CUDA_TRY(cudaMallocAsync(&im.mds, static_cast<size_t>(n / 32) * sizeof(float2), stream));
  im.mq_cap = n;
  return ok();
}
}  // namespace

Status MatmulContext::reserve_gemv_x(int64_t max_n_in) {
  Impl& im = *impl_;
  // The int8 GEMM's x scratch, sized here for its widest call (64 tokens:
  // 2.3 MB at a 70b's n_ff): a capture cannot grow it, and growing it after
  // one would leave the captured graph reading the freed buffer (decode
  // widths the GEMM takes, mmq_min_tok, run inside the backend's graphs,
  // and a wider eager step grew it under them: session 39's pipeline batch
  // test with LS_MMQ_MIN_TOK).
  LS_TRY(mmq_stream_prepare());
  LS_TRY(grow_mmq_x(im, mmq_x_ld(kMmqMaxTok) * max_n_in, im.stream));
  if (max_n_in <= im.xq_cap) return ok();
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  LS_CUDA_TRY(cudaStreamIsCapturing(im.stream, &cs));
  if (cs != cudaStreamCaptureStatusNone)
    return make_error(
        "matmul: the int8 x scratch (%lld values) must be reserved before a CUDA "
        "graph capture (MatmulContext::reserve_gemv_x)",
        (long long)max_n_in);
  // Rounded up to whole 1024-value tiles; cudaMalloc keeps q 16-byte aligned.
  const int64_t cap = (max_n_in + 1023) / 1024 * 1024;
  LS_CUDA_TRY(cudaStreamSynchronize(im.stream));  // the old scratch may still be read
  cudaFree(im.xq);
  cudaFree(im.xds);
  im.xq = nullptr;
  im.xds = nullptr;
  im.xq_cap = 0;
  im.xq_src = nullptr;
  LS_CUDA_TRY(cudaMalloc(&im.xq, static_cast<size_t>(kGemvMaxTok * cap)));
  LS_CUDA_TRY(cudaMalloc(&im.xds, static_cast<size_t>(kGemvMaxTok * cap / 32) * sizeof(float2)));
  im.xq_cap = cap;
  return ok();
}

namespace {
// Whether the Auto path may take the int8 GEMM at all (LS_MMQ=0: never, A/B).
bool mmq_auto_on(const MatmulContext::Impl& im) {
  static const bool env_off = [] {
    const char* e = std::getenv("LS_MMQ");
    return e && std::string(e) == "0";
  }();
  return im.path == MatmulPath::Auto && im.act_q8 && !env_off;
}

// From how many tokens the Auto path gives a weight the int8 GEMM
// (kernels/mmq_q8.cuh).
int64_t mmq_min_tok(const MatmulContext::Impl& im, const WeightView& w) {
  if (const int env = mmq_env_min_tok()) return env;
  const bool decode = im.mmq_decode < 0 ? mmq_env_decode() : im.mmq_decode > 0;
  return decode ? mmq_decode_min_tok(w.type, w.n_out, w.n_in) : kMmqMinTok;
}
}  // namespace

bool MatmulContext::takes_q8(const WeightView& w, int64_t n_tok) const {
  // Where the int8 GEMM takes a decode width (mmq_min_tok), the weight's x
  // is quantized in the GEMM's layout (run_mmq), not the GEMV's.
  const bool mmq = mmq_auto_on(*impl_) && mmq_supports(w.type) && n_tok >= mmq_min_tok(*impl_, w);
  return n_tok >= 1 && n_tok <= kGemvMaxTok && impl_->act_q8 && gemv_q8_supports(w.type) &&
         gemv_env_version() != 2 && !mmq;
}

ActQ8Device MatmulContext::gemv_x() const {
  return {impl_->xq, impl_->xds};
}

void MatmulContext::note_gemv_x(const float* x, int64_t n_in, int64_t n_tok) {
  impl_->xq_src = x;
  impl_->xq_n_in = n_in;
  impl_->xq_n_tok = n_tok;
}

void MatmulContext::set_next_prefetch(const L2Prefetch& pf) {
  impl_->next_pf = pf;
}

Status matmul_gemm_f16(MatmulContext& ctx, const void* w16, const void* x16, int64_t n_in,
                       int64_t n_out, int64_t n_tok, float* y, cudaStream_t stream, int64_t ldy) {
  MatmulContext::Impl& im = *ctx.impl();
  if (ldy == 0) ldy = n_out;
  if (ldy < n_out)
    return make_error("matmul: ldy %lld < n_out %lld", (long long)ldy, (long long)n_out);
  const bool use_cublas = im.handle && im.path != MatmulPath::GemmWmma;
  if (im.path == MatmulPath::GemmCublas && !im.handle)
    return make_error("matmul: cuBLAS path asked for but %s", im.backend.c_str());
  if (use_cublas) {
    if (n_in > 0x7fffffff || ldy > 0x7fffffff || n_tok > 0x7fffffff)
      return make_error("matmul: GEMM dimension over 2^31 (n_in %lld, n_out %lld, n_tok %lld)",
                        (long long)n_in, (long long)n_out, (long long)n_tok);
    if (im.set_stream(im.handle, stream) != CUBLAS_STATUS_SUCCESS)
      return make_error("matmul: cublasSetStream failed");
    // Column-major view: C (n_out x n_tok, ld n_out) = Wᵀ... W row-major
    // (n_out, n_in) is column-major (n_in x n_out), so op(A) = T gives
    // (n_out x n_in); x row-major (n_tok, n_in) is column-major (n_in x n_tok).
    const float alpha = 1.f, beta = 0.f;
    const cublasStatus_t s =
        im.gemm_ex(im.handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n_out),
                   static_cast<int>(n_tok), static_cast<int>(n_in), &alpha, w16, CUDA_R_16F,
                   static_cast<int>(n_in), x16, CUDA_R_16F, static_cast<int>(n_in), &beta, y,
                   CUDA_R_32F, static_cast<int>(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
      return make_error(
          "matmul: cublasGemmEx failed with status %d (n_in %lld, n_out %lld, n_tok %lld)",
          static_cast<int>(s), (long long)n_in, (long long)n_out, (long long)n_tok);
    return ok();
  }
  const dim3 grid(static_cast<unsigned>((n_out + 15) / 16),
                  static_cast<unsigned>((n_tok + 15) / 16));
  if ((n_tok + 15) / 16 > 65535)
    return make_error("matmul: wmma GEMM n_tok %lld too large", (long long)n_tok);
  gemm_wmma_f16<<<grid, 32, 0, stream>>>(WmmaParams{
      static_cast<const uint4*>(x16), static_cast<const uint4*>(w16), y, n_in, n_out, n_tok, ldy});
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

namespace {

Status check_weight(const WeightView& w, const float* x, int64_t n_tok) {
  const GgmlTypeTraits tr = ggml_traits(w.type);
  const char* tn = ggml_type_name(w.type);
  if (w.n_in <= 0 || w.n_out <= 0 || n_tok < 0)
    return make_error("matmul: bad shape %s n_in %lld n_out %lld n_tok %lld", tn, (long long)w.n_in,
                      (long long)w.n_out, (long long)n_tok);
  if (w.n_in % tr.block_elems != 0 || w.n_in % 8 != 0)
    return make_error("matmul: %s n_in %lld is not a multiple of its block (%u) and of 8", tn,
                      (long long)w.n_in, tr.block_elems);
  if (reinterpret_cast<uintptr_t>(w.data) % 16 || reinterpret_cast<uintptr_t>(x) % 16)
    return make_error("matmul: weight and x must be 16-byte aligned (%s)", tn);
  return ok();
}

// f32 activations (--act f32, the exact oracle) keep the f32 GEMV at every
// width, kGemvMaxTok tokens per launch: the GEMM would round x and W to f16.
MatmulPath pick_path(const MatmulContext::Impl& im, int64_t n_tok) {
  if (im.path != MatmulPath::Auto) return im.path;
  return n_tok <= kGemvMaxTok || !im.act_q8 ? MatmulPath::Gemv : MatmulPath::GemmCublas;
}

// A decode batch: 8-bit x and dp4a (kernels/gemv_q8.cu) for the types it
// covers, f32 x (kernels/gemv_q.cu) for the rest and under LS_GEMV_VERSION=2.
// x_unchanged: the previous call's 8-bit x is this x (q/k/v, gate/up).
// more / n_more: further weights of w's type and shape reading the same x,
// in the same launch (8-bit GEMV only; the caller checks).
// The direct form (v7: no shared-memory stage) where it applies, the default
// since session 12 (8b Q4_K_M decode +6 %, every K-quant shape of the 8b as
// fast or faster: bench/results/2026-12-02-h200-s12.md); LS_GEMV_VERSION=6
// (or 5) keeps the staged form for A/B.
bool gemv_direct(GgmlType t, int64_t n_tok) {
  const int env = gemv_env_version();
  return (env == 0 || env == 7) && n_tok <= 2 &&
         (t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K);
}

// Whether the next weight of another format joins a v7 launch (q, k in Q4_K
// and v in Q6_K: one launch a Q4_K_M layer's q/k/v, not two). LS_GEMV_MIX=0
// keeps one launch a format (A/B).
bool gemv_joins(GgmlType run, GgmlType next, int64_t n_tok) {
  static const bool off = [] {
    const char* e = std::getenv("LS_GEMV_MIX");
    return e && std::string(e) == "0";
  }();
  return !off && gemv_direct(run, n_tok) && gemv_direct(next, n_tok) && gemv_q8_mixes(run, next);
}

Status run_gemv(MatmulContext& ctx, const WeightView& w, const float* x, int64_t n_tok, float* y,
                cudaStream_t stream, bool x_unchanged, const WeightView* more = nullptr,
                float* const* y_more = nullptr, int n_more = 0) {
  MatmulContext::Impl& im = *ctx.impl();
  const int64_t row_bytes = static_cast<int64_t>(ggml_row_bytes(w.type, w.n_in));
  const L2Prefetch pf = im.next_pf;  // for this launch only (set_next_prefetch)
  im.next_pf = L2Prefetch{};
  if (n_tok > kGemvMaxTok) {  // f32 x only (pick_path): kGemvMaxTok tokens a launch
    if (im.act_q8)
      return make_error("matmul: the 8-bit GEMV takes n_tok <= %d, got %lld", kGemvMaxTok,
                        (long long)n_tok);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kGemvMaxTok) {
      GemvParams p{static_cast<const uint8_t*>(w.data),
                   x + t0 * w.n_in,
                   y + t0 * w.n_out,
                   w.n_in,
                   w.n_out,
                   row_bytes,
                   static_cast<int>(std::min<int64_t>(kGemvMaxTok, n_tok - t0))};
      LS_TRY(gemv_q_f32_launch(w.type, p, stream));
    }
    return ok();
  }
  if (ctx.takes_q8(w, n_tok)) {
    LS_TRY(ctx.reserve_gemv_x(w.n_in));
    const ActQ8Device xq{im.xq, im.xds};
    if (!(x_unchanged && im.xq_src == x && im.xq_n_in == w.n_in && im.xq_n_tok == n_tok)) {
      LS_TRY(quantize_act_q8_cuda(x, n_tok, w.n_in, xq, stream));
      im.xq_src = x;
      im.xq_n_in = w.n_in;
      im.xq_n_tok = n_tok;
    }
    GemvQ8Params p{static_cast<const uint8_t*>(w.data),
                   xq,
                   y,
                   w.n_in,
                   w.n_out,
                   row_bytes,
                   static_cast<int>(n_tok)};
    if (gemv_env_version() == 5) p.lane_blocks = 1;  // A/B: one x-block per lane everywhere
    if (gemv_direct(w.type, n_tok)) {
      p.version = 7;
      // The first tile's loads before the PDL wait (GemvQ8Params::early):
      // LS_GEMV_EARLY=1 (an A/B, session 50).
      static const bool early = [] {
        const char* e = std::getenv("LS_GEMV_EARLY");
        return e && std::string(e) == "1";
      }();
      p.early = early && p.lane_blocks != 1;
      // LS_GEMV_STREAM=0: plain weight loads (GemvQ8Params::plain_loads; an
      // A/B, session 54).
      static const bool plain = [] {
        const char* e = std::getenv("LS_GEMV_STREAM");
        return e && std::string(e) == "0";
      }();
      p.plain_loads = plain;
    }
    for (int i = 0; i < n_more; ++i) {
      p.more[i] = {static_cast<const uint8_t*>(more[i].data), y_more[i], more[i].n_out};
      if (more[i].type != w.type) {  // a launch over two formats (gemv_q8_mixes)
        p.more[i].alt = true;
        p.more[i].row_bytes = static_cast<int64_t>(ggml_row_bytes(more[i].type, more[i].n_in));
        p.alt_type = more[i].type;
      }
    }
    p.n_more = n_more;
    p.pf = pf;
    // LS_GEMV_AHEAD=MiB: each block prefetches the rows that many bytes
    // ahead of its own (GemvQ8Params::ahead; session 55, an A/B: off by default).
    static const int64_t ahead = env_mib("LS_GEMV_AHEAD", 0, 1024);
    p.ahead = ahead;
    // LS_GEMV_ROWS=2|8: the direct form's rows a block at one token, where
    // the launch is of one format and without early loads (an A/B, session
    // 54: more bytes in flight a warp for the H200's bandwidth).
    static const int rows = [] {
      const int64_t r = env_int("LS_GEMV_ROWS", 0, 0);
      if (r == 0 || r == 2 || r == 8) return static_cast<int>(r);
      std::fprintf(stderr, "LS_GEMV_ROWS=%lld: want 2 or 8; using the default (4)\n",
                   static_cast<long long>(r));
      return 0;
    }();
    bool mixed = false;
    for (int i = 0; i < n_more; ++i) mixed = mixed || p.more[i].alt;
    if (rows != 0 && p.version == 7 && n_tok == 1 && !mixed && !p.early) p.rows = rows;
    return gemv_q8_launch(w.type, p, stream);
  }
  GemvParams p{static_cast<const uint8_t*>(w.data),
               x,
               y,
               w.n_in,
               w.n_out,
               row_bytes,
               static_cast<int>(n_tok)};
  return gemv_q_f32_launch(w.type, p, stream);
}

// x (n_tok, n_in) -> im.x16, growing it stream-ordered (no device-wide
// sync) to the largest batch seen.
Status convert_x(MatmulContext::Impl& im, const float* x, int64_t nx, cudaStream_t stream) {
  if (nx > im.x16_cap) {
    if (im.x16) LS_CUDA_TRY(cudaFreeAsync(im.x16, stream));
    im.x16 = nullptr;
    im.x16_cap = 0;
    LS_CUDA_TRY(cudaMallocAsync(&im.x16, static_cast<size_t>(nx) * sizeof(uint16_t), stream));
    im.x16_cap = nx;
  }
  return convert_f32_f16_launch(x, nx, im.x16, stream, im.prefill != PrefillPath::Legacy);
}

// W -> f16 in `scratch` on `stream`; F16 weights are used in place (*w16 set).
Status dequant_w(MatmulContext::Impl& im, const WeightView& w, uint16_t* scratch,
                 cudaStream_t stream, const void** w16) {
  if (w.type == GgmlType::F16) {
    *w16 = w.data;
    return ok();
  }
  if (w.n_in * w.n_out > im.max_weight_elems)
    return make_error("matmul: %s weight of %lld elements exceeds the context's scratch (%lld)",
                      ggml_type_name(w.type), (long long)(w.n_in * w.n_out),
                      (long long)im.max_weight_elems);
  LS_TRY(dequant_f16_launch(
      w.type, w.data, w.n_in, w.n_out, scratch, stream,
      im.prefill == PrefillPath::Legacy ? DequantKernel::Rows : DequantKernel::Tile));
  *w16 = scratch;
  return ok();
}

Status run_gemm(MatmulContext& ctx, MatmulPath path, const void* w16, const WeightView& w,
                int64_t n_tok, float* y, cudaStream_t stream, int64_t ldy = 0) {
  MatmulContext::Impl& im = *ctx.impl();
  const MatmulPath saved = im.path;
  if (path == MatmulPath::GemmWmma) im.path = MatmulPath::GemmWmma;
  Status st = matmul_gemm_f16(ctx, w16, im.x16, w.n_in, w.n_out, n_tok, y, stream, ldy);
  im.path = saved;
  return st;
}

// Whether w's f16 form fits the scratch (F16 weights are used in place).
bool fits_scratch(const MatmulContext::Impl& im, const WeightView& w) {
  return w.type == GgmlType::F16 || w.n_in * w.n_out <= im.max_weight_elems;
}

// Rows a slice of w holds (a multiple that keeps slices 16-byte aligned, as
// check_weight asks of the whole weight); 0: not even those fit.
int64_t slice_rows(const MatmulContext::Impl& im, const WeightView& w) {
  const uint64_t row_bytes = ggml_row_bytes(w.type, static_cast<uint64_t>(w.n_in));
  int64_t align = 1;
  while ((row_bytes * static_cast<uint64_t>(align)) % 16 != 0) align *= 2;
  return im.max_weight_elems / w.n_in / align * align;
}

Status check_slices(const MatmulContext::Impl& im, const WeightView& w) {
  if (fits_scratch(im, w) || slice_rows(im, w) > 0) return ok();
  return make_error(
      "matmul: a slice of the %s weight (n_in %lld) does not fit the context's "
      "f16 scratch (%lld elements)",
      ggml_type_name(w.type), (long long)w.n_in, (long long)im.max_weight_elems);
}

// The GEMM of a weight larger than the scratch (the output head: its f16
// form alone was 1.96 GiB of a 70b's device budget, 4x any layer weight), x
// already in x16: slices of as many rows as the scratch holds, each
// dequantized, then multiplied into its columns of y (row stride n_out).
// Each output is computed from the same f16 values as unsliced; the GEMM's
// shapes differ, so cuBLAS may pick another kernel (the WMMA fallback gives
// the same bits).
Status gemm_in_slices(MatmulContext& ctx, MatmulPath path, const WeightView& w, int64_t n_tok,
                      float* y, cudaStream_t stream) {
  MatmulContext::Impl& im = *ctx.impl();
  LS_TRY(check_slices(im, w));
  const uint64_t row_bytes = ggml_row_bytes(w.type, static_cast<uint64_t>(w.n_in));
  const int64_t rows = slice_rows(im, w);
  for (int64_t r0 = 0; r0 < w.n_out; r0 += rows) {
    const WeightView part{
        w.type, static_cast<const uint8_t*>(w.data) + static_cast<uint64_t>(r0) * row_bytes, w.n_in,
        std::min(rows, w.n_out - r0)};
    const void* w16 = nullptr;
    LS_TRY(dequant_w(im, part, im.w16, stream, &w16));
    LS_TRY(run_gemm(ctx, path, w16, part, n_tok, y + r0, stream, w.n_out));
  }
  return ok();
}

// The second scratch, side stream and events of PrefillPath::Overlap; false
// (and Tile from then on) when they cannot be had.
bool overlap_ready(MatmulContext::Impl& im) {
  if (im.w16b) return true;
  if (im.overlap_failed || im.max_weight_elems <= 0) return false;
  if (cudaMalloc(&im.w16b, static_cast<size_t>(im.max_weight_elems) * sizeof(uint16_t)) !=
          cudaSuccess ||
      cudaStreamCreateWithFlags(&im.side, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreateWithFlags(&im.fork, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventCreateWithFlags(&im.join, cudaEventDisableTiming) != cudaSuccess) {
    (void)cudaGetLastError();
    cudaFree(im.w16b);
    im.w16b = nullptr;
    im.overlap_failed = true;
    return false;
  }
  return true;
}

// The most weights matmul_cuda_shared_x splits between the int8 GEMM and the
// f16 GEMM (q, k, v; gate, up: 3 at most in the engine; more run as given).
constexpr int kMaxSharedX = 8;

// Whether a weight runs the int8 GEMM in a call of n_tok tokens: asked for
// (MatmulPath::Mmq, up to 64 tokens, the types it has kernels for), or Auto
// with 8-bit x from mmq_min_tok (decode widths where it measured faster
// than the GEMV) up to where it measured faster than the f16 GEMM for the
// weight's type and rows (mmq_auto_max_tok).
bool takes_mmq(const MatmulContext::Impl& im, const WeightView& w, int64_t n_tok) {
  if (!mmq_supports(w.type) || n_tok > kMmqMaxTok) return false;
  if (im.path == MatmulPath::Mmq) return true;
  if (!mmq_auto_on(im) || n_tok < mmq_min_tok(im, w)) return false;
  // Decode widths by mmq_min_tok alone (MatmulContext::takes_q8 must agree:
  // the GEMV's x is made for the weights that stay there).
  return n_tok < kMmqMinTok || n_tok <= mmq_auto_max_tok(w.type, w.n_out);
}

// MatmulPath::Mmq asked for a weight or width it does not take.
Error mmq_refused(int64_t n_tok, GgmlType t) {
  return make_error(
      "matmul: the int8 GEMM path asked for %lld tokens of %s (it takes up to %d tokens of "
      "Q4_K, Q5_K, Q6_K, Q8_0, in groups of up to %d weights)",
      (long long)n_tok, ggml_type_name(t), kMmqMaxTok, kMaxSharedX);
}

// x quantized once into the int8 GEMM's scratch (block-major, grown
// stream-ordered), then one launch per weight.
Status run_mmq(MatmulContext::Impl& im, const WeightView* w, float* const* y, int n_w,
               const float* x, int64_t n_tok, cudaStream_t stream) {
  const int64_t n_in = w[0].n_in, ld = mmq_x_ld(n_tok), n = ld * n_in;
  for (int i = 1; i < n_w; ++i)
    if (w[i].n_in != n_in)
      return make_error("matmul: weights sharing x differ in n_in (%lld, %lld)", (long long)n_in,
                        (long long)w[i].n_in);
  LS_TRY(grow_mmq_x(im, n, stream));  // past what reserve_gemv_x sized: tests, benches
  const ActQ8Device xq{im.mq, im.mds};
  LS_TRY(quantize_act_q8_blocks_cuda(x, n_tok, n_in, ld, xq, stream));
  for (int i = 0; i < n_w; ++i) {
    MmqParams p{static_cast<const uint8_t*>(w[i].data),
                xq,
                y[i],
                w[i].n_in,
                w[i].n_out,
                static_cast<int64_t>(ggml_row_bytes(w[i].type, w[i].n_in)),
                static_cast<int>(n_tok)};
    p.version = im.mmq_version;
    LS_TRY(mmq_launch(w[i].type, p, stream));
  }
  return ok();
}

}  // namespace

Status matmul_cuda(MatmulContext& ctx, const WeightView& w, const float* x, int64_t n_tok, float* y,
                   cudaStream_t stream, bool x_unchanged) {
  if (pick_path(*ctx.impl(), n_tok) == MatmulPath::Gemv && !takes_mmq(*ctx.impl(), w, n_tok)) {
    LS_TRY(check_weight(w, x, n_tok));
    return n_tok == 0 ? ok() : run_gemv(ctx, w, x, n_tok, y, stream, x_unchanged);
  }
  float* const ys[1] = {y};
  return matmul_cuda_shared_x(ctx, &w, ys, 1, x, n_tok, stream);
}

Status matmul_cuda_shared_x(MatmulContext& ctx, const WeightView* w, float* const* y, int n_w,
                            const float* x, int64_t n_tok, cudaStream_t stream, bool x_unchanged) {
  MatmulContext::Impl& im = *ctx.impl();
  for (int i = 0; i < n_w; ++i) LS_TRY(check_weight(w[i], x, n_tok));
  if (n_tok == 0 || n_w <= 0) return ok();
  // The weights the int8 GEMM takes run there (one quantization of x); the
  // others (F16, Q3_K, ...) go on below as a group of their own, so each
  // weight gets what a call of its own would.
  WeightView rest_w[kMaxSharedX];
  float* rest_y[kMaxSharedX];
  int n_rest = 0;
  if (n_w <= kMaxSharedX && (im.path == MatmulPath::Auto || im.path == MatmulPath::Mmq)) {
    WeightView mw[kMaxSharedX];
    float* my[kMaxSharedX];
    int n_m = 0;
    for (int i = 0; i < n_w; ++i) {
      if (takes_mmq(im, w[i], n_tok)) {
        mw[n_m] = w[i];
        my[n_m++] = y[i];
      } else {
        rest_w[n_rest] = w[i];
        rest_y[n_rest++] = y[i];
      }
    }
    if (im.path == MatmulPath::Mmq && n_rest > 0) return mmq_refused(n_tok, rest_w[0].type);
    if (n_m > 0) {
      LS_TRY(run_mmq(im, mw, my, n_m, x, n_tok, stream));
      if (n_rest == 0) {
        im.next_pf = L2Prefetch{};  // set for a GEMV that did not come
        return ok();
      }
      w = rest_w;
      y = rest_y;
      n_w = n_rest;
    }
  }
  if (im.path == MatmulPath::Mmq) return mmq_refused(n_tok, w[0].type);  // past kMaxSharedX
  const MatmulPath path = pick_path(im, n_tok);
  if (path == MatmulPath::Gemv) {
    // Runs of consecutive weights of one 8-bit-GEMV type and n_in share a launch,
    // and the weight after a run when its format joins (gemv_joins).
    for (int i = 0; i < n_w;) {
      int j = i + 1;
      if (ctx.takes_q8(w[i], n_tok)) {
        while (j < n_w && j - i <= GemvQ8Params::kMaxMore && w[j].type == w[i].type &&
               w[j].n_in == w[i].n_in)
          ++j;
        if (j < n_w && j - i <= GemvQ8Params::kMaxMore && w[j].n_in == w[i].n_in &&
            ctx.takes_q8(w[j], n_tok) && gemv_joins(w[i].type, w[j].type, n_tok))
          ++j;  // then one of the second format
      }
      LS_TRY(run_gemv(ctx, w[i], x, n_tok, y[i], stream, x_unchanged || i > 0, w + i + 1, y + i + 1,
                      j - i - 1));
      i = j;
    }
    return ok();
  }
  im.next_pf = L2Prefetch{};                // set for a GEMV that did not come (set_next_prefetch)
  if (im.prefill == PrefillPath::Legacy) {  // as before 2026-11-30: x converted per weight
    for (int i = 0; i < n_w; ++i) LS_TRY(check_slices(im, w[i]));
    for (int i = 0; i < n_w; ++i) {
      const void* w16 = nullptr;
      if (fits_scratch(im, w[i])) LS_TRY(dequant_w(im, w[i], im.w16, stream, &w16));
      LS_TRY(convert_x(im, x, n_tok * w[i].n_in, stream));
      if (fits_scratch(im, w[i]))
        LS_TRY(run_gemm(ctx, path, w16, w[i], n_tok, y[i], stream));
      else
        LS_TRY(gemm_in_slices(ctx, path, w[i], n_tok, y[i], stream));
    }
    return ok();
  }
  // One conversion of x serves every weight of the group (all have the same n_in).
  for (int i = 1; i < n_w; ++i)
    if (w[i].n_in != w[0].n_in)
      return make_error("matmul: weights sharing x differ in n_in (%lld, %lld)",
                        (long long)w[0].n_in, (long long)w[i].n_in);
  bool all_fit = true;
  for (int i = 0; i < n_w; ++i) all_fit = all_fit && fits_scratch(im, w[i]);
  if (!all_fit) {  // one weight after the other, those too large in slices
    for (int i = 0; i < n_w; ++i) LS_TRY(check_slices(im, w[i]));
    LS_TRY(convert_x(im, x, n_tok * w[0].n_in, stream));
    for (int i = 0; i < n_w; ++i) {
      if (!fits_scratch(im, w[i])) {
        LS_TRY(gemm_in_slices(ctx, path, w[i], n_tok, y[i], stream));
        continue;
      }
      const void* w16 = nullptr;
      LS_TRY(dequant_w(im, w[i], im.w16, stream, &w16));
      LS_TRY(run_gemm(ctx, path, w16, w[i], n_tok, y[i], stream));
    }
    return ok();
  }
  const bool overlap = im.prefill == PrefillPath::Overlap && n_w > 1 && overlap_ready(im);
  uint16_t* scratch[2] = {im.w16, overlap ? im.w16b : im.w16};
  const void* w16 = nullptr;
  LS_TRY(dequant_w(im, w[0], scratch[0], stream, &w16));
  LS_TRY(convert_x(im, x, n_tok * w[0].n_in, stream));
  for (int i = 0; i < n_w; ++i) {
    const void* next16 = nullptr;
    const bool fork = overlap && i + 1 < n_w;
    if (fork) {
      LS_CUDA_TRY(cudaEventRecord(im.fork, stream));
      LS_CUDA_TRY(cudaStreamWaitEvent(im.side, im.fork, 0));
      LS_TRY(dequant_w(im, w[i + 1], scratch[(i + 1) & 1], im.side, &next16));
      LS_CUDA_TRY(cudaEventRecord(im.join, im.side));
    }
    LS_TRY(run_gemm(ctx, path, w16, w[i], n_tok, y[i], stream));
    if (fork) {
      LS_CUDA_TRY(cudaStreamWaitEvent(stream, im.join, 0));
      w16 = next16;
    } else if (i + 1 < n_w) {
      LS_TRY(dequant_w(im, w[i + 1], scratch[0], stream, &w16));
    }
  }
  return ok();
}

}  // namespace ls
