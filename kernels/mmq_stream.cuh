// The int8 GEMM with its weights streamed through shared memory (see
// kernels/mmq_stream.cu): the form mmq_launch (kernels/mmq_q8.cuh) takes
// where a weight's shape allows it.
// defines: kMmqStreamChunk, mmq_stream_prepare, mmq_stream_fits, mmq_stream_launch
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "io/ggml_type.h"
#include "kernels/mmq_q8.cuh"
#include "runtime/status.h"

namespace ls {

// Values of K a block copies in one stage: four 256-value units, one a warp.
inline constexpr int64_t kMmqStreamChunk = 1024;

// Sets what its launches need once a process (their shared-memory opt-in),
// so that none is set inside a CUDA graph capture: MatmulContext's
// reserve_gemv_x calls it.
Status mmq_stream_prepare();

// Whether the streamed kernel takes this call: a type mmq_supports, n_in a
// multiple of kMmqStreamChunk (so every stage is whole and each row's copy
// is aligned for cp.async), a 16-byte aligned weight base.
bool mmq_stream_fits(GgmlType type, const MmqParams& p);

// p as mmq_launch checked it; p.m_tiles 1 or 2 (p.k_split is not used).
Status mmq_stream_launch(GgmlType type, const MmqParams& p, cudaStream_t stream);

}  // namespace ls
