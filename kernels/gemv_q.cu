// gemv_q: y (n_tok, n_out) = x (n_tok, n_in) · Wᵀ for decode batches
// (n_tok <= 8), W in any GGUF type, dequantized on the fly and never written
// out. Decode is bound by reading W once, so the kernel reads each weight
// byte exactly once for all n_tok tokens and keeps everything else in
// registers and L1.
//
// Mapping: one warp per output row, 4 warps (4 rows) per 128-thread block,
// grid = ceil(n_out / 4) blocks (a tail row past n_out retires at once). A
// row is cut in chunks of 8 consecutive values (n_in / 8 chunks); lane l
// takes chunks l, l + 32, l + 64, ..., so one warp step covers 256
// consecutive values = a contiguous run of the row's bytes (one Q4_K / Q5_K
// / Q6_K / Q2_K / Q3_K super-block, or 8 Q4_0..Q8_0 blocks), and the 32
// lanes' loads of one step coalesce into few 32-byte sectors. Each chunk is
// decoded by decode8<T> (kernels/quant_decode.cuh: where the quant bits of
// each format live is explained there), then dotted with the matching 8
// activations of each token (two 16-byte float4 loads per token, served by
// L1/L2 since every row's warp reads the same x). f32 accumulation per lane,
// then a butterfly shuffle reduction (__shfl_xor_sync) per token; lane t
// writes y[t][row]. The token count is a template parameter (1..8) so the
// accumulators stay in registers.
//
// Versions: v1 (this one) is the generic decode8 form, one kernel per type
// and token count. It does not quantize x to int8 for dp4a as llama.cpp's
// MMVQ does: with f32 activations the result matches the f32 reference to
// rounding, and at n_tok = 1 the kernel is bound by DRAM, not arithmetic.
// defines: gemv_q_f32_launch
#include "kernels/gemv_q.cuh"

#include "kernels/cuda_util.cuh"
#include "kernels/quant_decode.cuh"

namespace ls {
namespace {

constexpr int kWarps = 4;  // rows per block

template <GgmlType T, int NT>
__global__ void __launch_bounds__(kWarps * 32) gemv_q_f32(GemvParams p) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= p.n_out) return;  // whole warp leaves together
  const uint8_t* __restrict__ wrow = p.w + row * p.row_bytes;
  const float4* __restrict__ x4 = reinterpret_cast<const float4*>(p.x);
  const int64_t n_chunks = p.n_in >> 3;
  const int64_t x4_stride = p.n_in >> 2;  // float4s per token row

  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.f;

#pragma unroll 4
  for (int64_t c = lane; c < n_chunks; c += 32) {
    float v[8];
    decode8<T>(wrow, c, v);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const float4 a = __ldg(x4 + t * x4_stride + 2 * c);
      const float4 b = __ldg(x4 + t * x4_stride + 2 * c + 1);
      float s = acc[t];
      s = fmaf(v[0], a.x, s);
      s = fmaf(v[1], a.y, s);
      s = fmaf(v[2], a.z, s);
      s = fmaf(v[3], a.w, s);
      s = fmaf(v[4], b.x, s);
      s = fmaf(v[5], b.y, s);
      s = fmaf(v[6], b.z, s);
      s = fmaf(v[7], b.w, s);
      acc[t] = s;
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], off);
  }
  // After the butterfly every lane holds every sum; lane t stores token t.
#pragma unroll
  for (int t = 0; t < NT; ++t)
    if (lane == t) p.y[t * p.n_out + row] = acc[t];
}

template <GgmlType T, int NT>
Status launch_nt(const GemvParams& p, cudaStream_t stream) {
  const int64_t blocks = (p.n_out + kWarps - 1) / kWarps;
  if (blocks > 0x7fffffff) return make_error("gemv_q: n_out %lld too large", (long long)p.n_out);
  gemv_q_f32<T, NT><<<static_cast<unsigned>(blocks), kWarps * 32, 0, stream>>>(p);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

template <GgmlType T>
Status launch_type(const GemvParams& p, cudaStream_t stream) {
  switch (p.n_tok) {
    case 1: return launch_nt<T, 1>(p, stream);
    case 2: return launch_nt<T, 2>(p, stream);
    case 3: return launch_nt<T, 3>(p, stream);
    case 4: return launch_nt<T, 4>(p, stream);
    case 5: return launch_nt<T, 5>(p, stream);
    case 6: return launch_nt<T, 6>(p, stream);
    case 7: return launch_nt<T, 7>(p, stream);
    case 8: return launch_nt<T, 8>(p, stream);
    default: return make_error("gemv_q: n_tok %d outside 1..%d", p.n_tok, kGemvMaxTok);
  }
}

}  // namespace

Status gemv_q_f32_launch(GgmlType type, const GemvParams& p, cudaStream_t stream) {
  return dispatch_decodable(type, "gemv_q",
                            [&]<GgmlType T>() -> Status { return launch_type<T>(p, stream); });
}

}  // namespace ls
