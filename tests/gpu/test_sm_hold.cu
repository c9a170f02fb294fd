// SmHold (tests/bench/sm_hold.cuh), with which `ls_bench_matmul --graph
// --hold-sms N` makes an H100's other SMs each bring an H200's share of the
// bandwidth: while it holds n SMs, no block of another stream runs on them;
// once it lets go, blocks run there again.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include "tests/bench/sm_hold.cuh"

TEST_CASE("sm_hold: held SMs run no other block until they are let go") {
  cudaDeviceProp prop;
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  const int sms = prop.multiProcessorCount, n = sms / 4;
  REQUIRE(n >= 1);
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  {
    SmHold hold(n, s);
    for (int round = 0; round < 2; ++round) {  // a second hold after the first let go
      hold.start(false);
      const SmHoldCheck c = hold.check();
      CHECK(c.held_distinct == n);
      CHECK(c.on_held == 0);
      CHECK(c.probe_sms > 0);
      CHECK(c.probe_sms <= sms - n);
      hold.stop();
      // The same SMs, let go: the probe's 8 blocks an SM land on some of them.
      CHECK(hold.check().on_held > 0);
    }
  }
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}
