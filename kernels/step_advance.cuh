// The next decode step of greedy sequences made on the device: each entry's
// token becomes the argmax its row just gave and its position the next one,
// so a step can start before the host has seen the token (the CUDA
// backend's chained steps: CudaBackend::begin_chained).
// defines: step_advance_cuda
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/status.h"

namespace ls {

// tok[i] = best[i], pos[i] += 1 for i < n (device arrays; tok may be best).
Status step_advance_cuda(int32_t* tok, int32_t* pos, const int32_t* best, int64_t n,
                         cudaStream_t stream);

}  // namespace ls
