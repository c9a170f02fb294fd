// The pread block source: a few threads each doing pread(2), one chunk at a
// time, so that `queue_depth` chunks are in flight as with io_uring. The
// fallback where io_uring is refused, and (without O_DIRECT) for file systems
// that refuse O_DIRECT: then the page cache may serve the reads.
// defines: open_pread_source
#pragma once

#include <memory>
#include <string>

#include "io/block_source.h"

namespace ls {

// queue_depth threads (at most 64) are started; they sleep when idle.
Expected<std::unique_ptr<BlockSource>> open_pread_source(const std::string& path, bool direct,
                                                         uint32_t queue_depth,
                                                         uint64_t chunk_bytes);

}  // namespace ls
