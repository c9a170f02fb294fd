// SmHold: keeps n of the GPU's SMs busy with blocks that take all of an SM's
// shared memory and wait, so that the kernels timed meanwhile run on the
// others. Why: a kernel that reads at the bandwidth on all of an H100's SMs
// may do so because each SM keeps enough bytes in flight for the H100's
// bandwidth; the H200 needs about 1.4x as many bytes in flight an SM (the
// same 132 SMs, 4.2 against 3.0 TB/s). On an H100 with 38 SMs held, each
// of the other 94 must bring what an H200's SM must: a kernel that loses
// bandwidth in proportion to the SMs held is bound by its bytes in flight
// an SM, and a form that keeps its bandwidth there is the one to try on an
// H200. Only the benches use it (ls_bench_matmul --hold-sms).
// defines: SmHold, SmHoldCheck
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "tests/bench/bench_util.cuh"

namespace sm_hold_detail {

__device__ __forceinline__ int smid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return static_cast<int>(r);
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One block an SM (its dynamic shared memory is all the SM has): reports
// its SM, then waits for *stop, or limit_ns at most, so a bench that never
// stops it cannot hang the GPU.
static __global__ void hold_kernel(const volatile int* stop, volatile int* sm_of,
                                   unsigned long long limit_ns) {
  if (threadIdx.x != 0) return;
  sm_of[blockIdx.x] = smid();
  __threadfence_system();
  const unsigned long long t0 = global_ns();
  while (*stop == 0 && global_ns() - t0 < limit_ns) __nanosleep(2000);
}

static __global__ void where_kernel(int* sm_of) {
  if (threadIdx.x == 0) sm_of[blockIdx.x] = smid();
}

}  // namespace sm_hold_detail

// Where a grid on the work stream ran while SMs were held (SmHold::check).
struct SmHoldCheck {
  int held_distinct = 0;  // distinct SMs the holding blocks run on
  int probe_blocks = 0;   // blocks of the probe grid
  int probe_sms = 0;      // distinct SMs they ran on
  int on_held = 0;        // of them on a held SM (must be 0)
};

class SmHold {
 public:
  // n = 0: start and stop do nothing.
  SmHold(int n, cudaStream_t work) : n_(n), work_(work) {
    if (n_ == 0) return;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    sms_ = prop.multiProcessorCount;
    if (n_ < 0 || n_ >= sms_) {
      std::fprintf(stderr, "--hold-sms %d: want 0 to %d (the GPU has %d SMs)\n", n_, sms_ - 1,
                   sms_);
      std::exit(2);
    }
    smem_ = prop.sharedMemPerBlockOptin;
    CK(cudaFuncSetAttribute(sm_hold_detail::hold_kernel,
                            cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_)));
    CK(cudaStreamCreateWithFlags(&hold_, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&ctl_, cudaStreamNonBlocking));
    CK(cudaMalloc(&stop_, sizeof(int)));
    CK(cudaHostAlloc(&sm_of_, n_ * sizeof(int), cudaHostAllocMapped));
    CK(cudaHostAlloc(&one_, sizeof(int), cudaHostAllocDefault));
    *one_ = 1;
    // check()'s buffer, allocated here: cudaFree may wait for the whole
    // device, the holding blocks included.
    CK(cudaMalloc(&probe_, 8 * sms_ * sizeof(int)));
    std::printf("holding %d of %d SMs: one block each with all its shared memory (%zu KB)\n",
                n_, sms_, smem_ >> 10);
  }
  ~SmHold() {
    if (n_ == 0) return;
    cudaFree(stop_);
    cudaFree(probe_);
    cudaFreeHost(sm_of_);
    cudaFreeHost(one_);
    cudaStreamDestroy(hold_);
    cudaStreamDestroy(ctl_);
  }
  SmHold(const SmHold&) = delete;
  SmHold& operator=(const SmHold&) = delete;

  // Holds the SMs: returns once every holding block runs. The first time
  // (unless verify is false), checks that the work stream's blocks land
  // on the other SMs only, and exits if not.
  void start(bool verify = true) {
    if (n_ == 0) return;
    CK(cudaStreamSynchronize(work_));
    for (int i = 0; i < n_; ++i) reinterpret_cast<volatile int*>(sm_of_)[i] = -1;
    CK(cudaMemsetAsync(stop_, 0, sizeof(int), hold_));
    int* dev_sm_of;
    CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_sm_of), sm_of_, 0));
    sm_hold_detail::hold_kernel<<<n_, 32, smem_, hold_>>>(stop_, dev_sm_of, 10'000'000'000ull);
    CK(cudaGetLastError());
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n_;) {
      if (reinterpret_cast<volatile int*>(sm_of_)[i] >= 0) {
        ++i;
        continue;
      }
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(2)) {
        std::fprintf(stderr, "SmHold: only %d of %d holding blocks started in 2 s\n", i, n_);
        std::exit(1);
      }
      std::this_thread::yield();
    }
    if (verify && !checked_) {
      const SmHoldCheck c = check();
      if (c.held_distinct != n_ || c.on_held > 0) {
        std::fprintf(stderr,
                     "SmHold: %d distinct SMs held of %d asked; %d of %d probe blocks ran on a "
                     "held SM\n",
                     c.held_distinct, n_, c.on_held, c.probe_blocks);
        std::exit(1);
      }
      std::printf("held SMs checked: %d probe blocks ran on %d SMs, none of the %d held\n",
                  c.probe_blocks, c.probe_sms, n_);
      checked_ = true;
    }
  }

  void stop() {
    if (n_ == 0) return;
    CK(cudaMemcpyAsync(stop_, one_, sizeof(int), cudaMemcpyHostToDevice, ctl_));
    CK(cudaStreamSynchronize(hold_));
  }

  // While held: 8 blocks an SM's worth of blocks on the work stream, and
  // the SMs they and the holding blocks ran on.
  SmHoldCheck check() {
    SmHoldCheck c;
    if (n_ == 0) return c;
    std::set<int> held;
    for (int i = 0; i < n_; ++i) held.insert(sm_of_[i]);
    c.held_distinct = static_cast<int>(held.size());
    c.probe_blocks = 8 * sms_;
    sm_hold_detail::where_kernel<<<c.probe_blocks, 32, 0, work_>>>(probe_);
    CK(cudaGetLastError());
    std::vector<int> h(c.probe_blocks);
    CK(cudaMemcpyAsync(h.data(), probe_, h.size() * sizeof(int), cudaMemcpyDeviceToHost, work_));
    CK(cudaStreamSynchronize(work_));
    std::set<int> ran;
    for (int sm : h) {
      ran.insert(sm);
      c.on_held += held.count(sm) != 0;
    }
    c.probe_sms = static_cast<int>(ran.size());
    return c;
  }

 private:
  int n_ = 0, sms_ = 0;
  size_t smem_ = 0;
  cudaStream_t work_ = nullptr, hold_ = nullptr, ctl_ = nullptr;
  int* stop_ = nullptr;
  int* probe_ = nullptr;
  int* sm_of_ = nullptr;
  int* one_ = nullptr;
  bool checked_ = false;
};
