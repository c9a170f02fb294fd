// Where a CPU-tier layer's time goes, by operation and batch width: with
// LS_CPU_OP_TIMES=1 in the environment the CPU backend stamps the wall clock
// between its operations (norms, the second with the residual add before
// it, each matmul call, RoPE and the KV store, attention, the last residual
// add, SwiGLU) and prints, when it is destroyed, a
// table per width of the milliseconds a layer spends in each, beside the
// sum. Off (the default) it costs a branch an operation. A developer's tool
// for the engine's CPU tier, where the kernel benches (ls_bench_cpu_matmul,
// ls_bench_cpu_attention) see one operation alone and without the copy
// engine reading host memory beside it.
// defines: CpuOpTimes, CpuOp
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>

#include "runtime/env.h"

namespace ls {

enum class CpuOp : int { Norm, Qkv, RopeKv, Attention, Wo, Add, GateUp, Swiglu, Down, kCount };

class CpuOpTimes {
 public:
  static constexpr int kWidths = 65;  // widths 1..64 (wider counted at 64)
  CpuOpTimes() : on_(env_int("LS_CPU_OP_TIMES", 0, 0) != 0) {}
  CpuOpTimes(const CpuOpTimes&) = delete;
  CpuOpTimes& operator=(const CpuOpTimes&) = delete;
  ~CpuOpTimes() { print(stderr); }
  bool on() const { return on_; }
  // A layer of width n starts now.
  void start(int64_t n) {
    if (!on_) return;
    width_ = static_cast<int>(n < 1 ? 1 : n >= kWidths ? kWidths - 1 : n);
    ++layers_[width_];
    t_ = Clock::now();
  }
  // The operation that ran since the last stamp.
  void lap(CpuOp op) {
    if (!on_) return;
    const Clock::time_point now = Clock::now();
    ns_[width_][static_cast<int>(op)] +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - t_).count();
    t_ = now;
  }
  // Forget what was counted (nothing is printed for it).
  void clear() {
    layers_ = {};
    ns_ = {};
  }
  void print(std::FILE* f) const {
    if (!on_) return;
    static const char* const kNames[] = {"norm", "q/k/v", "rope+kv", "attention", "wo",
                                         "add",  "gate/up", "swiglu", "down"};
    constexpr int kOps = static_cast<int>(CpuOp::kCount);
    for (int w = 1; w < kWidths; ++w) {
      if (layers_[w] == 0) continue;
      std::fprintf(f, "cpu op times (LS_CPU_OP_TIMES), width %d, %lld layers, ms a layer:", w,
                   static_cast<long long>(layers_[w]));
      double sum = 0;
      for (int o = 0; o < kOps; ++o) {
        const double ms = static_cast<double>(ns_[w][o]) / 1e6 / static_cast<double>(layers_[w]);
        sum += ms;
        std::fprintf(f, " %s %.3f", kNames[o], ms);
      }
      std::fprintf(f, " | sum %.3f\n", sum);
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool on_;
  int width_ = 1;
  Clock::time_point t_{};
  std::array<int64_t, kWidths> layers_{};
  std::array<std::array<int64_t, static_cast<int>(CpuOp::kCount)>, kWidths> ns_{};
};

}  // namespace ls
