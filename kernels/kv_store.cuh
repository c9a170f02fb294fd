// KV-cache store on the GPU: the batch's f32 key and value rows (after RoPE)
// go to the f16 cache at (seq[t], pos[t]), rounded to nearest even as the
// CPU cache (model/kv_cache.h) rounds them.
// Layout: k, v (n_tok, n_embd_kv) f32; cache of one layer (n_seq, n_ctx,
// n_embd_kv) f16: a position's heads side by side (the CPU's KvCache keeps
// each head's positions together instead; rows move between the two through
// Backend::read_kv/write_kv, whole rows of n_embd_kv values).
// Grid: one block of 256 threads per token, threads over the row.
// Versions: v1 (this).
// defines: KvStoreParams, kv_store_f16_cuda
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/status.h"

namespace ls {

struct KvStoreParams {
  const float* k = nullptr;       // (n_tok, n_embd_kv)
  const float* v = nullptr;       // (n_tok, n_embd_kv)
  const int32_t* pos = nullptr;   // (n_tok) device
  const int32_t* seq = nullptr;   // (n_tok) device
  __half* k_cache = nullptr;      // this layer's (n_seq, n_ctx, n_embd_kv)
  __half* v_cache = nullptr;
  int64_t n_tok = 0;
  int32_t n_embd_kv = 0;
  int32_t n_ctx = 0;
};

Status kv_store_f16_cuda(const KvStoreParams& p, cudaStream_t stream);

}  // namespace ls
