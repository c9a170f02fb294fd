#include "model/device_link.h"

#include <cstring>

namespace ls {

Status HostLink::copy_to_slot(uint8_t* dst, int32_t, std::span<const CopyPiece> pieces,
                              Release src_free, const GpuSpan&) {
  for (const CopyPiece& p : pieces) std::memcpy(dst + p.dst_offset, p.src, p.bytes);
  src_free();
  return ok();
}

}  // namespace ls
