// dequant: W (n_out, n_in) in a GGUF type -> f16 (n_out, n_in) row-major, so
// that a tensor-core GEMM (cuBLAS, or the fallback in kernels/matmul.cu) can
// run prefill batches. The CPU reference is dequantize_row
// (kernels/ref/quant.cpp) followed by fp32_to_fp16: the GPU bits equal it
// exactly (tests/gpu/test_dequant.cpp), because every format's value is
// d·sc·q (- m) with products exact in f32 (an 11-bit f16 scale times a
// <= 8-bit sub-scale times a <= 6-bit quant needs <= 25 bits only for Q6_K,
// whose single product rounds the same way on both sides), so fused or not,
// the f32 is the same, and f32 -> f16 rounds to nearest even on both.
// The values round to f16 at a relative 2^-11; weights outside the f16 range
// become inf, which real checkpoints do not have.
//
// Versions:
//   v1 walked a flat grid-stride loop over n_out * n_in / 8 chunks and paid a
//      64-bit division per chunk: 2.4 TB/s of read + write traffic against
//      4.2 for a plain copy (bench/results/2026-11-30-h200-prefill.md).
//   v2 (DequantKernel::Rows): grid x = 256-chunk tiles of a row, y = rows
//      (striding by gridDim.y past 65535); one thread decodes one 8-value
//      chunk with decode8<T> (kernels/quant_decode.cuh, shared with the GEMV)
//      straight from global memory and stores 8 halves with one 16-byte
//      store. 0.37-0.79 of the copy rate on the 8b / 70b shapes: each
//      thread has a few bytes of loads in flight (2-byte ones for the
//      210-byte Q6_K blocks), too few to cover the memory latency, and two
//      slow conversions per value (int -> f32, f32 -> f16).
//   v3 (DequantKernel::Tile, default): the weight is one flat array of whole
//      blocks (rows hold whole blocks and lie back to back), and so is the
//      f16 output; a CTA of 256 threads takes a tile of 8192 values: it
//      copies the tile's blocks (32 K-quant or 256 legacy blocks, 2.6-8.7 KB,
//      always a multiple of 16 bytes) into shared memory with 16-byte loads,
//      all issued before the first is used, then each thread decodes 4
//      chunks from shared memory and writes each with one 16-byte store;
//      consecutive threads write consecutive chunks. Q4_K and Q6_K (the
//      Q4_K_M mixture) have their own decoders: the 4 quants of a byte lane
//      are masked out of one word at once, become floats by a byte permute
//      into the mantissa of 2^23 and one subtraction (exact for integers
//      < 2^23, instead of the quarter-rate int -> float conversion), and
//      pairs round to f16 in one cvt.rn.f16x2.f32. Other types reuse
//      decode8<T> on the shared copy. Float types (F32 / F16 / BF16) run v2.
//      Measured on the H200: 0.84-0.94 of the copy rate on the large
//      weights (4096 x 14336 and up), 0.42-0.63 on the 4-8 MB ones, where
//      launch and tail dominate (bench/results/2026-11-30-h200-prefill-2.md).
//
// Also here: the f32 -> f16 conversion of the activations.
// defines: dequant_f16_launch, convert_f32_f16_launch
#include "kernels/dequant.cuh"

#include <algorithm>

#include "kernels/quant_decode.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

// ---- v2: rows ----

struct DequantParams {
  const uint8_t* w;
  uint4* out;  // 8 halves per element
  int64_t chunks_per_row;
  int64_t n_out;
  int64_t row_bytes;
};

template <GgmlType T>
__global__ void __launch_bounds__(256) dequant_f16_rows(DequantParams p) {
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

// ---- v3: tiles through shared memory ----

constexpr int kTileVals = 8192;
constexpr int kTileThreads = 256;
constexpr int kTileChunks = kTileVals / 8;  // 1024: 4 per thread

template <GgmlType T>
__host__ __device__ constexpr int block_bytes_of() {
  switch (T) {
    case GgmlType::Q4_0:
      return sizeof(BlockQ4_0);
    case GgmlType::Q4_1:
      return sizeof(BlockQ4_1);
    case GgmlType::Q5_0:
      return sizeof(BlockQ5_0);
    case GgmlType::Q5_1:
      return sizeof(BlockQ5_1);
    case GgmlType::Q8_0:
      return sizeof(BlockQ8_0);
    case GgmlType::Q2_K:
      return sizeof(BlockQ2_K);
    case GgmlType::Q3_K:
      return sizeof(BlockQ3_K);
    case GgmlType::Q4_K:
      return sizeof(BlockQ4_K);
    case GgmlType::Q5_K:
      return sizeof(BlockQ5_K);
    case GgmlType::Q6_K:
      return sizeof(BlockQ6_K);
    default:
      return 0;
  }
}
template <GgmlType T>
__host__ __device__ constexpr int block_elems_of() {
  switch (T) {
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return QK_K;
    default:
      return 32;  // Q4_0 ... Q8_0
  }
}
template <GgmlType T>
__host__ __device__ constexpr bool tile_kernel_for() {
  return block_bytes_of<T>() > 0;
}
// Bytes of one tile: a multiple of 16 for every type (the smallest block
// counts per tile are 32 and 256), so every tile starts 16-byte aligned.
template <GgmlType T>
__host__ __device__ constexpr int tile_bytes_of() {
  return kTileVals / block_elems_of<T>() * block_bytes_of<T>();
}

struct TileParams {
  const uint8_t* w;  // the weight's blocks, back to back, 16-byte aligned
  uint4* out;        // 8 halves per element
  int64_t n_bytes;   // bytes of w
  int64_t n_chunks;  // values / 8
};

__device__ __forceinline__ uint32_t half2_bits(float a, float b) {
  const __half2 h = __floats2half2_rn(a, b);  // a in the low half, as ggml's layout
  return *reinterpret_cast<const uint32_t*>(&h);
}
__device__ __forceinline__ uint4 pack8_f16(const float v[8]) {
  return make_uint4(half2_bits(v[0], v[1]), half2_bits(v[2], v[3]), half2_bits(v[4], v[5]),
                    half2_bits(v[6], v[7]));
}
// Byte i of x (an integer 0..255) as a float, minus `bias`: the byte permute
// builds the bits 0x4B0000xx = 2^23 + xx, and subtracting 2^23 + k leaves
// xx - k exactly.
__device__ __forceinline__ float byte_f32(uint32_t x, int i, float two23_plus_k) {
  return __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7540u | i)) - two23_plus_k;
}

template <GgmlType T>
__device__ __forceinline__ uint4 tile_chunk_f16(const uint8_t* raw, int j) {
  float v[8];
  decode8<T>(raw, j, v);
  return pack8_f16(v);
}
// Q4_K (layout at decode8<Q4_K>): x = dl * q - ml with dl = d * sc and
// ml = dmin * m computed as decode8 does.
template <>
__device__ __forceinline__ uint4 tile_chunk_f16<GgmlType::Q4_K>(const uint8_t* raw, int j) {
  const uint8_t* blk = raw + (j >> 5) * sizeof(BlockQ4_K);
  const int w = (j & 31) * 8;
  uint8_t sc, m;
  q4_k_scale_min(w >> 5, blk + 4, &sc, &m);
  const float dl = ld_f16(blk) * static_cast<float>(sc);
  const float ml = ld_f16(blk + 2) * static_cast<float>(m);
  // 8-byte aligned: blocks are 144 bytes from a 16-aligned tile.
  const uint2 q = *reinterpret_cast<const uint2*>(blk + 16 + 32 * (w >> 6) + (w & 31));
  const int sh = 4 * ((w >> 5) & 1);
  const uint32_t lo = (q.x >> sh) & 0x0F0F0F0Fu, hi = (q.y >> sh) & 0x0F0F0F0Fu;
  float v[8];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[i] = fmaf(dl, byte_f32(lo, i, 8388608.f), -ml);
    v[4 + i] = fmaf(dl, byte_f32(hi, i, 8388608.f), -ml);
  }
  return pack8_f16(v);
}
// Q6_K (layout at decode8<Q6_K>): 6-bit q = low nibble | 2 high bits << 4,
// x = dl * (q - 32); the 4 quants of a word are assembled lane-wise.
template <>
__device__ __forceinline__ uint4 tile_chunk_f16<GgmlType::Q6_K>(const uint8_t* raw, int j) {
  const uint8_t* blk = raw + (j >> 5) * sizeof(BlockQ6_K);
  const int w = (j & 31) * 8, h = w >> 7, vv = w & 127;
  const float dl = ld_f16(blk + 208) * static_cast<float>(static_cast<int8_t>(blk[192 + (w >> 4)]));
  uint32_t llo, lhi, hlo, hhi;
  ld8<2>(blk + 64 * h + (vv & 63), llo, lhi);  // 210-byte blocks: 2-byte aligned only
  ld8<2>(blk + 128 + 32 * h + (vv & 31), hlo, hhi);
  const int shl = 4 * (vv >> 6), shh = 2 * (vv >> 5);
  const uint32_t q0 = ((llo >> shl) & 0x0F0F0F0Fu) | (((hlo >> shh) & 0x03030303u) << 4);
  const uint32_t q1 = ((lhi >> shl) & 0x0F0F0F0Fu) | (((hhi >> shh) & 0x03030303u) << 4);
  float v[8];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[i] = dl * byte_f32(q0, i, 8388640.f);  // 2^23 + 32
    v[4 + i] = dl * byte_f32(q1, i, 8388640.f);
  }
  return pack8_f16(v);
}

template <GgmlType T>
__global__ void __launch_bounds__(kTileThreads) dequant_f16_tile(TileParams p) {
  constexpr int kBytes = tile_bytes_of<T>();
  static_assert(kBytes % 16 == 0, "a tile must be whole 16-byte vectors");
  constexpr int kVecs = kBytes / 16;
  constexpr int kPer = (kVecs + kTileThreads - 1) / kTileThreads;
  __shared__ __align__(16) uint8_t raw[kBytes];
  const int tid = threadIdx.x;
  const int64_t b0 = static_cast<int64_t>(blockIdx.x) * kBytes;
  const uint4* src = reinterpret_cast<const uint4*>(p.w + b0);
  uint4* dst = reinterpret_cast<uint4*>(raw);
  if (b0 + kBytes <= p.n_bytes) {
    // Every load before any store to shared memory: kPer 16-byte loads in
    // flight per thread. Streaming (evict-first): the weight is read once.
    uint4 r[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k)
      if (tid + k * kTileThreads < kVecs) r[k] = __ldcs(src + tid + k * kTileThreads);
#pragma unroll
    for (int k = 0; k < kPer; ++k)
      if (tid + k * kTileThreads < kVecs) dst[tid + k * kTileThreads] = r[k];
  } else {
    // The last tile: whole vectors, then the tail byte by byte (the
    // allocation may end inside a 16-byte vector).
    const int n = static_cast<int>(p.n_bytes - b0);
    for (int i = tid; i < n / 16; i += kTileThreads) dst[i] = src[i];
    for (int i = n / 16 * 16 + tid; i < n; i += kTileThreads) raw[i] = p.w[b0 + i];
  }
  __syncthreads();
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTileChunks;
#pragma unroll
  for (int k = 0; k < kTileChunks / kTileThreads; ++k) {
    const int j = tid + k * kTileThreads;
    if (c0 + j < p.n_chunks) p.out[c0 + j] = tile_chunk_f16<T>(raw, j);
  }
}

// ---- f32 -> f16 ----

__global__ void convert_f32_f16(const float* __restrict__ x, int64_t n, __half* __restrict__ out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = __float2half_rn(x[i]);
}
// n4 groups of 4 values; the n % 4 tail goes to the scalar kernel.
__global__ void convert_f32_f16_x4(const float4* __restrict__ x, int64_t n4,
                                   uint2* __restrict__ out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 a = x[i];
    out[i] = make_uint2(half2_bits(a.x, a.y), half2_bits(a.z, a.w));
  }
}

unsigned grid_for(int64_t n, int threads) {
  const int64_t want = (n + threads - 1) / threads;
  return static_cast<unsigned>(want < 132 * 16 ? (want > 0 ? want : 1) : 132 * 16);
}

}  // namespace

Status dequant_f16_launch(GgmlType type, const void* w, int64_t n_in, int64_t n_out, uint16_t* out,
                          cudaStream_t stream, DequantKernel kernel) {
  if (n_in <= 0 || n_out <= 0) return ok();
  const int64_t row_bytes = static_cast<int64_t>(ggml_row_bytes(type, n_in));
  return dispatch_decodable(type, "dequant_f16", [&]<GgmlType T>() -> Status {
    if constexpr (tile_kernel_for<T>()) {
      if (kernel == DequantKernel::Tile) {
        const TileParams p{static_cast<const uint8_t*>(w), reinterpret_cast<uint4*>(out),
                           row_bytes * n_out, n_in / 8 * n_out};
        const int64_t tiles = (p.n_chunks + kTileChunks - 1) / kTileChunks;
        if (tiles > 0x7fffffff)
          return make_error("dequant_f16: %lld tiles exceed the grid", (long long)tiles);
        dequant_f16_tile<T><<<static_cast<unsigned>(tiles), kTileThreads, 0, stream>>>(p);
        LS_CUDA_TRY(cudaGetLastError());
        return ok();
      }
    }
    const DequantParams p{static_cast<const uint8_t*>(w), reinterpret_cast<uint4*>(out), n_in / 8,
                          n_out, row_bytes};
    const dim3 grid(static_cast<unsigned>((p.chunks_per_row + 255) / 256),
                    static_cast<unsigned>(std::min<int64_t>(n_out, 65535)));
    dequant_f16_rows<T><<<grid, 256, 0, stream>>>(p);
    LS_CUDA_TRY(cudaGetLastError());
    return ok();
  });
}

Status convert_f32_f16_launch(const float* x, int64_t n, uint16_t* out, cudaStream_t stream,
                              bool vector) {
  if (n <= 0) return ok();
  int64_t done = 0;
  if (vector && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
      reinterpret_cast<uintptr_t>(out) % 8 == 0) {
    const int64_t n4 = n / 4;
    if (n4 > 0) {
      convert_f32_f16_x4<<<grid_for(n4, 256), 256, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                                n4, reinterpret_cast<uint2*>(out));
      LS_CUDA_TRY(cudaGetLastError());
    }
    done = n4 * 4;
  }
  if (done < n) {
    convert_f32_f16<<<grid_for(n - done, 256), 256, 0, stream>>>(
        x + done, n - done, reinterpret_cast<__half*>(out) + done);
    LS_CUDA_TRY(cudaGetLastError());
  }
  return ok();
}

}  // namespace ls
