// The io_uring block source: O_DIRECT reads into registered (fixed) buffers,
// `queue_depth` chunks in flight, one ring driven by one thread.
// defines: open_uring_source
#pragma once

#include <memory>
#include <string>

#include "io/block_source.h"

namespace ls {

// Opens the file, sets up the ring and reads the first block through it, so
// that a kernel or sandbox that refuses io_uring (ENOSYS, EPERM, a seccomp
// filter) fails here, with its errno, and not on the first layer.
Expected<std::unique_ptr<BlockSource>> open_uring_source(const std::string& path, bool direct,
                                                         uint32_t queue_depth,
                                                         uint64_t chunk_bytes);

}  // namespace ls
