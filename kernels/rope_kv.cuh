// The decode step's RoPE and KV store in one kernel: q and k rotated in
// place (kernels/rope.cuh's convention) and the batch's k and v rows
// written to the layer's cache (kernels/kv_store.cuh's layout and rounding).
// The same bits as rope_f32_cuda on q, on k, then kv_store_cuda: the
// rotation is the shared rope_rotate (its cos and sin from the step's table,
// RopeCudaParams::cs, or computed: the same bits), the stores the same roundings.
// Why: three launches of a few microseconds each became one (a decode layer
// is launch- and latency-bound outside its GEMVs).
// Grid: one thread per (token, head of q or k, pair of head_dim) and one per
// (token, value of v), 256 a block. Programmatic dependent launch
// (kernels/pdl.cuh): everything it reads comes from the kernels before it.
// Versions: v1 (this).
// defines: RopeKvParams, rope_kv_store_cuda
#pragma once

#include <cuda_runtime.h>

#include "kernels/kv_store.cuh"
#include "kernels/rope.cuh"
#include "runtime/status.h"

namespace ls {

struct RopeKvParams {
  // The rotation (pos, freq_factors, n_tok, head_dim, n_rot, base, scale);
  // its x, n_head and row_stride are unused: q and k below.
  RopeCudaParams rope;
  float* q = nullptr;  // (n_tok, n_head * head_dim), rotated in place
  int32_t n_head = 0;
  // k, v, n_embd_kv (= n_head_kv * head_dim), pos, seq, caches, pages, f32,
  // n_ctx; k is rotated in place before it is stored.
  KvStoreParams kv;
};

Status rope_kv_store_cuda(const RopeKvParams& p, cudaStream_t stream);

}  // namespace ls
