// dequant: W (n_out, n_in) in a GGUF type -> f16 (n_out, n_in) row-major, so
// that a tensor-core GEMM (cuBLAS, or the fallback in kernels/matmul.cu) can
// run prefill batches. One thread per 8-value chunk: it decodes the chunk
// with decode8<T> (kernels/quant_decode.cuh, shared with the GEMV, where
// each format's bits are explained) and stores the 8 halves with one
// 16-byte store. Consecutive threads take consecutive chunks, so both the
// quant reads and the f16 writes are coalesced.
// Grid (v2): x = 256-chunk tiles of a row, y = rows (striding by gridDim.y
// past 65535), so no thread divides to find its row. v1 walked a flat
// grid-stride loop over n_out * n_in / 8 chunks and paid a 64-bit division
// per chunk: 2.4 TB/s of read + write traffic against 4.2 for a plain copy
// (bench/results/2026-11-30-h200-prefill.md).
// The quant values (d * sc * q, small integers times f16 scales) round to
// f16 at a relative 2^-11; weights outside the f16 range become inf, which
// real checkpoints do not have.
//
// Also here: the f32 -> f16 conversion of the activations.
// defines: dequant_f16_launch, convert_f32_f16_launch
#include "kernels/dequant.cuh"

#include <algorithm>

#include "kernels/cuda_util.cuh"
#include "kernels/quant_decode.cuh"

namespace ls {
namespace {

struct DequantParams {
  const uint8_t* w;
  uint4* out;  // 8 halves per element
  int64_t chunks_per_row;
  int64_t n_out;
  int64_t row_bytes;
};

template <GgmlType T>
__global__ void __launch_bounds__(256) dequant_f16(DequantParams p) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= p.chunks_per_row) return;
  for (int64_t r = blockIdx.y; r < p.n_out; r += gridDim.y) {
    float v[8];
    decode8<T>(p.w + r * p.row_bytes, c, v);
    uint4 o;
    o.x = __half_as_ushort(__float2half_rn(v[0])) |
          (uint32_t(__half_as_ushort(__float2half_rn(v[1]))) << 16);
    o.y = __half_as_ushort(__float2half_rn(v[2])) |
          (uint32_t(__half_as_ushort(__float2half_rn(v[3]))) << 16);
    o.z = __half_as_ushort(__float2half_rn(v[4])) |
          (uint32_t(__half_as_ushort(__float2half_rn(v[5]))) << 16);
    o.w = __half_as_ushort(__float2half_rn(v[6])) |
          (uint32_t(__half_as_ushort(__float2half_rn(v[7]))) << 16);
    p.out[r * p.chunks_per_row + c] = o;
  }
}

__global__ void convert_f32_f16(const float* __restrict__ x, int64_t n, __half* __restrict__ out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = __float2half_rn(x[i]);
}

unsigned grid_for(int64_t n, int threads) {
  const int64_t want = (n + threads - 1) / threads;
  return static_cast<unsigned>(want < 132 * 16 ? (want > 0 ? want : 1) : 132 * 16);
}

}  // namespace

Status dequant_f16_launch(GgmlType type, const void* w, int64_t n_in, int64_t n_out, uint16_t* out,
                          cudaStream_t stream) {
  DequantParams p{static_cast<const uint8_t*>(w), reinterpret_cast<uint4*>(out), n_in / 8, n_out,
                  static_cast<int64_t>(ggml_row_bytes(type, n_in))};
  const dim3 grid(static_cast<unsigned>((p.chunks_per_row + 255) / 256),
                  static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(n_out, 1), 65535)));
  return dispatch_decodable(type, "dequant_f16", [&]<GgmlType T>() -> Status {
    dequant_f16<T><<<grid, 256, 0, stream>>>(p);
    LS_CUDA_TRY(cudaGetLastError());
    return ok();
  });
}

Status convert_f32_f16_launch(const float* x, int64_t n, uint16_t* out, cudaStream_t stream) {
  convert_f32_f16<<<grid_for(n, 256), 256, 0, stream>>>(x, n, reinterpret_cast<__half*>(out));
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace ls
