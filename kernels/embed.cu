// Embedding rows kernel: see embed.cuh. The per-element decoders below read
// one value of a block; the bit layouts are described at each struct in
// kernels/quant_blocks.h, and the index arithmetic is explained here.
#include <cuda_fp16.h>

#include "kernels/embed.cuh"
#include "kernels/quant_blocks.h"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

__device__ __forceinline__ float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float mad_nc(float a, float b, float c) {  // a*b + c, not fused
  return __fadd_rn(__fmul_rn(a, b), c);
}

// Element i of a row that starts at `row`.
template <GgmlType T>
__device__ float decode(const uint8_t* row, int64_t i);

template <>
__device__ float decode<GgmlType::F32>(const uint8_t* row, int64_t i) {
  return reinterpret_cast<const float*>(row)[i];
}
template <>
__device__ float decode<GgmlType::F16>(const uint8_t* row, int64_t i) {
  return h2f(reinterpret_cast<const uint16_t*>(row)[i]);
}
template <>
__device__ float decode<GgmlType::BF16>(const uint8_t* row, int64_t i) {
  return __uint_as_float(static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(row)[i]) << 16);
}
// Legacy 32-value blocks: value j < 16 is the low nibble of qs[j], value
// j >= 16 the high nibble of qs[j - 16]; the 5th bit of value j is bit j of qh.
template <>
__device__ float decode<GgmlType::Q4_0>(const uint8_t* row, int64_t i) {
  const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[i / 32];
  const int j = i % 32;
  const int q = j < 16 ? (b.qs[j] & 0xF) : (b.qs[j - 16] >> 4);
  return mul(static_cast<float>(q - 8), h2f(b.d));
}
template <>
__device__ float decode<GgmlType::Q4_1>(const uint8_t* row, int64_t i) {
  const BlockQ4_1& b = reinterpret_cast<const BlockQ4_1*>(row)[i / 32];
  const int j = i % 32;
  const int q = j < 16 ? (b.qs[j] & 0xF) : (b.qs[j - 16] >> 4);
  return mad_nc(static_cast<float>(q), h2f(b.d), h2f(b.m));
}
__device__ __forceinline__ int q5_bit(const uint8_t* qh, int j) {  // 0 or 16
  return ((qh[j / 8] >> (j % 8)) & 1) << 4;
}
template <>
__device__ float decode<GgmlType::Q5_0>(const uint8_t* row, int64_t i) {
  const BlockQ5_0& b = reinterpret_cast<const BlockQ5_0*>(row)[i / 32];
  const int j = i % 32;
  const int q = (j < 16 ? (b.qs[j] & 0xF) : (b.qs[j - 16] >> 4)) | q5_bit(b.qh, j);
  return mul(static_cast<float>(q - 16), h2f(b.d));
}
template <>
__device__ float decode<GgmlType::Q5_1>(const uint8_t* row, int64_t i) {
  const BlockQ5_1& b = reinterpret_cast<const BlockQ5_1*>(row)[i / 32];
  const int j = i % 32;
  const int q = (j < 16 ? (b.qs[j] & 0xF) : (b.qs[j - 16] >> 4)) | q5_bit(b.qh, j);
  return mad_nc(static_cast<float>(q), h2f(b.d), h2f(b.m));
}
template <>
__device__ float decode<GgmlType::Q8_0>(const uint8_t* row, int64_t i) {
  const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[i / 32];
  return mul(static_cast<float>(b.qs[i % 32]), h2f(b.d));
}
// Q2_K / Q3_K: value e of a super-block lies in half hf = e / 128; within it,
// r = e % 128 is in bit pair k = r / 32 of byte qs[32*hf + r % 32], and in
// sub-block 8*hf + 2k + (r % 32) / 16 (16 values each).
template <>
__device__ float decode<GgmlType::Q2_K>(const uint8_t* row, int64_t i) {
  const BlockQ2_K& b = reinterpret_cast<const BlockQ2_K*>(row)[i / QK_K];
  const int e = i % QK_K, hf = e / 128, r = e % 128, k = r / 32, l = r % 32;
  const int q = (b.qs[32 * hf + l] >> (2 * k)) & 3;
  const uint8_t sc = b.scales[8 * hf + 2 * k + l / 16];
  const float dl = mul(h2f(b.d), static_cast<float>(sc & 0xF));
  const float ml = mul(h2f(b.dmin), static_cast<float>(sc >> 4));
  return __fsub_rn(mul(dl, static_cast<float>(q)), ml);
}
// Q3_K: the high bit of value e (as above) is bit (4*hf + k) of hmask[l];
// clear means "subtract 4".
template <>
__device__ float decode<GgmlType::Q3_K>(const uint8_t* row, int64_t i) {
  const BlockQ3_K& b = reinterpret_cast<const BlockQ3_K*>(row)[i / QK_K];
  const int e = i % QK_K, hf = e / 128, r = e % 128, k = r / 32, l = r % 32;
  const int lo = (b.qs[32 * hf + l] >> (2 * k)) & 3;
  const int q = lo - ((b.hmask[l] >> (4 * hf + k)) & 1 ? 0 : 4);
  const float dl = mul(h2f(b.d), static_cast<float>(q3_k_scale(8 * hf + 2 * k + l / 16, b.scales)));
  return mul(dl, static_cast<float>(q));
}
// Q4_K / Q5_K: value e lies in 64-value chunk c = e / 64; r = e % 64 < 32 is
// the low nibble of qs[32c + r] (sub-block 2c), else the high nibble of
// qs[32c + r - 32] (sub-block 2c + 1). Q5_K's 5th bit is bit (sub-block) of qh[r % 32].
template <>
__device__ float decode<GgmlType::Q4_K>(const uint8_t* row, int64_t i) {
  const BlockQ4_K& b = reinterpret_cast<const BlockQ4_K*>(row)[i / QK_K];
  const int e = i % QK_K, c = e / 64, r = e % 64, sub = 2 * c + r / 32;
  const uint8_t byte = b.qs[32 * c + r % 32];
  const int q = r < 32 ? (byte & 0xF) : (byte >> 4);
  uint8_t sc, m;
  q4_k_scale_min(sub, b.scales, &sc, &m);
  const float d1 = mul(h2f(b.d), static_cast<float>(sc)), m1 = mul(h2f(b.dmin), static_cast<float>(m));
  return __fsub_rn(mul(d1, static_cast<float>(q)), m1);
}
template <>
__device__ float decode<GgmlType::Q5_K>(const uint8_t* row, int64_t i) {
  const BlockQ5_K& b = reinterpret_cast<const BlockQ5_K*>(row)[i / QK_K];
  const int e = i % QK_K, c = e / 64, r = e % 64, sub = 2 * c + r / 32;
  const uint8_t byte = b.qs[32 * c + r % 32];
  const int q = (r < 32 ? (byte & 0xF) : (byte >> 4)) + (((b.qh[r % 32] >> sub) & 1) ? 16 : 0);
  uint8_t sc, m;
  q4_k_scale_min(sub, b.scales, &sc, &m);
  const float d1 = mul(h2f(b.d), static_cast<float>(sc)), m1 = mul(h2f(b.dmin), static_cast<float>(m));
  return __fsub_rn(mul(d1, static_cast<float>(q)), m1);
}
// Q6_K: value e lies in half hf = e / 128; r = e % 128, quarter g = r / 32,
// l = r % 32. Low nibble: ql[64hf + l + 32*(g & 1)], low half for g < 2,
// high half for g >= 2; high 2 bits: bit pair g of qh[32hf + l]. Scale of
// sub-block 8hf + 2g + l / 16. x = d * sc * (q - 32), evaluated as (d*sc)*q.
template <>
__device__ float decode<GgmlType::Q6_K>(const uint8_t* row, int64_t i) {
  const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row)[i / QK_K];
  const int e = i % QK_K, hf = e / 128, r = e % 128, g = r / 32, l = r % 32;
  const uint8_t lb = b.ql[64 * hf + l + 32 * (g & 1)];
  const int lo = g < 2 ? (lb & 0xF) : (lb >> 4);
  const int hi = (b.qh[32 * hf + l] >> (2 * g)) & 3;
  const int q = (lo | (hi << 4)) - 32;
  const float dsc = mul(h2f(b.d), static_cast<float>(b.scales[8 * hf + 2 * g + l / 16]));
  return mul(dsc, static_cast<float>(q));
}

template <GgmlType T>
__global__ void embed_rows_kernel(EmbedParams p) {
  const int64_t t = blockIdx.x;
  const uint8_t* row = static_cast<const uint8_t*>(p.table) + p.tokens[t] * p.row_bytes;
  float* out = p.out + t * p.n_embd;
  for (int64_t i = threadIdx.x; i < p.n_embd; i += blockDim.x) out[i] = decode<T>(row, i);
}

template <GgmlType T>
Status launch(const EmbedParams& p, cudaStream_t s) {
  embed_rows_kernel<T><<<static_cast<unsigned>(p.n_tok), 256, 0, s>>>(p);
  LS_CUDA_TRY(cudaGetLastError());
  return ok();
}

}  // namespace

bool embed_type_supported(GgmlType t) {
  switch (t) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q4_0:
    case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q8_0:
    case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::Q4_K: case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

// The one dispatch switch over the table's type.
Status embed_rows_cuda(const EmbedParams& p, cudaStream_t s) {
  if (p.n_tok == 0) return ok();
  switch (p.type) {
    case GgmlType::F32: return launch<GgmlType::F32>(p, s);
    case GgmlType::F16: return launch<GgmlType::F16>(p, s);
    case GgmlType::BF16: return launch<GgmlType::BF16>(p, s);
    case GgmlType::Q4_0: return launch<GgmlType::Q4_0>(p, s);
    case GgmlType::Q4_1: return launch<GgmlType::Q4_1>(p, s);
    case GgmlType::Q5_0: return launch<GgmlType::Q5_0>(p, s);
    case GgmlType::Q5_1: return launch<GgmlType::Q5_1>(p, s);
    case GgmlType::Q8_0: return launch<GgmlType::Q8_0>(p, s);
    case GgmlType::Q2_K: return launch<GgmlType::Q2_K>(p, s);
    case GgmlType::Q3_K: return launch<GgmlType::Q3_K>(p, s);
    case GgmlType::Q4_K: return launch<GgmlType::Q4_K>(p, s);
    case GgmlType::Q5_K: return launch<GgmlType::Q5_K>(p, s);
    case GgmlType::Q6_K: return launch<GgmlType::Q6_K>(p, s);
    default:
      return make_error("embedding: token_embd type %s has no GPU decoder", ggml_type_name(p.type));
  }
}

}  // namespace ls
