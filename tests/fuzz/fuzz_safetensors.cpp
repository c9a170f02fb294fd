// libFuzzer target for the safetensors reader (io/safetensors.h). Each input
// is parsed from libFuzzer's exactly-sized buffer; when it parses, every
// tensor's first and last byte is read (a bounds check wrong by one byte is
// an ASan report, not a silent over-read) and the reader's promises are
// checked: an error names the file; tensors lie in the data section, back to
// back in order, each exactly its shape's size; every name finds its tensor;
// and the same file cut one byte short does not parse.
// Run with scripts/fuzz.sh; seeds in tests/fuzz/corpus_safetensors.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace {

void fail(const char* why, const std::string& detail) {
  std::fprintf(stderr, "fuzz_safetensors: %s: %s\n", why, detail.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string kName = "fuzz.safetensors";
  auto f = ls::SafetensorsFile::parse(std::span<const uint8_t>(data, size), kName);
  if (!f) {
    const std::string& m = f.error().message;
    if (m.rfind(kName + ": ", 0) != 0) fail("error does not name the file", m);
    return 0;
  }
  const ls::SafetensorsFile& s = **f;
  if (s.data_offset() < 8 || s.data_offset() > size) fail("data offset", std::to_string(size));
  const uint64_t data_size = size - s.data_offset();
  volatile uint64_t sink = 0;
  uint64_t at = 0;
  for (const ls::StTensor& t : s.tensors()) {
    if (s.find(t.name) != &t) fail("name index", t.name);
    if (t.begin != at || t.end < t.begin || t.end > data_size) fail("not back to back", t.name);
    at = t.end;
    if (t.end - t.begin != t.elements() * ls::st_dtype_bytes(t.dtype)) fail("size", t.name);
    std::span<const uint8_t> d = s.data(t);
    if (!d.empty()) sink = sink + d.front() + d.back();
  }
  if (at != data_size) fail("bytes left over", std::to_string(data_size - at));
  for (const auto& [k, v] : s.metadata()) sink = sink + k.size() + v.size();
  (void)sink;

  // Cut one byte short (from an exactly-sized heap copy): must fail.
  std::vector<uint8_t> cut(data, data + size - 1);
  if (ls::SafetensorsFile::parse(cut, kName)) fail("a file cut one byte short parsed", "");
  return 0;
}
