// Every signature `nvme bind` refuses on, placed where its format puts it in
// an otherwise empty disk; an empty disk and a truncated read find nothing.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "io/vfio/disk_signature.h"

using namespace ls;

namespace {
std::string sig_with(size_t at, const std::string& magic, size_t n = kSignatureProbeBytes) {
  std::vector<uint8_t> d(n, 0);
  std::memcpy(d.data() + at, magic.data(), magic.size());
  return find_disk_signature(d.data(), d.size());
}
}  // namespace

TEST_CASE("disk signature: each known signature at its offset is found") {
  CHECK(sig_with(512, "EFI PART") == "GPT partition table");
  CHECK(sig_with(4096, "EFI PART") == "GPT partition table");  // 4 KiB logical blocks
  CHECK(sig_with(510, "\x55\xaa").rfind("MBR partition table", 0) == 0);
  CHECK(sig_with(1080, "\x53\xef") == "ext2/3/4 file system");
  CHECK(sig_with(0, "XFSB") == "XFS file system");
  CHECK(sig_with(65600, "_BHRfS_M") == "btrfs file system");
  CHECK(sig_with(4086, "SWAPSPACE2") == "swap signature");
  CHECK(sig_with(65526, "SWAPSPACE2") == "swap signature");  // 64 KiB pages
  CHECK(sig_with(16374, "SWAP-SPACE") == "swap signature");
  CHECK(sig_with(512, "LABELONE") == "LVM physical volume");
  CHECK(sig_with(0, std::string("LUKS\xba\xbe", 6)) == "LUKS encrypted volume");
  CHECK(sig_with(3, "NTFS    ") == "NTFS file system");
  CHECK(sig_with(3, "EXFAT   ") == "exFAT file system");
  CHECK(sig_with(82, "FAT32   ") == "FAT file system");
  CHECK(sig_with(54, "FAT16   ") == "FAT file system");
  CHECK(sig_with(4096, "\xfc\x4e\x2b\xa9") == "Linux RAID (md) member");
}

TEST_CASE("disk signature: an empty disk, a GGUF and a short read find nothing") {
  std::vector<uint8_t> zero(kSignatureProbeBytes, 0);
  CHECK(find_disk_signature(zero.data(), zero.size()) == "");
  CHECK(sig_with(0, "GGUF") == "");  // the model written with dd is no reason to refuse
  // The btrfs magic lies past a 64 KiB read: not found, and no read past the end.
  CHECK(sig_with(60000, "x", 65536) == "");
  CHECK(find_disk_signature(zero.data(), 0) == "");
}
