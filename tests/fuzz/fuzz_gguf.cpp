// libFuzzer target for the GGUF reader. Each input is parsed from libFuzzer's
// exactly-sized buffer; when it parses, every metadata value is printed and
// walked and every tensor's first and last byte is read, so a bounds check
// that is wrong by one byte is an ASan report, not a silent over-read. The
// reader's own promises are checked too: an error names the file, and a
// parsed tensor lies inside the data section.
// Run with scripts/fuzz.sh; seeds in tests/fuzz/corpus (tests/fuzz/make_seeds.cpp).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "io/gguf.h"

namespace {

void fail(const char* why, const std::string& detail) {
  std::fprintf(stderr, "fuzz_gguf: %s: %s\n", why, detail.c_str());
  __builtin_trap();
}

uint64_t walk(const ls::GgufValue& v, int depth) {
  uint64_t sum = v.to_string().size();
  if (v.type != ls::GgufType::ARRAY) return sum + static_cast<uint64_t>(v.as_int());
  const ls::GgufArray& a = *v.arr;
  if (a.elem_type == ls::GgufType::STRING) {
    if (a.strings.size() != a.count) fail("string array count", v.to_string());
    for (const std::string& s : a.strings) sum += s.size() ? static_cast<uint8_t>(s.back()) : 0;
  } else if (a.elem_type == ls::GgufType::ARRAY) {
    if (a.arrays.size() != a.count) fail("nested array count", v.to_string());
    for (const ls::GgufValue& e : a.arrays) sum += walk(e, depth + 1);
  } else {
    if (a.raw.size() != a.count * ls::gguf_scalar_bytes(a.elem_type))
      fail("scalar array size", v.to_string());
    for (uint64_t i = 0; i < a.count; ++i)
      sum += static_cast<uint64_t>(a.integer(i)) + static_cast<uint64_t>(a.number(i) != 0);
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string kName = "fuzz.gguf";
  auto f = ls::GgufFile::parse(std::span<const uint8_t>(data, size), kName);
  if (!f) {
    const std::string& m = f.error().message;
    if (m.rfind(kName + ": ", 0) != 0) fail("error does not name the file", m);
    return 0;
  }
  const ls::GgufFile& g = **f;
  volatile uint64_t sink = 0;
  for (const auto& [key, v] : g.metadata()) {
    if (g.find(key) != &v) fail("metadata index", key);
    sink = sink + walk(v, 0);
  }
  if (g.data_offset() > size || g.alignment() == 0) fail("data section", std::to_string(size));
  for (const ls::GgufTensor& t : g.tensors()) {
    if (g.find_tensor(t.name) != &t) fail("tensor index", t.name);
    if (t.offset < g.data_offset() || t.offset > size || t.bytes > size - t.offset ||
        t.offset % g.alignment() != g.data_offset() % g.alignment())
      fail("tensor outside the data section", t.name);
    if (t.shape.empty() || t.shape.size() > 4) fail("tensor dimensions", t.name);
    sink = sink + t.elements() + t.rows();
    std::span<const uint8_t> d = g.tensor_data(t);
    if (!d.empty()) sink = sink + d.front() + d.back();
  }
  (void)sink;

  // Cuts that random mutation rarely makes exactly: one byte short of the last
  // tensor's end, and one byte short of the data section. With a tensor in the
  // file both must fail, and (from an exactly-sized heap copy) read nothing past the cut.
  if (!g.tensors().empty()) {
    uint64_t end = 0;
    for (const ls::GgufTensor& t : g.tensors())
      if (t.bytes > 0 && t.offset + t.bytes > end) end = t.offset + t.bytes;
    for (uint64_t cut : {end, g.data_offset()}) {
      if (cut == 0) continue;
      std::vector<uint8_t> b(data, data + cut - 1);
      auto h = ls::GgufFile::parse(b, kName);
      if (h) fail("a file cut one byte short parsed", std::to_string(cut - 1));
    }
  }
  return 0;
}
