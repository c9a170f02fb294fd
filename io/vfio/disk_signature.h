// What the first bytes of a disk say it holds: a partition table, a file
// system, swap, an LVM or LUKS header. `nvme bind` refuses a namespace where
// any is found, so a drive with someone's data is never handed to the
// userspace driver. Offsets from the formats' on-disk layouts.
// defines: kSignatureProbeBytes, find_disk_signature()
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ls {

// Enough to reach the farthest signature checked (btrfs at 65600, swap's
// 64 KiB page variant at 65526).
constexpr size_t kSignatureProbeBytes = 68 * 1024;

// The first signature found in the disk's first `n` bytes ("GPT partition
// table", "ext2/3/4 file system", ...); "" when none.
std::string find_disk_signature(const uint8_t* data, size_t n);

}  // namespace ls
