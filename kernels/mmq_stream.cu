// mmq_stream: y = x · Wᵀ on int8 tensor cores with W streamed through a
// ring of shared-memory stages by cp.async (kernels/mmq_stream.cuh).
//
// Why: the register-prefetch kernel (kernels/mmq_q8.cu) read a 70b layer's
// weights at 28 % of the device-memory bandwidth at 32 tokens and at 40 %
// at 8 (ncu and ls_bench_matmul, H100, session 39): each lane held the
// current and the next block of its rows in registers (about 100 of
// them), so an SM ran few warps, with one block of K in flight each, and
// the scattered 8-byte loads of that layout. Here the four warps of a
// block copy each stage together, 16 bytes a thread and each row's bytes
// of the stage one contiguous run, while they compute on the stages
// before it: S - 1 stages in flight a block (S = 3; 2 as an A/B), registers
// only for the products, and several blocks an SM. Up to two n-tiles a
// stage also holds the chunk's x (ncu, call 4: 39 % of the first version's
// stalls were x's loads from L2).
//
// Mapping. A block owns 16 · MT rows (MT m-tiles of 16) × all the tokens
// (NT n-tiles of 8) × its part of K: the gridDim.y blocks of a row tile
// (one cluster, stream_k_split) split the chunks. K goes in chunks of
// kMmqStreamChunk values (one stage): four units of 256 values (a K-quant
// block, or eight Q8_0 blocks), warp w taking unit w of each chunk, for all
// the block's rows, with the lane layout and x-block step of
// kernels/mmq_blocks.cuh. The four warps' sums meet in shared memory and
// are added in warp order, then the parts' sums in the first block's, in
// part order, so the result does not depend on timing.
//
// Shared-memory rows are padded (kStride) so the eight rows a warp's lanes
// read at once fall in distinct banks.
// defines: mmq_stream_prepare, mmq_stream_fits, mmq_stream_launch
#include "kernels/mmq_stream.cuh"

#include <cooperative_groups.h>

#include <cstdlib>
#include <utility>

#include "kernels/cp_async.cuh"
#include "kernels/mmq_blocks.cuh"
#include "runtime/cuda_util.cuh"

namespace ls {
namespace {

using namespace mmq;

constexpr int kWarps = 4, kThreads = 32 * kWarps, kUnits = 4;
static_assert(kUnits * 256 == kMmqStreamChunk, "a chunk is a unit of 256 values a warp");

// Per type: the bytes of a unit of 256 values, the copy width (the unit
// run's alignment), and the padded row stride in shared memory (8-byte
// loads: a stride of 96 mod 128 puts the four rows of a half-warp in
// distinct banks; Q6_K's 4-byte loads: 80 mod 128, its eight rows).
template <GgmlType T>
struct StreamLayout;
template <>
struct StreamLayout<GgmlType::Q4_K> {
  static constexpr int kUnit = 144, kCp = 16, kStride = 608;
};
template <>
struct StreamLayout<GgmlType::Q5_K> {
  static constexpr int kUnit = 176, kCp = 16, kStride = 736;
};
template <>
struct StreamLayout<GgmlType::Q6_K> {
  static constexpr int kUnit = 210, kCp = 8, kStride = 848;
};
template <>
struct StreamLayout<GgmlType::Q8_0> {
  static constexpr int kUnit = 272, kCp = 16, kStride = 1120;
};

// Up to two n-tiles (16 tokens) a stage also holds the chunk's x, so the
// products wait on shared memory, not on x's loads from L2 (call 4 of
// session 39: 39 % of a warp's stalls were those loads, L1 hit 17 %).
template <int NT>
__host__ __device__ constexpr bool stages_x() {
  return NT <= 2;
}
// x of a chunk in a stage: 32 x-blocks × 8 NT token slots of 32 quants,
// then their {d, Σq} pairs.
template <int NT>
__host__ __device__ constexpr int stage_x_bytes() {
  return stages_x<NT>() ? 32 * 8 * NT * (kActQ8Block + static_cast<int>(sizeof(float2))) : 0;
}
template <GgmlType T, int MT, int NT>
__host__ __device__ constexpr int stage_bytes() {
  return 16 * MT * StreamLayout<T>::kStride + stage_x_bytes<NT>();
}

// S stages in the ring: two where x is staged (more blocks an SM, one
// stage in flight each; LS_MMQ_STAGES=3 for A/B), else three.
template <GgmlType T, int MT, int NT, int S>
__global__ void __launch_bounds__(kThreads) mmq_stream_kernel(MmqParams p) {
  constexpr int kStages = S;
  using M = Mmq<T>;
  using L = StreamLayout<T>;
  constexpr int R = 16 * MT, kStage = stage_bytes<T, MT, NT>(), kLd = 8 * NT;
  constexpr int kRowCopies = kUnits * L::kUnit / L::kCp, kCopies = R * kRowCopies;
  constexpr int kBlocksPerUnit = 256 / M::kValues;
  static_assert(
      kUnits * L::kUnit % L::kCp == 0 && L::kStride % 16 == 0 && L::kStride >= kUnits * L::kUnit,
      "a stage's row is whole copies within its padded stride");
  static_assert((kWarps + 1) * MT * NT * 4 * 32 * sizeof(float) <= kStages * kStage,
                "the warps' sums and the block's fit in the ring");
  extern __shared__ __align__(16) uint8_t ring[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * R;
  // Blocks blockIdx.y = 0 .. gridDim.y - 1 (one cluster) split the chunks
  // of K, so a matrix of few row tiles still gives every SM its warps.
  const int ks = static_cast<int>(gridDim.y), part = static_cast<int>(blockIdx.y);
  const int64_t n_chunks = p.n_in / kMmqStreamChunk;
  const int64_t c0 = n_chunks * part / ks, c1 = n_chunks * (part + 1) / ks;
  constexpr int64_t kChunkBytes = kUnits * L::kUnit;

  // Stage i % kStages gets chunk c0 + i of the block's rows (rows past n_out
  // copy the last row: their sums are not written), and its x where the
  // stage holds x; a commit group either way, so the count of groups in
  // flight stays the loop's.
  auto issue = [&](int64_t i) {
    const int64_t ch = c0 + i;
    if (ch < c1) {
      uint8_t* const dst = ring + (i % kStages) * kStage;
      const uint8_t* const src = p.w + ch * kChunkBytes;
      for (int j = tid; j < kCopies; j += kThreads) {
        const int row = j / kRowCopies, off = (j - row * kRowCopies) * L::kCp;
        const uint8_t* const from = src + min(r0 + row, p.n_out - 1) * p.row_bytes + off;
        if constexpr (L::kCp == 16)
          cp_async16(dst + row * L::kStride + off, from);
        else
          cp_async8(dst + row * L::kStride + off, from);
      }
      if constexpr (stages_x<NT>()) {
        // The chunk's 32 x-blocks are consecutive in x's block-major layout.
        constexpr int kQ = 32 * kLd * kActQ8Block, kDs = 32 * kLd * sizeof(float2);
        uint8_t* const xdst = dst + R * L::kStride;
        const uint8_t* const q = reinterpret_cast<const uint8_t*>(p.x.q) + ch * kQ;
        const uint8_t* const ds = reinterpret_cast<const uint8_t*>(p.x.ds) + ch * kDs;
        for (int j = tid; j < kQ / 16; j += kThreads) cp_async16(xdst + 16 * j, q + 16 * j);
        for (int j = tid; j < kDs / 16; j += kThreads) cp_async16(xdst + kQ + 16 * j, ds + 16 * j);
      }
    }
    cp_async_commit();
  };

  // x block-major (kernels/quantize_act.cuh), ld token slots a block, as
  // the register kernel reads it (kernels/mmq_q8.cu).
  const int64_t ld = mmq_x_ld(p.n_tok);
  float acc[MT][NT][4];
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
      acc[m][nt][0] = acc[m][nt][1] = acc[m][nt][2] = acc[m][nt][3] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) issue(s);
  for (int64_t i = 0; c0 + i < c1; ++i) {
    cp_async_wait<kStages - 2>();  // this thread's copies of stage i are in
    // Everyone's are; and everyone is done with stage i - 1, which the next
    // issue refills.
    __syncthreads();
    issue(i + kStages - 1);
    const int64_t ch = c0 + i;
    const uint8_t* const stage = ring + (i % kStages) * kStage;
    const uint8_t* const unit = stage + warp * L::kUnit;
#pragma unroll
    for (int bb = 0; bb < kBlocksPerUnit; ++bb) {
      typename M::Blk cur[MT][2];
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          M::load(unit + (16 * m + 8 * h + g) * L::kStride + bb * M::kBytes, c, cur[m][h]);
      const int xl = (warp * kBlocksPerUnit + bb) * M::kSubs;  // the stage's first x-block
#pragma unroll
      for (int s = 0; s < M::kSubs; ++s) {
        if constexpr (stages_x<NT>()) {
          const uint8_t* const sx = stage + R * L::kStride;
          const int8_t* const xq =
              reinterpret_cast<const int8_t*>(sx) + ((xl + s) * kLd + g) * kActQ8Block;
          const float4* const xd = reinterpret_cast<const float4*>(
              reinterpret_cast<const float2*>(sx + 32 * kLd * kActQ8Block) + (xl + s) * kLd +
              2 * c);
          mmq_xblock<T, MT, NT>(cur, s, xq, xd, c, acc);
        } else {
          const int64_t xb = ch * 32 + xl + s;
          const int8_t* const xq = p.x.q + (xb * ld + g) * kActQ8Block;
          const float4* const xd = reinterpret_cast<const float4*>(p.x.ds + xb * ld + 2 * c);
          mmq_xblock<T, MT, NT>(cur, s, xq, xd, c, acc);
        }
      }
    }
  }

  // The warps' sums, added in warp order; warp w adds and writes the
  // entries e with e % kWarps == w.
  cp_async_wait<0>();
  __syncthreads();  // the ring is free
  constexpr int kEntries = MT * NT * 4;
  float(*red)[kEntries][32] = reinterpret_cast<float(*)[kEntries][32]>(ring);
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) red[warp][(m * NT + nt) * 4 + i][lane] = acc[m][nt][i];
  __syncthreads();
  float(*sum)[32] = reinterpret_cast<float(*)[32]>(&red[kWarps][0][0]);  // the block's
  for (int e = warp; e < kEntries; e += kWarps) {
    float v = red[0][e][lane];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) v += red[w][e][lane];
    sum[e][lane] = v;
  }
  // The cluster's blocks (the parts of K) meet in the first one's shared
  // memory view of theirs, added in part order; the others stay until it
  // has read them.
  namespace cg = cooperative_groups;
  if (ks > 1)
    cg::this_cluster().sync();
  else
    __syncwarp();
  if (part == 0)
    for (int e = warp; e < kEntries; e += kWarps) {
      const int m = e / (NT * 4), nt = (e / 4) % NT, i = e % 4;
      const int t = 8 * nt + 2 * c + (i & 1);
      const int64_t r = r0 + 16 * m + g + 8 * (i >> 1);
      float v = sum[e][lane];
      for (int k = 1; k < ks; ++k) v += cg::this_cluster().map_shared_rank(&sum[e][lane], k)[0];
      if (t < p.n_tok && r < p.n_out) p.y[static_cast<int64_t>(t) * p.n_out + r] = v;
    }
  if (ks > 1) cg::this_cluster().sync();
}

// The parts K is split into (a cluster of blocks a row tile): the fewest of
// 1, 2, 4, 8 that give the SMs three blocks each, with at least a chunk a
// part (LS_MMQ_KS=1..8 from the environment, for A/B).
int stream_k_split(int64_t tiles, int64_t n_chunks) {
  static const int env = [] {
    const char* e = std::getenv("LS_MMQ_KS");
    const int v = e ? std::atoi(e) : 0;
    return v == 1 || v == 2 || v == 4 || v == 8 ? v : 0;
  }();
  int ks = env;
  if (ks == 0) {
    ks = 1;
    while (ks < 8 && tiles * ks < 3 * cuda_sm_count()) ks *= 2;
  }
  while (ks > 1 && ks > n_chunks) ks /= 2;
  return ks;
}

template <GgmlType T, int MT, int NT, int S>
constexpr size_t kernel_smem() {
  return static_cast<size_t>(S) * stage_bytes<T, MT, NT>();
}

// The kernel's opt-in past the 48 KiB of shared memory a launch may ask
// without one; once a process (mmq_stream_prepare sets them all before a
// CUDA graph capture, where the first launch may fall).
template <GgmlType T, int MT, int NT, int S>
cudaError_t smem_attr() {
  static const cudaError_t e = cudaFuncSetAttribute(mmq_stream_kernel<T, MT, NT, S>,
                                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                    static_cast<int>(kernel_smem<T, MT, NT, S>()));
  return e;
}

// Both stage counts where x is staged, else three.
template <GgmlType T, int MT, int NT>
cudaError_t smem_attr_nt() {
  const cudaError_t e = smem_attr<T, MT, NT, 3>();
  if constexpr (stages_x<NT>())
    if (e == cudaSuccess) return smem_attr<T, MT, NT, 2>();
  return e;
}

template <GgmlType T, int MT, int... NT>
cudaError_t smem_attrs(std::integer_sequence<int, NT...>) {
  cudaError_t e = cudaSuccess;
  ((e = e == cudaSuccess ? smem_attr_nt<T, MT, NT + 1>() : e), ...);
  return e;
}

template <GgmlType T>
cudaError_t smem_attrs_type() {
  const cudaError_t e = smem_attrs<T, 1>(std::make_integer_sequence<int, kMmqMaxTok / 8>{});
  return e == cudaSuccess ? smem_attrs<T, 2>(std::make_integer_sequence<int, kMmqMaxTok / 8>{}) : e;
}

// The stages where x is staged: two (session 40, call 1, H100, --widths
// 70b at 2-16 tokens: Q4_K gate/up 62 against 68 us, down 66 against 69,
// Q6_K 110-112 against 118-125, at 16 tokens 87-95 against 99-100), or
// LS_MMQ_STAGES=3 (A/B).
int stream_stages() {
  static const int v = [] {
    const char* e = std::getenv("LS_MMQ_STAGES");
    return e && std::atoi(e) == 3 ? 3 : 2;
  }();
  return v;
}

template <GgmlType T, int MT, int NT, int S>
Status launch_s(const MmqParams& p, cudaStream_t stream) {
  constexpr size_t smem = kernel_smem<T, MT, NT, S>();
  const cudaError_t attr = smem_attr<T, MT, NT, S>();
  LS_CUDA_TRY(attr);
  const int64_t tiles = (p.n_out + 16 * MT - 1) / (16 * MT);
  const int ks = stream_k_split(tiles, p.n_in / kMmqStreamChunk);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(ks), 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = 1;
  cluster[0].val.clusterDim.y = static_cast<unsigned>(ks);
  cluster[0].val.clusterDim.z = 1;
  cfg.attrs = cluster;
  cfg.numAttrs = 1;
  LS_CUDA_TRY(cudaLaunchKernelEx(&cfg, mmq_stream_kernel<T, MT, NT, S>, p));
  return ok();
}

template <GgmlType T, int MT, int NT>
Status launch_nt(const MmqParams& p, cudaStream_t stream) {
  if constexpr (stages_x<NT>())
    if (stream_stages() == 2) return launch_s<T, MT, NT, 2>(p, stream);
  return launch_s<T, MT, NT, 3>(p, stream);
}

template <GgmlType T>
Status launch_type(const MmqParams& p, cudaStream_t stream) {
  return mmq_dispatch(p.m_tiles, p.n_tok,
                      [&]<int MT, int NT>() { return launch_nt<T, MT, NT>(p, stream); });
}

}  // namespace

Status mmq_stream_prepare() {
  static const cudaError_t e = [] {
    cudaError_t r = smem_attrs_type<GgmlType::Q4_K>();
    if (r == cudaSuccess) r = smem_attrs_type<GgmlType::Q5_K>();
    if (r == cudaSuccess) r = smem_attrs_type<GgmlType::Q6_K>();
    if (r == cudaSuccess) r = smem_attrs_type<GgmlType::Q8_0>();
    return r;
  }();
  LS_CUDA_TRY(e);
  return ok();
}

bool mmq_stream_fits(GgmlType type, const MmqParams& p) {
  return mmq_supports(type) && p.n_in > 0 && p.n_in % kMmqStreamChunk == 0 &&
         (reinterpret_cast<uintptr_t>(p.w) & 15) == 0;
}

Status mmq_stream_launch(GgmlType type, const MmqParams& p, cudaStream_t stream) {
  if (!mmq_stream_fits(type, p))
    return make_error("mmq: the streamed kernel takes n_in a multiple of %lld of %s (n_in %lld)",
                      (long long)kMmqStreamChunk, ggml_type_name(type), (long long)p.n_in);
  return mmq_dispatch_type(type, [&]<GgmlType T>() { return launch_type<T>(p, stream); });
}

}  // namespace ls
