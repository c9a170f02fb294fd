#include "io/raw_gguf.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace ls {

uint64_t fnv1a64(std::span<const uint8_t> bytes, uint64_t h) {
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

Status verify_raw_gguf(const GgufFile& file, uint64_t device_bytes, const RawRead& read,
                       const std::string& where) {
  const uint64_t size = file.file_size();
  if (device_bytes < size)
    return make_error(
        "%s: the device holds %llu bytes from there, but %s is %llu bytes: the model does not "
        "fit (wrong LBA, or a smaller namespace)",
        where.c_str(), static_cast<unsigned long long>(device_bytes), file.path().c_str(),
        static_cast<unsigned long long>(size));
  const uint64_t header = file.data_offset();
  std::vector<uint8_t> buf(static_cast<size_t>(std::max<uint64_t>(header, 4096)));
  LS_TRY(read(0, header, buf.data()));
  if (std::memcmp(buf.data(), "GGUF", 4) != 0)
    return make_error(
        "%s: no GGUF file there (the first bytes are %02x %02x %02x %02x, not 'GGUF'): write "
        "the model there with dd first, or give the LBA it was written at",
        where.c_str(), buf[0], buf[1], buf[2], buf[3]);
  const std::span<const uint8_t> ours(file.base(), static_cast<size_t>(header));
  const uint64_t want = fnv1a64(ours);
  const uint64_t got = fnv1a64({buf.data(), static_cast<size_t>(header)});
  if (got != want)
    return make_error(
        "%s: the GGUF there is not %s: its header and metadata differ (checksum %016llx, the "
        "file's %016llx over %llu bytes)",
        where.c_str(), file.path().c_str(), static_cast<unsigned long long>(got),
        static_cast<unsigned long long>(want), static_cast<unsigned long long>(header));
  const uint64_t tail = std::min<uint64_t>(size, 4096);
  LS_TRY(read(size - tail, tail, buf.data()));
  if (std::memcmp(buf.data(), file.base() + (size - tail), static_cast<size_t>(tail)) != 0)
    return make_error(
        "%s: the GGUF there has %s's header but not its last %llu bytes: was the dd "
        "interrupted, or the file changed since?",
        where.c_str(), file.path().c_str(), static_cast<unsigned long long>(tail));
  return ok();
}

}  // namespace ls
