// KV-cache store on the GPU: the batch's f32 key and value rows (after RoPE)
// go to the cache at (seq[t], pos[t]): an f16 cache rounds them to nearest
// even as the CPU cache (model/kv_cache.h) does; an f32 cache (--kv-type
// f32, the exact oracle) keeps them as they are.
// Layout: k, v (n_tok, n_embd_kv) f32; cache of one layer (n_seq, n_ctx,
// n_embd_kv) f16 or f32: a position's heads side by side (the CPU's KvCache keeps
// each head's positions together instead; rows move between the two through
// Backend::read_kv/write_kv, whole rows of n_embd_kv values).
// Grid: one block of 256 threads per token, threads over the row.
// Versions: v1 (f16 only), v2 (this: f16 or f32).
// defines: KvStoreParams, kv_store_cuda
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
  void* k_cache = nullptr;        // this layer's (n_seq, n_ctx, n_embd_kv), f16 or f32
  void* v_cache = nullptr;
  bool f32 = false;               // the caches hold float, else __half
  int64_t n_tok = 0;
  int32_t n_embd_kv = 0;
  int32_t n_ctx = 0;
};

Status kv_store_cuda(const KvStoreParams& p, cudaStream_t stream);

}  // namespace ls
