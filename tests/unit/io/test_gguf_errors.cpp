// Hand-broken GGUF files: each must give an error that names the file and the
// field, key or tensor at fault, never a crash. Every file is parsed from an
// exactly-sized buffer, so under the sanitize build an over-read is caught.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "tests/unit/io/gguf_samples.h"

using namespace ls;
using namespace ls::test;

namespace {

using Bytes = std::vector<uint8_t>;
const std::string kName = "broken.gguf";

bool contains(const std::string& s, std::string_view sub) {
  return s.find(sub) != std::string::npos;
}

// Parse; on success touch every value and every tensor's first and last byte.
Expected<std::shared_ptr<GgufFile>> parse(const Bytes& b) {
  auto f = GgufFile::parse(b, kName);
  if (f) {
    for (const auto& [k, v] : (*f)->metadata()) (void)v.to_string();
    uint64_t sum = 0;
    for (const GgufTensor& t : (*f)->tensors()) {
      auto d = (*f)->tensor_data(t);
      REQUIRE(t.offset + t.bytes <= b.size());
      if (!d.empty()) sum += d.front() + d.back();
    }
    (void)sum;
  }
  return f;
}

// The error from parsing B, which must fail with a message that starts with
// the file's name and contains each of SUBS.
std::string check_error(const Bytes& b, std::initializer_list<std::string_view> subs) {
  auto f = parse(b);
  REQUIRE_MESSAGE(!f.has_value(), "parsed, but an error containing '", *subs.begin(),
                  "' was expected");
  const std::string& m = f.error().message;
  CHECK_MESSAGE(m.rfind(kName + ": ", 0) == 0, m);
  for (std::string_view s : subs) CHECK_MESSAGE(contains(m, s), "'", s, "' not in: ", m);
  return m;
}

template <typename T>
void poke(Bytes& b, size_t at, T v) {
  REQUIRE(at + sizeof(T) <= b.size());
  std::memcpy(b.data() + at, &v, sizeof(T));
}
template <typename T>
T peek(const Bytes& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

// Offset of string S as stored (its bytes, after the 8-byte length); S must
// occur once as a whole string.
size_t find_str(const Bytes& b, std::string_view s) {
  Bytes pat(8);
  const uint64_t n = s.size();
  std::memcpy(pat.data(), &n, 8);
  pat.insert(pat.end(), s.begin(), s.end());
  auto it = std::search(b.begin(), b.end(), pat.begin(), pat.end());
  REQUIRE_MESSAGE(it != b.end(), "'", s, "' not found");
  REQUIRE(std::search(it + 1, b.end(), pat.begin(), pat.end()) == b.end());
  return static_cast<size_t>(it - b.begin()) + 8;
}

// Where a KV's type and value lie.
struct KvAt {
  size_t len;    // the key's length field
  size_t type;   // its value type
  size_t value;  // its value
};
KvAt kv_at(const Bytes& b, std::string_view key) {
  size_t k = find_str(b, key);
  return {k - 8, k + key.size(), k + key.size() + 4};
}

// Where a tensor info's fields lie.
struct InfoAt {
  size_t len, n_dims, dims, type, offset, end;
};
InfoAt info_at(const Bytes& b, std::string_view name) {
  size_t p = find_str(b, name);
  InfoAt a;
  a.len = p - 8;
  a.n_dims = p + name.size();
  uint32_t nd = peek<uint32_t>(b, a.n_dims);
  a.dims = a.n_dims + 4;
  a.type = a.dims + 8 * nd;
  a.offset = a.type + 4;
  a.end = a.offset + 8;
  return a;
}

// The sample file: every value type, five tensors.
GgufWriter& sample_writer() {
  static GgufWriter* w = [] {
    auto* x = new GgufWriter();
    gguf_add_every_value(*x);
    gguf_add_sample_tensors(*x);
    return x;
  }();
  return *w;
}
Bytes sample() {
  return gguf_file_bytes(sample_writer());
}

const char* const kSampleKeys[] = {"general.architecture",
                                   "t.u8",
                                   "t.i8",
                                   "t.u16",
                                   "t.i16",
                                   "t.u32",
                                   "t.i32",
                                   "t.f32",
                                   "t.bool",
                                   "t.str",
                                   "t.u64",
                                   "t.i64",
                                   "t.f64",
                                   "t.arr.u8",
                                   "t.arr.i8",
                                   "t.arr.u16",
                                   "t.arr.i16",
                                   "t.arr.u32",
                                   "t.arr.i32",
                                   "t.arr.f32",
                                   "t.arr.bool",
                                   "t.arr.str",
                                   "t.arr.u64",
                                   "t.arr.i64",
                                   "t.arr.f64",
                                   "t.arr.empty",
                                   "t.arr.nested",
                                   "t.arr.nested3",
                                   "general.alignment"};
const char* const kSampleTensors[] = {"token_embd.weight", "blk.0.attn_q.weight",
                                      "blk.0.ffn_up.weight", "output_norm.weight", "blk.0.bf"};

}  // namespace

TEST_CASE("gguf: the sample file parses, as v3 and as v2") {
  Bytes b = sample();
  auto f = parse(b);
  REQUIRE_MESSAGE(f.has_value(), f.error().message);
  CHECK((*f)->metadata().size() == std::size(kSampleKeys));
  for (size_t k = 0; k < std::size(kSampleKeys); ++k)
    CHECK((*f)->metadata()[k].first == kSampleKeys[k]);
  REQUIRE((*f)->tensors().size() == std::size(kSampleTensors));
  for (size_t k = 0; k < std::size(kSampleTensors); ++k) {
    const GgufTensor& t = (*f)->tensors()[k];
    CHECK(t.name == kSampleTensors[k]);
    CHECK(t.offset % 32 == 0);
    CHECK(t.bytes == sample_writer().tensor_bytes(k));
    CHECK((*f)->tensor_data(t)[1] == static_cast<uint8_t>(k * 37 + 1));
  }
  poke<uint32_t>(b, 4, 2);
  auto f2 = parse(b);
  REQUIRE_MESSAGE(f2.has_value(), f2.error().message);
  CHECK((*f2)->version() == 2);
}

TEST_CASE("gguf: truncation at every byte is an error naming what was being read") {
  const Bytes full = sample();
  auto whole = parse(full);
  REQUIRE(whole.has_value());
  const GgufFile& g = **whole;
  // Section boundaries, from the strings' positions in the file.
  std::vector<KvAt> kvs;
  for (const char* k : kSampleKeys) kvs.push_back(kv_at(full, k));
  std::vector<InfoAt> infos;
  for (const char* t : kSampleTensors) infos.push_back(info_at(full, t));
  const uint64_t min_counts = std::size(kSampleKeys) * 12 + std::size(kSampleTensors) * 32;
  REQUIRE(kvs[0].len == 24);
  REQUIRE(infos[0].len > kvs.back().value);
  REQUIRE(g.data_offset() > infos.back().end);  // some padding to cut inside

  int checked = 0;
  for (size_t cut = 0; cut < full.size(); ++cut) {
    CAPTURE(cut);
    const Bytes b(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut));
    std::string want;
    if (cut < 4)
      want = "while reading magic";
    else if (cut < 8)
      want = "while reading version";
    else if (cut < 16)
      want = "while reading tensor count";
    else if (cut < 24)
      want = "while reading metadata count";
    else if (cut - 24 < min_counts)
      want = "bytes left in the file";  // counts cannot fit
    else if (cut < infos[0].len) {
      size_t k = kvs.size() - 1;
      while (kvs[k].len > cut) --k;
      if (cut < kvs[k].type)
        want = "metadata key #" + std::to_string(k);
      else
        want = std::string("metadata '") + kSampleKeys[k] + "'";
    } else if (cut < infos.back().end) {
      size_t k = infos.size() - 1;
      while (infos[k].len > cut) --k;
      if (cut < infos[k].n_dims)
        want = "name of tensor #" + std::to_string(k);
      else
        want = std::string("tensor '") + kSampleTensors[k] + "'";
    } else if (cut < g.data_offset()) {
      want = "padding before the data section";
    } else {
      // The first tensor (in file order) whose data the cut reaches.
      for (const GgufTensor& t : g.tensors())
        if (t.offset + t.bytes > cut) {
          want = "tensor '" + t.name + "'";
          break;
        }
      check_error(b, {want, "outside the data section"});
      ++checked;
      continue;
    }
    if (cut >= 24 && cut - 24 >= min_counts)
      check_error(b, {want, "truncated"});
    else
      check_error(b, {want});
    ++checked;
  }
  CHECK(checked == static_cast<int>(full.size()));
  // A few of the messages, for the reader of the test log.
  MESSAGE(check_error(Bytes(full.begin(), full.begin() + 2), {"magic"}));
  MESSAGE(check_error(Bytes(full.begin(), full.begin() + static_cast<ptrdiff_t>(kvs[21].value + 3)),
                      {"t.arr.str"}));
  MESSAGE(check_error(Bytes(full.begin(), full.begin() + static_cast<ptrdiff_t>(infos[2].dims + 5)),
                      {"blk.0.ffn_up.weight' dimension 0"}));
  MESSAGE(check_error(Bytes(full.begin(), full.end() - 1), {"blk.0.bf"}));
}

TEST_CASE("gguf: random corruption is an error or a consistent file, never a crash") {
  const Bytes full = sample();
  std::mt19937_64 rng(12345);
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes b = full;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) {
      size_t at = rng() % b.size();
      switch (rng() % 3) {
        case 0:
          b[at] = static_cast<uint8_t>(rng());
          break;
        case 1:
          b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        default:
          b[at] = 0xff;
          break;
      }
    }
    if (rng() % 4 == 0) b.resize(rng() % b.size());
    auto f = parse(b);
    if (f) {
      ++parsed;
    } else {
      CHECK_MESSAGE(f.error().message.rfind(kName + ": ", 0) == 0, f.error().message);
    }
  }
  MESSAGE(parsed << " of 3000 corrupted files still parsed");
}

TEST_CASE("gguf: bad magic, empty file, unsupported versions") {
  Bytes b = sample();
  b[3] = 'X';
  check_error(b, {"not a GGUF file", "47 47 55 58"});
  check_error(Bytes{}, {"truncated at byte 0 while reading magic"});
  check_error(Bytes{'G', 'G', 'U'}, {"while reading magic", "3 left"});
  b = sample();
  poke<uint32_t>(b, 4, 1);
  MESSAGE(check_error(b, {"version 1", "not supported"}));
  poke<uint32_t>(b, 4, 4);
  check_error(b, {"unsupported GGUF version 4"});
  poke<uint32_t>(b, 4, 0);
  check_error(b, {"unsupported GGUF version 0"});
  poke<uint32_t>(b, 4, __builtin_bswap32(3u));
  MESSAGE(check_error(b, {"big-endian"}));
  poke<uint32_t>(b, 4, __builtin_bswap32(2u));
  check_error(b, {"big-endian"});
}

TEST_CASE("gguf: huge tensor, metadata, array and string counts") {
  const Bytes full = sample();
  for (uint64_t n : {uint64_t{1} << 40, UINT64_MAX, UINT64_MAX / 8 + 1, uint64_t{1000}}) {
    CAPTURE(n);
    Bytes b = full;
    poke<uint64_t>(b, 8, n);
    check_error(b, {"tensor count", std::to_string(n)});
    b = full;
    poke<uint64_t>(b, 16, n);
    check_error(b, {"metadata count", std::to_string(n)});
    // An array's count, for scalar, string and nested arrays.
    for (const char* key : {"t.arr.f32", "t.arr.str", "t.arr.nested"}) {
      b = full;
      poke<uint64_t>(b, kv_at(b, key).value + 4, n);
      check_error(b, {std::string("metadata '") + key + "'", "cannot fit"});
    }
    // A string value's length, a string element's length, a key's length
    // (1000 would just read on into the next fields).
    if (n == 1000) continue;
    b = full;
    poke<uint64_t>(b, kv_at(b, "t.str").value, n);
    check_error(b, {"metadata 't.str'", "truncated"});
    b = full;
    poke<uint64_t>(b, find_str(b, "ccc") - 8, n);
    check_error(b, {"metadata 't.arr.str'[2]"});
    b = full;
    poke<uint64_t>(b, kv_at(b, "t.u8").len, n);
    check_error(b, {"metadata key #1"});
    b = full;
    poke<uint64_t>(b, info_at(b, "blk.0.bf").len, n);
    check_error(b, {"name of tensor #4"});
  }
  Bytes b = full;
  poke<uint64_t>(b, 16, UINT64_MAX);
  MESSAGE(check_error(b, {"metadata count"}));
  b = full;
  poke<uint64_t>(b, kv_at(b, "t.arr.str").value + 4, uint64_t{1} << 60);
  MESSAGE(check_error(b, {"t.arr.str"}));
}

TEST_CASE("gguf: unknown metadata value type and array element type") {
  Bytes b = sample();
  poke<uint32_t>(b, kv_at(b, "t.i16").type, 13);
  MESSAGE(check_error(b, {"metadata 't.i16'", "unknown value type 13"}));
  b = sample();
  poke<uint32_t>(b, kv_at(b, "t.i16").type, 0xffffffffu);
  check_error(b, {"metadata 't.i16'", "unknown value type 4294967295"});
  b = sample();
  poke<uint32_t>(b, kv_at(b, "t.arr.u16").value, 42);
  check_error(b, {"metadata 't.arr.u16'", "unknown array element type 42"});
  // Inside a nested array: the message gives the element's index.
  b = sample();
  size_t inner = kv_at(b, "t.arr.nested").value + 12 + 12 + 8;  // second inner array
  REQUIRE(peek<uint32_t>(b, inner) == static_cast<uint32_t>(GgufType::INT32));
  poke<uint32_t>(b, inner, 77);
  check_error(b, {"metadata 't.arr.nested'[1]", "unknown array element type 77"});
}

TEST_CASE("gguf: duplicate metadata key and duplicate tensor name") {
  GgufWriter w;
  w.set_u32("dup.a", 1);
  w.set_u32("dup.b", 2);
  w.add_tensor("twin.x", GgmlType::F32, {4});
  w.add_tensor("twin.y", GgmlType::F32, {4});
  Bytes b = gguf_file_bytes(w);
  REQUIRE(parse(b).has_value());
  Bytes k = b;
  k[find_str(k, "dup.b") + 4] = 'a';
  MESSAGE(check_error(k, {"metadata 'dup.a' appears twice"}));
  Bytes t = b;
  t[find_str(t, "twin.y") + 5] = 'x';
  check_error(t, {"tensor 'twin.x' appears twice"});
}

TEST_CASE("gguf: tensors overlapping, outside the data section, misaligned") {
  const Bytes full = sample();
  const InfoAt q = info_at(full, "blk.0.attn_q.weight");
  Bytes b = full;
  poke<uint64_t>(b, q.offset, 0);  // onto token_embd.weight
  MESSAGE(check_error(b, {"'token_embd.weight' and 'blk.0.attn_q.weight' overlap"}));

  // Past the end, at the very end (a non-empty tensor), and where offset + size wraps.
  for (uint64_t off :
       {uint64_t{1} << 20, uint64_t(full.size()) / 32 * 32, UINT64_MAX - 31, uint64_t{1} << 63}) {
    CAPTURE(off);
    b = full;
    poke<uint64_t>(b, q.offset, off);
    check_error(b, {"tensor 'blk.0.attn_q.weight'", "outside the data section"});
  }
  b = full;
  poke<uint64_t>(b, q.offset, peek<uint64_t>(full, q.offset) + 4);
  MESSAGE(check_error(b, {"tensor 'blk.0.attn_q.weight'", "offset",
                          "not a multiple of the "
                          "alignment 32"}));

  // An empty tensor between two that overlap must not hide the overlap.
  GgufWriter w;
  w.add_tensor("big", GgmlType::F32, {64});  // [0, 256)
  w.add_tensor("empty", GgmlType::F32, {0});
  w.add_tensor("small", GgmlType::F32, {8});
  Bytes e = gguf_file_bytes(w);
  REQUIRE(parse(e).has_value());
  poke<uint64_t>(e, info_at(e, "empty").offset, 32);
  REQUIRE(parse(e).has_value());  // an empty tensor overlaps nothing
  poke<uint64_t>(e, info_at(e, "small").offset, 64);
  check_error(e, {"'big' and 'small' overlap"});
  // Tensors in any order are fine as long as they do not overlap.
  poke<uint64_t>(e, info_at(e, "big").offset, 32);
  poke<uint64_t>(e, info_at(e, "small").offset, 0);
  CHECK(parse(e).has_value());
}

TEST_CASE("gguf: unknown tensor type, bad dimensions, overflowing shapes") {
  const Bytes full = sample();
  const InfoAt t = info_at(full, "output_norm.weight");
  Bytes b = full;
  poke<uint32_t>(b, t.type, 99);
  MESSAGE(check_error(b, {"tensor 'output_norm.weight' has unknown type id 99"}));
  poke<uint32_t>(b, t.type, 16);
  MESSAGE(check_error(b, {"tensor 'output_norm.weight'", "iq2_xxs", "not support"}));
  poke<uint32_t>(b, t.type, 4);  // Q4_2, removed from ggml long ago
  check_error(b, {"unknown type id 4"});

  // 5 and 0 dimensions, written by the writer (it does not check).
  for (size_t nd : {size_t{5}, size_t{0}}) {
    GgufWriter w;
    w.add_tensor("ok", GgmlType::F32, {2});
    w.add_tensor("odd", GgmlType::F32, std::vector<uint64_t>(nd, 1));
    check_error(gguf_file_bytes(w),
                {"tensor 'odd' has " + std::to_string(nd) + " dimensions (1 to 4 allowed)"});
  }
  // n_dims absurd: caught before any dimension is read.
  b = full;
  poke<uint32_t>(b, t.n_dims, 0xffffffffu);
  check_error(b, {"tensor 'output_norm.weight' has 4294967295 dimensions"});

  // Element counts that overflow int64_t, and a byte size that overflows uint64_t.
  const InfoAt e = info_at(full, "token_embd.weight");  // F32, 2 dims
  b = full;
  poke<uint64_t>(b, e.dims, uint64_t{1} << 32);
  poke<uint64_t>(b, e.dims + 8, uint64_t{1} << 31);
  MESSAGE(check_error(b, {"tensor 'token_embd.weight' has an absurd shape"}));
  b = full;
  poke<uint64_t>(b, e.dims, UINT64_MAX);
  check_error(b, {"tensor 'token_embd.weight' has an absurd shape"});
  b = full;
  poke<uint64_t>(b, e.dims, 0);  // a zero dimension must not hide the overflow of the others
  poke<uint64_t>(b, e.dims + 8, UINT64_MAX / 2);
  const InfoAt bf = info_at(full, "blk.0.bf");
  Bytes c = full;
  poke<uint64_t>(c, bf.dims, 0);
  poke<uint64_t>(c, bf.dims + 8, uint64_t{1} << 40);
  poke<uint64_t>(c, bf.dims + 16, uint64_t{1} << 40);
  check_error(c, {"tensor 'blk.0.bf' has an absurd shape"});
  b = full;
  poke<uint64_t>(b, e.dims, uint64_t{1} << 31);
  poke<uint64_t>(b, e.dims + 8, uint64_t{1} << 31);  // 2^62 elements of 4 bytes
  check_error(b, {"tensor 'token_embd.weight'", "byte size overflows"});

  // A row that is not a whole number of blocks.
  const InfoAt q = info_at(full, "blk.0.attn_q.weight");
  b = full;
  poke<uint64_t>(b, q.dims, 33);
  check_error(b, {"tensor 'blk.0.attn_q.weight'", "row length 33", "q4_0 block size 32"});
}

TEST_CASE("gguf: bad general.alignment: 0, 3, wrong type") {
  const Bytes full = sample();
  const KvAt a = kv_at(full, "general.alignment");
  REQUIRE(peek<uint32_t>(full, a.type) == static_cast<uint32_t>(GgufType::UINT32));
  Bytes b = full;
  poke<uint32_t>(b, a.value, 0);
  MESSAGE(check_error(b, {"general.alignment", "is 0, not a power of two"}));
  poke<uint32_t>(b, a.value, 3);
  check_error(b, {"general.alignment", "is 3, not a power of two"});
  b = full;
  poke<uint32_t>(b, a.type, static_cast<uint32_t>(GgufType::INT32));
  MESSAGE(check_error(b, {"general.alignment", "must be uint32, found int32"}));
  // Written through the writer: a string, and a uint64.
  GgufWriter w;
  w.set_str("general.alignment", "32");
  check_error(gguf_file_bytes(w), {"general.alignment", "must be uint32, found string"});
  GgufWriter w2;
  w2.set_u64("general.alignment", 32);
  check_error(gguf_file_bytes(w2), {"general.alignment", "must be uint32, found uint64"});
  // A bigger alignment is honoured; offsets must then be multiples of it.
  GgufWriter w3;
  w3.set_alignment(4096);
  w3.add_tensor("a", GgmlType::F32, {3});
  w3.add_tensor("b", GgmlType::F32, {3});
  Bytes c = gguf_file_bytes(w3);
  auto f = parse(c);
  REQUIRE_MESSAGE(f.has_value(), f.error().message);
  CHECK((*f)->alignment() == 4096);
  CHECK((*f)->data_offset() == 4096);
  CHECK((*f)->find_tensor("b")->rel_offset == 4096);
  poke<uint64_t>(c, info_at(c, "b").offset, 32);
  check_error(c, {"tensor 'b'", "not a multiple of the alignment 4096"});
}

TEST_CASE("gguf: arrays nested too deep") {
  GgufValue v = gguf_array<uint8_t>(GgufType::UINT8, {1});
  for (int d = 0; d < 16; ++d) v = gguf_nested_array({v});  // 17 arrays deep
  GgufWriter w;
  w.set("deep", v);
  check_error(gguf_file_bytes(w), {"metadata 'deep'", "nested more than 16 deep"});
}

TEST_CASE("gguf: a long or binary name is quoted and shortened in messages") {
  const std::string name(5000, 'n');
  GgufWriter w;
  w.add_tensor(name, GgmlType::F32, {4});
  Bytes b = gguf_file_bytes(w);
  poke<uint32_t>(b, info_at(b, name).type, 99);
  std::string m = check_error(b, {"has unknown type id 99", "nnn...'"});
  CHECK(m.size() < 300);
  GgufWriter w2;
  w2.set_u32(std::string("k\x01\n", 3), 1);
  w2.set_u32(std::string("k\x01\n", 3) + "x", 1);
  Bytes c = gguf_file_bytes(w2);
  c[find_str(c, std::string("k\x01\nx", 4)) + 3] = 0;
  // Not a duplicate (the last byte differs) but the key is binary: accepted.
  CHECK(parse(c).has_value());
  c.resize(kv_at(c, std::string("k\x01\n\0", 4)).value + 2);  // inside its value
  MESSAGE(check_error(c, {"metadata 'k\\x01\\x0a\\x00'"}));
}

TEST_CASE("gguf: minimal files: header only, vocab only, non-UTF-8 keys, empty tensors") {
  // Exactly the header: no tensors, no metadata, no padding.
  Bytes h = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  h.resize(24, 0);
  auto f = parse(h);
  REQUIRE_MESSAGE(f.has_value(), f.error().message);
  CHECK((*f)->metadata().empty());
  CHECK((*f)->tensors().empty());
  CHECK((*f)->data_offset() == 24);

  // A vocabulary: metadata, no tensors, the file ending right after the
  // metadata (no padding, no data section).
  GgufWriter w;
  w.set_arr_str("tokenizer.ggml.tokens", {"<s>", "</s>", "a"});
  w.set_str(std::string("bad\xff\xfe utf8"), std::string("\xc3\x28 also bad"));
  Bytes v = gguf_file_bytes(w);
  const size_t end = kv_at(v, "bad\xff\xfe utf8").value + 8 + 12;
  REQUIRE(end < v.size());  // the writer padded it
  v.resize(end);
  f = parse(v);
  REQUIRE_MESSAGE(f.has_value(), f.error().message);
  CHECK((*f)->data_offset() == end);
  CHECK(*(*f)->get_string("bad\xff\xfe utf8") == "\xc3\x28 also bad");

  // With a tensor, the padding may not be missing.
  GgufWriter t;
  t.add_tensor("x", GgmlType::F32, {0});
  Bytes e = gguf_file_bytes(t);
  REQUIRE(e.size() % 32 == 0);
  CHECK(parse(e).has_value());
  e.resize(info_at(e, "x").end);
  check_error(e, {"padding before the data section"});

  // Empty tensors (a dimension of 0) are accepted and take no bytes.
  GgufWriter z;
  z.add_tensor("z0", GgmlType::Q4_K, {0, 5});
  z.add_tensor("z1", GgmlType::F32, {7, 0, 3});
  z.add_tensor("x", GgmlType::F32, {2});
  Bytes zb = gguf_file_bytes(z);
  f = parse(zb);
  REQUIRE_MESSAGE(f.has_value(), f.error().message);
  const GgufTensor* z0 = (*f)->find_tensor("z0");
  CHECK(z0->bytes == 0);
  CHECK(z0->elements() == 0);
  CHECK(z0->rows() == 5);
  CHECK((*f)->find_tensor("z1")->rows() == 0);
  CHECK((*f)->find_tensor("x")->rows() == 1);
  // An empty tensor still may not lie past the data section.
  poke<uint64_t>(zb, info_at(zb, "z1").offset, 4096);
  check_error(zb, {"tensor 'z1'", "outside the data section"});
}

TEST_CASE("gguf: open() errors name the path") {
  auto f = GgufFile::open("/nonexistent/dir/model.gguf");
  REQUIRE(!f.has_value());
  CHECK(contains(f.error().message, "/nonexistent/dir/model.gguf: cannot open"));
  f = GgufFile::open("/tmp");
  REQUIRE(!f.has_value());
  CHECK(contains(f.error().message, "/tmp: not a regular file"));
}
