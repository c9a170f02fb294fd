// The safetensors reader (io/safetensors.h): a file built here byte by byte
// reads back (names, dtypes, shapes, data, metadata, data order); each way a
// header can lie is an error naming the file and what is wrong; a valid file
// cut at any byte is an error, never a crash.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/safetensors.h"

using namespace ls;

namespace {

// A file: the 8-byte length, the header text as given (padded with spaces to
// `pad`), then the data.
std::vector<uint8_t> build(const std::string& header, const std::vector<uint8_t>& data,
                           size_t pad = 8) {
  std::string h = header;
  while (h.size() % pad) h += ' ';
  // Sized once and filled by memcpy (GCC 12 warns falsely about insert at -O3).
  std::vector<uint8_t> out(8 + h.size() + data.size());
  const uint64_t n = h.size();
  for (int k = 0; k < 8; ++k) out[k] = static_cast<uint8_t>(n >> (8 * k));
  if (!h.empty()) std::memcpy(out.data() + 8, h.data(), h.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + h.size(), data.data(), data.size());
  return out;
}

std::vector<uint8_t> bytes(size_t n, uint8_t start = 1) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(start + i);
  return b;
}

// The error message of parsing `file` (fails the test if it parses).
std::string error_of(const std::vector<uint8_t>& file) {
  auto r = SafetensorsFile::parse(file, "x.safetensors");
  REQUIRE_FALSE(r.has_value());
  const std::string& m = r.error().message;
  CHECK_MESSAGE(m.rfind("x.safetensors: ", 0) == 0, m);  // names the file
  return m;
}

// A valid two-tensor header around [a, b) and [b, c) offsets.
std::string two(uint64_t a, uint64_t b, uint64_t c, const char* dtype2 = "F32") {
  return R"({"w":{"dtype":"F32","shape":[)" + std::to_string((b - a) / 4) +
         R"(],"data_offsets":[)" + std::to_string(a) + "," + std::to_string(b) +
         R"(]},"v":{"dtype":")" + dtype2 + R"(","shape":[)" + std::to_string((c - b) / 4) +
         R"(],"data_offsets":[)" + std::to_string(b) + "," + std::to_string(c) + "]}}";
}

}  // namespace

TEST_CASE("safetensors: a file built here reads back: tensors in data order, dtypes, metadata") {
  // Header order differs from data order; one scalar, one empty tensor, an
  // odd header length (data not aligned), trailing spaces in the header.
  const std::string header = R"({"__metadata__":{"format":"pt","note":"x"},)"
                             R"("b.weight":{"dtype":"BF16","shape":[2,3],"data_offsets":[24,36]},)"
                             R"("a.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                             R"("s":{"dtype":"I64","shape":[],"data_offsets":[36,44]},)"
                             R"("e":{"dtype":"F16","shape":[0,5],"data_offsets":[44,44]}})";
  const std::vector<uint8_t> data = bytes(44);
  const std::vector<uint8_t> file = build(header, data, 3);
  auto r = SafetensorsFile::parse(file, "ok.safetensors");
  REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message));
  const SafetensorsFile& f = **r;
  CHECK(f.data_offset() == file.size() - 44);
  REQUIRE(f.tensors().size() == 4);
  CHECK(f.tensors()[0].name == "a.weight");
  CHECK(f.tensors()[1].name == "b.weight");
  CHECK(f.tensors()[2].name == "s");
  CHECK(f.tensors()[3].name == "e");
  const StTensor* b = f.find("b.weight");
  REQUIRE(b != nullptr);
  CHECK(b->dtype == StDtype::BF16);
  CHECK(b->shape == std::vector<uint64_t>{2, 3});
  CHECK(b->elements() == 6);
  CHECK(std::memcmp(f.data(*b).data(), data.data() + 24, 12) == 0);
  CHECK(f.find("s")->elements() == 1);
  CHECK(f.find("s")->shape.empty());
  CHECK(f.data(*f.find("e")).empty());
  CHECK(f.find("nope") == nullptr);
  CHECK(f.metadata().at("format") == "pt");
  CHECK(f.metadata().at("note") == "x");
  CHECK(std::string(st_dtype_name(StDtype::BF16)) == "BF16");
  CHECK(st_dtype_bytes(StDtype::F64) == 8);

  // The same bytes through open() (mmap).
  const std::string path = "ls_test_safetensors_" + std::to_string(::getpid()) + ".safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(file.data()),
              static_cast<std::streamsize>(file.size()));
  }
  auto o = SafetensorsFile::open(path);
  REQUIRE_MESSAGE(o.has_value(), (o ? "" : o.error().message));
  CHECK(std::memcmp((*o)->data(*(*o)->find("a.weight")).data(), data.data(), 24) == 0);
  std::filesystem::remove(path);
  auto missing = SafetensorsFile::open(path);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().message.find(path + ": cannot open") == 0);
}

TEST_CASE("safetensors: every lie in the header is an error naming the file and the problem") {
  const std::vector<uint8_t> d16 = bytes(16);
  struct Case {
    const char* what;
    std::vector<uint8_t> file;
    const char* says;
  };
  std::vector<uint8_t> long_len(16, 0);
  long_len[3] = 0x10;  // 2^28 bytes of header: beyond the 100 MB limit
  std::vector<uint8_t> past_len = build(two(0, 8, 16), d16);
  past_len[0] = static_cast<uint8_t>(past_len[0] + 40);  // the header runs past the end
  const Case cases[] = {
      {"shorter than the length field", {1, 2, 3}, "too short"},
      {"header longer than the file", past_len, "truncated"},
      {"header beyond the format's limit", long_len, "limit"},
      {"not JSON", build("{\"w\": [1, 2", {}), "not valid JSON"},
      {"JSON, not an object", build("[1, 2, 3]", {}), "not an object"},
      {"a name twice",
       build(two(0, 8, 16).substr(0, two(0, 8, 16).size() - 1) +
                 R"(,"w":{"dtype":"F32","shape":[0],"data_offsets":[16,16]}})",
             d16),
       "names 'w' twice"},
      {"unknown dtype", build(two(0, 8, 16, "F17"), d16), "unknown dtype 'F17'"},
      {"negative dimension",
       build(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", bytes(8)),
       "non-negative integer"},
      {"fractional dimension",
       build(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", bytes(8)),
       "non-negative integer"},
      {"offsets not the shape's size",
       build(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", bytes(8)),
       "hold 8 bytes, but F32 [3] needs 12"},
      {"offsets backwards",
       build(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", bytes(8)),
       "end before they begin"},
      {"offsets not two numbers",
       build(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", bytes(8)),
       "data_offsets must be two"},
      {"no dtype", build(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", bytes(8)),
       "dtype is missing"},
      {"unknown field",
       build(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", bytes(8)),
       "unknown field 'x'"},
      {"entry not an object", build(R"({"w":7})", {}), "must be an object"},
      {"metadata not strings", build(R"({"__metadata__":{"a":1}})", {}), "__metadata__ 'a'"},
      {"overlap", build(two(0, 8, 16).replace(two(0, 8, 16).find("[8,16]"), 6, "[4,12]"), d16),
       "overlap"},
      {"a gap", build(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", d16),
       "bytes [0, 8) of the data section belong to no tensor"},
      {"bytes after the last tensor", build(two(0, 8, 12), d16), "4 bytes after the last"},
      {"runs past the file", build(two(0, 8, 24), d16), "run past the end of the file"},
  };
  for (const Case& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    const std::string m = error_of(c.file);
    CHECK_MESSAGE(m.find(c.says) != std::string::npos, m);
  }
}

TEST_CASE("safetensors: a valid file cut at any byte is an error, never a crash") {
  const std::vector<uint8_t> file = build(two(0, 8, 16), bytes(16));
  REQUIRE(SafetensorsFile::parse(file, "x.safetensors").has_value());
  for (size_t n = 0; n < file.size(); ++n) {
    CAPTURE(n);
    std::vector<uint8_t> cut(file.begin(), file.begin() + static_cast<ptrdiff_t>(n));
    const std::string m = error_of(cut);
    CHECK_MESSAGE(m.find("truncated") != std::string::npos, m);
  }
}
