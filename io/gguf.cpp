// GGUF parsing. Every read goes through Cursor, which checks the remaining
// length first, so a truncated or lying file becomes an error naming the
// field, never an out-of-bounds read. Counts are checked against the bytes
// left before anything is allocated, and containers grow only as elements are
// actually read, so an absurd count cannot exhaust memory: what is allocated
// stays proportional to the bytes consumed.
//
// Decisions, where GGUF or ggml leave room:
// - Versions 2 and 3 are read (same layout, 64-bit counts). Version 1 had
//   32-bit counts and is rejected; so is a byte-swapped (big-endian) header.
// - A tensor has 1 to 4 dimensions (ggml writes n_dims >= 1). A dimension of 0
//   is accepted, as ggml allows empty tensors: the tensor has 0 bytes, takes no
//   room in the data section and overlaps nothing. The product of the non-zero
//   dimensions must fit in int64_t, as ggml keeps sizes in int64_t.
// - Tensor offsets must be multiples of general.alignment (a uint32 power of
//   two, default 32); tensors may lie in any order but must not overlap.
// - A file without tensors (a vocabulary) may end before the data section.
// - Strings are bytes: keys and values that are not UTF-8 are accepted.
#include "io/gguf.h"
#include "io/map_guard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string_view>

namespace ls {
namespace {

constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
constexpr int kMaxNesting = 16;   // arrays of arrays, deeper is surely garbage
constexpr uint64_t kMaxNameLen = 64 * 1024;
constexpr uint64_t kNoIndex = UINT64_MAX;
constexpr uint64_t kReserveCap = 4096;  // reserve no more than this up front
// Smallest encodings: a KV is a key length (8) and a value type (4); a tensor
// info is a name length (8), n_dims (4), one dimension (8), type (4), offset (8).
constexpr uint64_t kMinKvBytes = 12;
constexpr uint64_t kMinTensorInfoBytes = 32;

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}

// A name from the file, quoted for an error message: at most 80 bytes, control
// bytes escaped, so a 64 KiB or binary name cannot push the rest of the
// message out of make_error's buffer or garble a terminal.
std::string quoted(std::string_view s) {
  std::string out = "'";
  for (size_t k = 0; k < s.size() && k < 80; ++k) {
    auto ch = static_cast<unsigned char>(s[k]);
    if (ch < 0x20 || ch == 0x7f || ch == '\'' || ch == '\\') {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", ch);
      out += b;
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (s.size() > 80) out += "...";
  return out + "'";
}

// What is being read, formatted only when a read fails, so the hot path (a
// 150k-entry vocabulary) builds no strings.
struct Field {
  std::string_view what;      // "metadata 'tokenizer.ggml.tokens'"
  const char* part = "";      // " length", " element count", ...
  uint64_t index = kNoIndex;  // array element
  std::string str() const {
    std::string s(what);
    if (index != kNoIndex) {
      s += '[';
      s += std::to_string(index);
      s += ']';
    }
    s += part;
    return s;
  }
};

class Cursor {
 public:
  Cursor(const uint8_t* p, uint64_t size, const std::string& file)
      : p_(p), size_(size), file_(file) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  Status need(uint64_t n, const Field& f) const {
    if (n > left())
      return make_error("%s: truncated at byte %llu while reading %s (needs %llu bytes, %llu left)",
                        file_.c_str(), (unsigned long long)pos_, f.str().c_str(),
                        (unsigned long long)n, (unsigned long long)left());
    return ok();
  }
  template <typename T>
  Status read(T* out, const Field& f) {
    LS_TRY(need(sizeof(T), f));
    std::memcpy(out, p_ + pos_, sizeof(T));  // GGUF is little-endian, as is every host we build for
    pos_ += sizeof(T);
    return ok();
  }
  Status read_string(std::string* out, std::string_view what, uint64_t index = kNoIndex,
                     uint64_t max_len = UINT64_MAX) {
    uint64_t len = 0;
    LS_TRY(read(&len, Field{what, " length", index}));
    if (len > max_len)
      return make_error("%s: %s is %llu bytes long, more than the %llu allowed", file_.c_str(),
                        Field{what, "", index}.str().c_str(), (unsigned long long)len,
                        (unsigned long long)max_len);
    if (len > left())
      return make_error(
          "%s: truncated at byte %llu while reading %s (a string of %llu bytes, "
          "%llu left)",
          file_.c_str(), (unsigned long long)pos_, Field{what, "", index}.str().c_str(),
          (unsigned long long)len, (unsigned long long)left());
    out->assign(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return ok();
  }
  Status read_bytes(std::vector<uint8_t>* out, uint64_t n, const Field& f) {
    LS_TRY(need(n, f));
    out->assign(p_ + pos_, p_ + pos_ + n);
    pos_ += n;
    return ok();
  }

 private:
  const uint8_t* p_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& file_;
};

bool valid_type(uint32_t t) {
  return t <= static_cast<uint32_t>(GgufType::FLOAT64);
}

// Smallest number of bytes one element of this type can occupy on disk.
uint64_t min_elem_bytes(GgufType t) {
  switch (t) {
    case GgufType::STRING:
      return 8;  // length
    case GgufType::ARRAY:
      return 12;  // element type + count
    default:
      return gguf_scalar_bytes(t);
  }
}

// double -> int64_t without undefined behaviour: NaN is 0, out of range saturates.
int64_t saturating_int(double f) {
  if (std::isnan(f)) return 0;
  if (f >= 9223372036854775807.0) return INT64_MAX;
  if (f <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(f);
}

Status read_scalar(Cursor& c, GgufType type, GgufValue* v, const Field& f) {
  v->type = type;
  switch (type) {
    case GgufType::UINT8: {
      uint8_t x = 0;
      LS_TRY(c.read(&x, f));
      v->u = x;
      break;
    }
    case GgufType::INT8: {
      int8_t x = 0;
      LS_TRY(c.read(&x, f));
      v->i = x;
      break;
    }
    case GgufType::UINT16: {
      uint16_t x = 0;
      LS_TRY(c.read(&x, f));
      v->u = x;
      break;
    }
    case GgufType::INT16: {
      int16_t x = 0;
      LS_TRY(c.read(&x, f));
      v->i = x;
      break;
    }
    case GgufType::UINT32: {
      uint32_t x = 0;
      LS_TRY(c.read(&x, f));
      v->u = x;
      break;
    }
    case GgufType::INT32: {
      int32_t x = 0;
      LS_TRY(c.read(&x, f));
      v->i = x;
      break;
    }
    case GgufType::UINT64: {
      uint64_t x = 0;
      LS_TRY(c.read(&x, f));
      v->u = x;
      break;
    }
    case GgufType::INT64: {
      int64_t x = 0;
      LS_TRY(c.read(&x, f));
      v->i = x;
      break;
    }
    case GgufType::FLOAT32: {
      float x = 0;
      LS_TRY(c.read(&x, f));
      v->f = x;
      break;
    }
    case GgufType::FLOAT64: {
      double x = 0;
      LS_TRY(c.read(&x, f));
      v->f = x;
      break;
    }
    case GgufType::BOOL: {
      uint8_t x = 0;
      LS_TRY(c.read(&x, f));
      v->u = x ? 1 : 0;
      break;
    }
    default:
      break;
  }
  return ok();
}

// An array value; WHAT names it ("metadata 'k'", "metadata 'k'[3]" when nested).
Status read_array(Cursor& c, GgufValue* v, const std::string& file, const std::string& what,
                  int depth) {
  if (depth >= kMaxNesting)
    return make_error("%s: %s: arrays nested more than %d deep", file.c_str(), what.c_str(),
                      kMaxNesting);
  uint32_t et = 0;
  uint64_t n = 0;
  LS_TRY(c.read(&et, Field{what, " element type"}));
  if (!valid_type(et))
    return make_error("%s: %s: unknown array element type %u", file.c_str(), what.c_str(), et);
  LS_TRY(c.read(&n, Field{what, " element count"}));
  auto arr = std::make_shared<GgufArray>();
  arr->elem_type = static_cast<GgufType>(et);
  arr->count = n;
  uint64_t min_bytes = 0;
  if (mul_overflows(n, min_elem_bytes(arr->elem_type), &min_bytes) || min_bytes > c.left())
    return make_error(
        "%s: %s: an array of %llu %s elements cannot fit in the %llu bytes left at "
        "byte %llu (the count is absurd or the file truncated)",
        file.c_str(), what.c_str(), (unsigned long long)n, gguf_type_name(arr->elem_type),
        (unsigned long long)c.left(), (unsigned long long)c.pos());
  if (arr->elem_type == GgufType::STRING) {
    arr->strings.reserve(std::min(n, kReserveCap));
    for (uint64_t k = 0; k < n; ++k) {
      std::string s;
      LS_TRY(c.read_string(&s, what, k));
      arr->strings.push_back(std::move(s));
    }
  } else if (arr->elem_type == GgufType::ARRAY) {
    arr->arrays.reserve(std::min(n, kReserveCap));
    for (uint64_t k = 0; k < n; ++k) {
      GgufValue e;
      LS_TRY(read_array(c, &e, file, Field{what, "", k}.str(), depth + 1));
      arr->arrays.push_back(std::move(e));
    }
  } else {
    LS_TRY(c.read_bytes(&arr->raw, min_bytes, Field{what, " elements"}));
  }
  v->type = GgufType::ARRAY;
  v->arr = std::move(arr);
  return ok();
}

Status read_value(Cursor& c, GgufType type, GgufValue* v, const std::string& file,
                  const std::string& what) {
  if (type == GgufType::STRING) {
    v->type = type;
    return c.read_string(&v->s, what);
  }
  if (type == GgufType::ARRAY) return read_array(c, v, file, what, 0);
  return read_scalar(c, type, v, Field{what});
}

}  // namespace

const char* gguf_type_name(GgufType t) {
  static const char* names[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                "int32",  "float32", "bool",   "string", "array",
                                "uint64", "int64",   "float64"};
  auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

uint32_t gguf_scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::BOOL:
      return 1;
    case GgufType::UINT16:
    case GgufType::INT16:
      return 2;
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::FLOAT32:
      return 4;
    case GgufType::UINT64:
    case GgufType::INT64:
    case GgufType::FLOAT64:
      return 8;
    default:
      return 0;
  }
}

double GgufArray::number(uint64_t i) const {
  const uint8_t* p = raw.data() + i * gguf_scalar_bytes(elem_type);
  switch (elem_type) {
    case GgufType::FLOAT32: {
      float x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case GgufType::FLOAT64: {
      double x;
      std::memcpy(&x, p, 8);
      return x;
    }
    case GgufType::UINT64: {
      uint64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
    default:
      return static_cast<double>(integer(i));
  }
}

int64_t GgufArray::integer(uint64_t i) const {
  const uint8_t* p = raw.data() + i * gguf_scalar_bytes(elem_type);
  switch (elem_type) {
    case GgufType::UINT8:
      return p[0];
    case GgufType::BOOL:
      return p[0] != 0;
    case GgufType::INT8:
      return static_cast<int8_t>(p[0]);
    case GgufType::UINT16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      return x;
    }
    case GgufType::INT16: {
      int16_t x;
      std::memcpy(&x, p, 2);
      return x;
    }
    case GgufType::UINT32: {
      uint32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case GgufType::INT32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case GgufType::UINT64: {
      uint64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<int64_t>(x);
    }
    case GgufType::INT64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return x;
    }
    case GgufType::FLOAT32:
    case GgufType::FLOAT64:
      return saturating_int(number(i));
    default:
      return 0;
  }
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::UINT16:
    case GgufType::INT16:
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::UINT64:
    case GgufType::INT64:
      return true;
    default:
      return false;
  }
}
bool GgufValue::is_number() const {
  return is_integer() || type == GgufType::FLOAT32 || type == GgufType::FLOAT64 ||
         type == GgufType::BOOL;
}
double GgufValue::as_double() const {
  switch (type) {
    case GgufType::FLOAT32:
    case GgufType::FLOAT64:
      return f;
    case GgufType::INT8:
    case GgufType::INT16:
    case GgufType::INT32:
    case GgufType::INT64:
      return static_cast<double>(i);
    default:
      return static_cast<double>(u);
  }
}
int64_t GgufValue::as_int() const {
  switch (type) {
    case GgufType::INT8:
    case GgufType::INT16:
    case GgufType::INT32:
    case GgufType::INT64:
      return i;
    case GgufType::FLOAT32:
    case GgufType::FLOAT64:
      return saturating_int(f);
    default:
      return static_cast<int64_t>(u);
  }
}

std::string GgufValue::to_string(size_t max_elems) const {
  switch (type) {
    case GgufType::STRING: {
      std::string out = "\"";
      for (size_t k = 0; k < s.size() && k < 200; ++k) {
        char ch = s[k];
        if (ch == '\n')
          out += "\\n";
        else if (ch == '"')
          out += "\\\"";
        else
          out += ch;
      }
      if (s.size() > 200) out += "...";
      return out + "\"";
    }
    case GgufType::ARRAY: {
      if (!arr) return "[]";
      std::string out = std::string("[") + gguf_type_name(arr->elem_type) + " x " +
                        std::to_string(arr->count) + "]";
      if (arr->count == 0) return out;
      out += " ";
      for (uint64_t k = 0; k < arr->count && k < max_elems; ++k) {
        if (k) out += ", ";
        if (arr->elem_type == GgufType::STRING) {
          GgufValue e;
          e.type = GgufType::STRING;
          e.s = arr->strings[k];
          out += e.to_string();
        } else if (arr->elem_type == GgufType::ARRAY) {
          out += arr->arrays[k].to_string(max_elems);
        } else if (arr->elem_type == GgufType::FLOAT32 || arr->elem_type == GgufType::FLOAT64) {
          char b[32];
          std::snprintf(b, sizeof b, "%g", arr->number(k));
          out += b;
        } else if (arr->elem_type == GgufType::UINT64) {
          out += std::to_string(static_cast<uint64_t>(arr->integer(k)));
        } else if (arr->elem_type == GgufType::BOOL) {
          out += arr->integer(k) ? "true" : "false";
        } else {
          out += std::to_string(arr->integer(k));
        }
      }
      if (arr->count > max_elems) out += ", ...";
      return out;
    }
    case GgufType::FLOAT32:
    case GgufType::FLOAT64: {
      char b[32];
      std::snprintf(b, sizeof b, "%g", f);
      return b;
    }
    case GgufType::BOOL:
      return u ? "true" : "false";
    case GgufType::UINT8:
    case GgufType::UINT16:
    case GgufType::UINT32:
    case GgufType::UINT64:
      return std::to_string(u);
    default:
      return std::to_string(as_int());
  }
}

uint64_t GgufTensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;  // checked for overflow when parsed
  return n;
}

uint64_t GgufTensor::rows() const {
  if (shape.empty()) return 0;
  uint64_t n = 1;  // not elements() / ne[0]: ne[0] may be 0
  for (size_t d = 1; d < shape.size(); ++d) n *= shape[d];
  return n;
}

GgufFile::~GgufFile() {
  unmap_guarded(map_, size_);
}

Expected<std::shared_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  auto m = map_file_guarded(path);
  if (!m) return m.error();
  std::shared_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->size_ = m->size;
  f->map_ = m->map;
  f->base_ = static_cast<const uint8_t*>(m->map);
  LS_TRY(f->parse_all());
  return f;
}

Expected<std::shared_ptr<GgufFile>> GgufFile::parse(std::span<const uint8_t> bytes,
                                                    const std::string& name) {
  std::shared_ptr<GgufFile> f(new GgufFile());
  f->path_ = name;
  f->base_ = bytes.data();
  f->size_ = bytes.size();
  LS_TRY(f->parse_all());
  return f;
}

Status GgufFile::parse_all() {
  const std::string& file = path_;
  Cursor c(base_, size_, file);

  // ---- Header: magic, version, counts.
  LS_TRY(c.need(4, Field{"magic"}));
  if (std::memcmp(base_, "GGUF", 4) != 0) {
    const uint8_t* m = base_;
    return make_error("%s: not a GGUF file (magic is %02x %02x %02x %02x, expected \"GGUF\")",
                      file.c_str(), m[0], m[1], m[2], m[3]);
  }
  uint32_t magic = 0;
  LS_TRY(c.read(&magic, Field{"magic"}));
  LS_TRY(c.read(&version_, Field{"version"}));
  if (version_ != 2 && version_ != 3) {
    if (version_ == 1)
      return make_error(
          "%s: GGUF version 1 (32-bit counts) is not supported; convert the file "
          "with a newer llama.cpp",
          file.c_str());
    uint32_t swapped = __builtin_bswap32(version_);
    if (swapped >= 1 && swapped <= 3)
      return make_error(
          "%s: big-endian GGUF files are not supported (version field reads %u "
          "byte-swapped)",
          file.c_str(), swapped);
    return make_error("%s: unsupported GGUF version %u (supported: 2, 3)", file.c_str(), version_);
  }
  uint64_t n_tensors = 0, n_kv = 0;
  LS_TRY(c.read(&n_tensors, Field{"tensor count"}));
  LS_TRY(c.read(&n_kv, Field{"metadata count"}));
  // Checked before anything is read: an absurd count is reported as such,
  // not as truncation after the first few entries.
  uint64_t kv_min = 0, tensor_min = 0, all_min = 0;
  if (mul_overflows(n_kv, kMinKvBytes, &kv_min) || kv_min > c.left())
    return make_error(
        "%s: metadata count %llu needs more than the %llu bytes left in the file "
        "(the count is absurd or the file truncated)",
        file.c_str(), (unsigned long long)n_kv, (unsigned long long)c.left());
  if (mul_overflows(n_tensors, kMinTensorInfoBytes, &tensor_min) || tensor_min > c.left())
    return make_error(
        "%s: tensor count %llu needs more than the %llu bytes left in the file "
        "(the count is absurd or the file truncated)",
        file.c_str(), (unsigned long long)n_tensors, (unsigned long long)c.left());
  if (add_overflows(kv_min, tensor_min, &all_min) || all_min > c.left())
    return make_error(
        "%s: metadata count %llu and tensor count %llu need more than the %llu "
        "bytes left in the file (a count is absurd or the file truncated)",
        file.c_str(), (unsigned long long)n_kv, (unsigned long long)n_tensors,
        (unsigned long long)c.left());

  // ---- Metadata.
  kv_.reserve(std::min(n_kv, kReserveCap));
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key;
    LS_TRY(c.read_string(&key, "metadata key #" + std::to_string(k), kNoIndex, kMaxNameLen));
    const std::string what = "metadata " + quoted(key);
    uint32_t t = 0;
    LS_TRY(c.read(&t, Field{what, " value type"}));
    if (!valid_type(t))
      return make_error("%s: %s has unknown value type %u", file.c_str(), what.c_str(), t);
    if (kv_index_.count(key)) return make_error("%s: %s appears twice", file.c_str(), what.c_str());
    GgufValue v;
    LS_TRY(read_value(c, static_cast<GgufType>(t), &v, file, what));
    kv_index_[key] = kv_.size();
    kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const GgufValue* a = find("general.alignment")) {
    if (a->type != GgufType::UINT32)
      return make_error("%s: metadata 'general.alignment' must be uint32, found %s", file.c_str(),
                        gguf_type_name(a->type));
    if (a->u == 0 || (a->u & (a->u - 1)) != 0)
      return make_error("%s: metadata 'general.alignment' is %llu, not a power of two",
                        file.c_str(), (unsigned long long)a->u);
    alignment_ = a->u;
  }

  // ---- Tensor infos.
  tensors_.reserve(std::min(n_tensors, kReserveCap));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensor t;
    LS_TRY(c.read_string(&t.name, "name of tensor #" + std::to_string(k), kNoIndex, kMaxNameLen));
    const std::string tn = "tensor " + quoted(t.name);
    if (tensor_index_.count(t.name))
      return make_error("%s: %s appears twice", file.c_str(), tn.c_str());
    uint32_t n_dims = 0;
    LS_TRY(c.read(&n_dims, Field{tn, " dimension count"}));
    if (n_dims == 0 || n_dims > kMaxDims)
      return make_error("%s: %s has %u dimensions (1 to %u allowed)", file.c_str(), tn.c_str(),
                        n_dims, kMaxDims);
    t.shape.resize(n_dims);
    uint64_t elems = 1;
    uint64_t nonzero = 1;  // product of the non-zero dims, so rows() cannot overflow either
    for (uint32_t d = 0; d < n_dims; ++d) {
      const std::string dim = " dimension " + std::to_string(d);
      LS_TRY(c.read(&t.shape[d], Field{tn, dim.c_str()}));
      // ggml keeps sizes in int64_t.
      if (mul_overflows(nonzero, std::max<uint64_t>(t.shape[d], 1), &nonzero) ||
          nonzero > static_cast<uint64_t>(INT64_MAX))
        return make_error(
            "%s: %s has an absurd shape: the element count overflows at dimension "
            "%u (%llu)",
            file.c_str(), tn.c_str(), d, (unsigned long long)t.shape[d]);
      elems *= t.shape[d];  // <= nonzero, cannot overflow
    }
    uint32_t type = 0;
    LS_TRY(c.read(&type, Field{tn, " type"}));
    auto traits = ggml_type_traits(type);
    if (!traits) {
      if (const char* known = ggml_type_id_name(type))
        return make_error("%s: %s has type %s (id %u), which layerstream does not support",
                          file.c_str(), tn.c_str(), known, type);
      return make_error("%s: %s has unknown type id %u", file.c_str(), tn.c_str(), type);
    }
    t.type = static_cast<GgmlType>(type);
    if (t.shape[0] % traits->block_elems != 0)
      return make_error("%s: %s: row length %llu is not a multiple of the %s block size %u",
                        file.c_str(), tn.c_str(), (unsigned long long)t.shape[0], traits->name,
                        traits->block_elems);
    LS_TRY(c.read(&t.rel_offset, Field{tn, " offset"}));
    if (t.rel_offset % alignment_ != 0)
      return make_error("%s: %s: offset %llu is not a multiple of the alignment %llu", file.c_str(),
                        tn.c_str(), (unsigned long long)t.rel_offset,
                        (unsigned long long)alignment_);
    if (mul_overflows(elems / traits->block_elems, traits->block_bytes, &t.bytes))
      return make_error("%s: %s: byte size overflows (%llu elements of %s)", file.c_str(),
                        tn.c_str(), (unsigned long long)elems, traits->name);
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  // ---- Data section: it starts at the next multiple of the alignment.
  const uint64_t pos = c.pos();
  const uint64_t pad = (alignment_ - pos % alignment_) % alignment_;
  data_offset_ = pos + pad;  // pos <= size_ and pad < 2^32: no overflow
  if (data_offset_ > size_) {
    if (!tensors_.empty())
      return make_error(
          "%s: truncated at byte %llu while reading the padding before the data "
          "section (which starts at byte %llu)",
          file.c_str(), (unsigned long long)size_, (unsigned long long)data_offset_);
    data_offset_ = size_;  // a vocab-only file may end right after its metadata
  }
  const uint64_t data_size = size_ - data_offset_;

  for (GgufTensor& t : tensors_) {
    uint64_t end = 0;
    if (add_overflows(t.rel_offset, t.bytes, &end) || end > data_size)
      return make_error(
          "%s: tensor %s (%llu bytes at data offset %llu) lies outside the data "
          "section (%llu bytes): the file is truncated or corrupt",
          file.c_str(), quoted(t.name).c_str(), (unsigned long long)t.bytes,
          (unsigned long long)t.rel_offset, (unsigned long long)data_size);
    t.offset = data_offset_ + t.rel_offset;
  }
  // Overlap: walk the extents by offset, keeping the furthest end seen so far
  // (not just the previous one: an empty tensor in between must not hide an overlap).
  std::vector<const GgufTensor*> by_off;
  by_off.reserve(tensors_.size());
  for (const GgufTensor& t : tensors_)
    if (t.bytes > 0) by_off.push_back(&t);
  std::sort(by_off.begin(), by_off.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->rel_offset < b->rel_offset; });
  const GgufTensor* furthest = nullptr;
  for (const GgufTensor* b : by_off) {
    if (furthest && b->rel_offset < furthest->rel_offset + furthest->bytes)
      return make_error("%s: tensors %s and %s overlap in the data section", file.c_str(),
                        quoted(furthest->name).c_str(), quoted(b->name).c_str());
    if (!furthest || b->rel_offset + b->bytes > furthest->rel_offset + furthest->bytes)
      furthest = b;
  }
  return ok();
}
const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Expected<int64_t> GgufFile::get_int(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return make_error("%s: metadata '%s' is missing", path_.c_str(), key.c_str());
  if (!v->is_integer())
    return make_error("%s: metadata '%s' should be an integer, found %s", path_.c_str(),
                      key.c_str(), gguf_type_name(v->type));
  if (v->type == GgufType::UINT64 && v->u > static_cast<uint64_t>(INT64_MAX))
    return make_error("%s: metadata '%s' is out of range", path_.c_str(), key.c_str());
  return v->as_int();
}

Expected<double> GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return make_error("%s: metadata '%s' is missing", path_.c_str(), key.c_str());
  if (!v->is_number() || v->type == GgufType::BOOL)
    return make_error("%s: metadata '%s' should be a number, found %s", path_.c_str(), key.c_str(),
                      gguf_type_name(v->type));
  return v->as_double();
}

Expected<std::string> GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return make_error("%s: metadata '%s' is missing", path_.c_str(), key.c_str());
  if (v->type != GgufType::STRING)
    return make_error("%s: metadata '%s' should be a string, found %s", path_.c_str(), key.c_str(),
                      gguf_type_name(v->type));
  return v->s;
}

Expected<bool> GgufFile::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return make_error("%s: metadata '%s' is missing", path_.c_str(), key.c_str());
  if (v->type != GgufType::BOOL)
    return make_error("%s: metadata '%s' should be a bool, found %s", path_.c_str(), key.c_str(),
                      gguf_type_name(v->type));
  return v->u != 0;
}

Expected<const GgufArray*> GgufFile::get_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return make_error("%s: metadata '%s' is missing", path_.c_str(), key.c_str());
  if (v->type != GgufType::ARRAY)
    return make_error("%s: metadata '%s' should be an array, found %s", path_.c_str(), key.c_str(),
                      gguf_type_name(v->type));
  return static_cast<const GgufArray*>(v->arr.get());
}

}  // namespace ls
