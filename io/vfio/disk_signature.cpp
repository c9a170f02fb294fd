// find_disk_signature: the most specific name first (a FAT boot sector also
// ends in 0x55AA, as an MBR does).
#include "io/vfio/disk_signature.h"

#include <cstring>

namespace ls {
namespace {

bool has(const uint8_t* data, size_t n, size_t at, const char* magic, size_t len) {
  return at + len <= n && std::memcmp(data + at, magic, len) == 0;
}
bool has(const uint8_t* data, size_t n, size_t at, const char* magic) {
  return has(data, n, at, magic, std::strlen(magic));
}

}  // namespace

std::string find_disk_signature(const uint8_t* d, size_t n) {
  // GPT header at LBA 1: byte 512 on 512-byte blocks, 4096 on 4Kn drives.
  if (has(d, n, 512, "EFI PART") || has(d, n, 4096, "EFI PART")) return "GPT partition table";
  if (has(d, n, 0, "LUKS\xba\xbe", 6)) return "LUKS encrypted volume";
  if (has(d, n, 0, "XFSB")) return "XFS file system";
  // ext2/3/4: the superblock at 1024, s_magic 0xEF53 (little endian) at +56.
  if (has(d, n, 1080, "\x53\xef", 2)) return "ext2/3/4 file system";
  if (has(d, n, 65600, "_BHRfS_M")) return "btrfs file system";
  // Swap: the signature ends the first page, whatever the page size.
  for (size_t page : {4096u, 8192u, 16384u, 65536u})
    if (has(d, n, page - 10, "SWAPSPACE2") || has(d, n, page - 10, "SWAP-SPACE"))
      return "swap signature";
  // LVM2 physical volume: the label in one of the first four sectors.
  for (size_t s = 0; s < 4; ++s)
    if (has(d, n, s * 512, "LABELONE")) return "LVM physical volume";
  // Boot-sector file systems: the OEM name at 3, or FAT's type string.
  if (has(d, n, 3, "NTFS    ")) return "NTFS file system";
  if (has(d, n, 3, "EXFAT   ")) return "exFAT file system";
  if (has(d, n, 54, "FAT12   ") || has(d, n, 54, "FAT16   ") || has(d, n, 82, "FAT32   "))
    return "FAT file system";
  if (has(d, n, 510, "\x55\xaa", 2)) return "MBR partition table (0x55AA at byte 510)";
  // Linux software RAID (md) superblock 1.1 at 0 and 1.2 at 4096.
  for (size_t at : {0u, 4096u})
    if (has(d, n, at, "\xfc\x4e\x2b\xa9", 4)) return "Linux RAID (md) member";
  return "";
}

}  // namespace ls
