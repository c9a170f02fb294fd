// How the tiers' buffers are allocated: host memory for RAM-tier layers and
// staging buffers (pinned on CUDA, so the copy engine can DMA from it),
// device memory for slots. The CPU backend uses plain host memory for both,
// so the graph and its credits are the same on both backends.
// defines: MemoryOps, host_memory_ops()
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>

namespace ls {

// Each alloc returns nullptr on failure.
struct MemoryOps {
  std::function<uint8_t*(uint64_t bytes)> alloc_host;
  std::function<void(uint8_t*)> free_host;
  std::function<uint8_t*(uint64_t bytes)> alloc_device;
  std::function<void(uint8_t*)> free_device;
};

// Plain 4096-aligned host memory for both (O_DIRECT reads need the alignment).
inline MemoryOps host_memory_ops() {
  MemoryOps ops;
  auto alloc = [](uint64_t bytes) -> uint8_t* {
    const uint64_t n = (bytes + 4095) / 4096 * 4096;
    return static_cast<uint8_t*>(std::aligned_alloc(4096, n ? n : 4096));
  };
  auto release = [](uint8_t* p) { std::free(p); };
  ops.alloc_host = alloc;
  ops.free_host = release;
  ops.alloc_device = alloc;
  ops.free_device = release;
  return ops;
}

}  // namespace ls
