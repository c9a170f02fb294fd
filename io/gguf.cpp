// GGUF parsing. Every read goes through Cursor, which checks the remaining
// length first, so a truncated or lying file becomes an error naming the
// field, never an out-of-bounds read. Counts are checked against the bytes
// left before anything is allocated, so an absurd count cannot exhaust memory.
#include "io/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ls {
namespace {

constexpr uint32_t kMaxDims = 4;        // GGML_MAX_DIMS
constexpr int kMaxNesting = 16;         // arrays of arrays, deeper is surely garbage
constexpr uint64_t kMaxNameLen = 64 * 1024;

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_add_overflow(a, b, out); }

class Cursor {
 public:
  Cursor(const uint8_t* p, uint64_t size, const std::string& file) : p_(p), size_(size), file_(file) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  Status need(uint64_t n, const std::string& what) const {
    if (n > left())
      return make_error("%s: truncated at byte %llu while reading %s (needs %llu bytes, %llu left)",
                        file_.c_str(), (unsigned long long)pos_, what.c_str(),
                        (unsigned long long)n, (unsigned long long)left());
    return ok();
  }
  template <typename T>
  Status read(T* out, const std::string& what) {
    LS_TRY(need(sizeof(T), what));
    std::memcpy(out, p_ + pos_, sizeof(T));  // GGUF is little-endian, as is every host we build for
    pos_ += sizeof(T);
    return ok();
  }
  Status read_string(std::string* out, const std::string& what, uint64_t max_len = UINT64_MAX) {
    uint64_t len = 0;
    LS_TRY(read(&len, what + " length"));
    if (len > max_len)
      return make_error("%s: %s is %llu bytes long, more than the %llu allowed", file_.c_str(),
                        what.c_str(), (unsigned long long)len, (unsigned long long)max_len);
    LS_TRY(need(len, what));
    out->assign(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return ok();
  }
  Status read_bytes(std::vector<uint8_t>* out, uint64_t n, const std::string& what) {
    LS_TRY(need(n, what));
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

bool valid_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::FLOAT64); }

// Smallest number of bytes one element of this type can occupy on disk.
uint64_t min_elem_bytes(GgufType t) {
  switch (t) {
    case GgufType::STRING: return 8;
    case GgufType::ARRAY: return 12;
    default: return gguf_scalar_bytes(t);
  }
}

Status read_value(Cursor& c, GgufType type, GgufValue* v, const std::string& file,
                  const std::string& what, int depth);

Status read_scalar(Cursor& c, GgufType type, GgufValue* v, const std::string& what) {
  v->type = type;
  switch (type) {
    case GgufType::UINT8: { uint8_t x = 0; LS_TRY(c.read(&x, what)); v->u = x; break; }
    case GgufType::INT8: { int8_t x = 0; LS_TRY(c.read(&x, what)); v->i = x; break; }
    case GgufType::UINT16: { uint16_t x = 0; LS_TRY(c.read(&x, what)); v->u = x; break; }
    case GgufType::INT16: { int16_t x = 0; LS_TRY(c.read(&x, what)); v->i = x; break; }
    case GgufType::UINT32: { uint32_t x = 0; LS_TRY(c.read(&x, what)); v->u = x; break; }
    case GgufType::INT32: { int32_t x = 0; LS_TRY(c.read(&x, what)); v->i = x; break; }
    case GgufType::UINT64: { uint64_t x = 0; LS_TRY(c.read(&x, what)); v->u = x; break; }
    case GgufType::INT64: { int64_t x = 0; LS_TRY(c.read(&x, what)); v->i = x; break; }
    case GgufType::FLOAT32: { float x = 0; LS_TRY(c.read(&x, what)); v->f = x; break; }
    case GgufType::FLOAT64: { double x = 0; LS_TRY(c.read(&x, what)); v->f = x; break; }
    case GgufType::BOOL: { uint8_t x = 0; LS_TRY(c.read(&x, what)); v->u = x ? 1 : 0; break; }
    default: break;
  }
  return ok();
}

Status read_array(Cursor& c, GgufValue* v, const std::string& file, const std::string& what,
                  int depth) {
  if (depth >= kMaxNesting)
    return make_error("%s: %s: arrays nested more than %d deep", file.c_str(), what.c_str(),
                      kMaxNesting);
  uint32_t et = 0;
  uint64_t n = 0;
  LS_TRY(c.read(&et, what + " element type"));
  if (!valid_type(et))
    return make_error("%s: %s: unknown array element type %u", file.c_str(), what.c_str(), et);
  LS_TRY(c.read(&n, what + " element count"));
  auto arr = std::make_shared<GgufArray>();
  arr->elem_type = static_cast<GgufType>(et);
  arr->count = n;
  uint64_t min_bytes = 0;
  if (mul_overflows(n, min_elem_bytes(arr->elem_type), &min_bytes) || min_bytes > c.left())
    return make_error("%s: %s: array of %llu %s elements cannot fit in the %llu bytes left",
                      file.c_str(), what.c_str(), (unsigned long long)n,
                      gguf_type_name(arr->elem_type), (unsigned long long)c.left());
  if (arr->elem_type == GgufType::STRING) {
    arr->strings.resize(n);
    for (uint64_t k = 0; k < n; ++k) LS_TRY(c.read_string(&arr->strings[k], what + " element"));
  } else if (arr->elem_type == GgufType::ARRAY) {
    arr->arrays.resize(n);
    for (uint64_t k = 0; k < n; ++k) {
      arr->arrays[k].type = GgufType::ARRAY;
      LS_TRY(read_array(c, &arr->arrays[k], file, what + " element", depth + 1));
    }
  } else {
    LS_TRY(c.read_bytes(&arr->raw, min_bytes, what + " elements"));
  }
  v->type = GgufType::ARRAY;
  v->arr = std::move(arr);
  return ok();
}

Status read_value(Cursor& c, GgufType type, GgufValue* v, const std::string& file,
                  const std::string& what, int depth) {
  if (type == GgufType::STRING) {
    v->type = type;
    return c.read_string(&v->s, what);
  }
  if (type == GgufType::ARRAY) return read_array(c, v, file, what, depth);
  return read_scalar(c, type, v, what);
}

}  // namespace

const char* gguf_type_name(GgufType t) {
  static const char* names[] = {"uint8", "int8",  "uint16", "int16",  "uint32", "int32", "float32",
                                "bool",  "string", "array", "uint64", "int64",  "float64"};
  auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

uint32_t gguf_scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::UINT8: case GgufType::INT8: case GgufType::BOOL: return 1;
    case GgufType::UINT16: case GgufType::INT16: return 2;
    case GgufType::UINT32: case GgufType::INT32: case GgufType::FLOAT32: return 4;
    case GgufType::UINT64: case GgufType::INT64: case GgufType::FLOAT64: return 8;
    default: return 0;
  }
}

double GgufArray::number(uint64_t i) const {
  const uint8_t* p = raw.data() + i * gguf_scalar_bytes(elem_type);
  switch (elem_type) {
    case GgufType::FLOAT32: { float x; std::memcpy(&x, p, 4); return x; }
    case GgufType::FLOAT64: { double x; std::memcpy(&x, p, 8); return x; }
    default: return static_cast<double>(integer(i));
  }
}

int64_t GgufArray::integer(uint64_t i) const {
  const uint8_t* p = raw.data() + i * gguf_scalar_bytes(elem_type);
  switch (elem_type) {
    case GgufType::UINT8: case GgufType::BOOL: return p[0];
    case GgufType::INT8: return static_cast<int8_t>(p[0]);
    case GgufType::UINT16: { uint16_t x; std::memcpy(&x, p, 2); return x; }
    case GgufType::INT16: { int16_t x; std::memcpy(&x, p, 2); return x; }
    case GgufType::UINT32: { uint32_t x; std::memcpy(&x, p, 4); return x; }
    case GgufType::INT32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case GgufType::UINT64: { uint64_t x; std::memcpy(&x, p, 8); return static_cast<int64_t>(x); }
    case GgufType::INT64: { int64_t x; std::memcpy(&x, p, 8); return x; }
    case GgufType::FLOAT32: case GgufType::FLOAT64: return static_cast<int64_t>(number(i));
    default: return 0;
  }
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::UINT8: case GgufType::INT8: case GgufType::UINT16: case GgufType::INT16:
    case GgufType::UINT32: case GgufType::INT32: case GgufType::UINT64: case GgufType::INT64:
      return true;
    default: return false;
  }
}
bool GgufValue::is_number() const {
  return is_integer() || type == GgufType::FLOAT32 || type == GgufType::FLOAT64 ||
         type == GgufType::BOOL;
}
double GgufValue::as_double() const {
  if (type == GgufType::FLOAT32 || type == GgufType::FLOAT64) return f;
  return static_cast<double>(as_int());
}
int64_t GgufValue::as_int() const {
  switch (type) {
    case GgufType::INT8: case GgufType::INT16: case GgufType::INT32: case GgufType::INT64: return i;
    case GgufType::FLOAT32: case GgufType::FLOAT64: return static_cast<int64_t>(f);
    default: return static_cast<int64_t>(u);
  }
}

std::string GgufValue::to_string(size_t max_elems) const {
  switch (type) {
    case GgufType::STRING: {
      std::string out = "\"";
      for (size_t k = 0; k < s.size() && k < 200; ++k) {
        char ch = s[k];
        if (ch == '\n') out += "\\n";
        else if (ch == '"') out += "\\\"";
        else out += ch;
      }
      if (s.size() > 200) out += "...";
      return out + "\"";
    }
    case GgufType::ARRAY: {
      std::string out = std::string("[") + gguf_type_name(arr->elem_type) + " x " +
                        std::to_string(arr->count) + "]";
      if (arr->count == 0) return out;
      out += " ";
      for (uint64_t k = 0; k < arr->count && k < max_elems; ++k) {
        if (k) out += ", ";
        if (arr->elem_type == GgufType::STRING) {
          GgufValue e; e.type = GgufType::STRING; e.s = arr->strings[k];
          out += e.to_string();
        } else if (arr->elem_type == GgufType::ARRAY) {
          out += arr->arrays[k].to_string(max_elems);
        } else if (arr->elem_type == GgufType::FLOAT32 || arr->elem_type == GgufType::FLOAT64) {
          char b[32]; std::snprintf(b, sizeof b, "%g", arr->number(k)); out += b;
        } else {
          out += std::to_string(arr->integer(k));
        }
      }
      if (arr->count > max_elems) out += ", ...";
      return out;
    }
    case GgufType::FLOAT32: case GgufType::FLOAT64: {
      char b[32]; std::snprintf(b, sizeof b, "%g", f); return b;
    }
    case GgufType::BOOL: return u ? "true" : "false";
    default: return std::to_string(as_int());
  }
}

uint64_t GgufTensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;  // checked for overflow when parsed
  return n;
}

GgufFile::~GgufFile() {
  if (map_) munmap(map_, size_);
}

Expected<std::shared_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return make_error("%s: cannot stat: %s", path.c_str(), std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("%s: not a regular file", path.c_str());
  }
  std::shared_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->size_ = static_cast<uint64_t>(st.st_size);
  if (f->size_ > 0) {
    void* m = mmap(nullptr, f->size_, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return make_error("%s: cannot map: %s", path.c_str(), std::strerror(e));
    }
    f->map_ = m;
    f->base_ = static_cast<const uint8_t*>(m);
  }
  ::close(fd);
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
  uint8_t magic[4] = {};
  if (size_ < 4 || std::memcmp(base_, "GGUF", 4) != 0) {
    if (size_ >= 4) std::memcpy(magic, base_, 4);
    return make_error("%s: not a GGUF file (magic is %02x %02x %02x %02x, expected \"GGUF\")",
                      file.c_str(), magic[0], magic[1], magic[2], magic[3]);
  }
  LS_TRY(c.read(reinterpret_cast<uint32_t*>(magic), "magic"));
  LS_TRY(c.read(&version_, "version"));
  if (version_ != 2 && version_ != 3) {
    if (version_ == 1)
      return make_error("%s: GGUF version 1 is not supported (convert it with a newer llama.cpp)",
                        file.c_str());
    uint32_t swapped = __builtin_bswap32(version_);
    if (swapped == 2 || swapped == 3)
      return make_error("%s: big-endian GGUF files are not supported", file.c_str());
    return make_error("%s: unsupported GGUF version %u (supported: 2, 3)", file.c_str(), version_);
  }
  uint64_t n_tensors = 0, n_kv = 0;
  LS_TRY(c.read(&n_tensors, "tensor count"));
  LS_TRY(c.read(&n_kv, "metadata count"));
  // Each entry takes at least 8 (name length) + 4 (type) bytes on disk.
  if (n_kv > c.left() / 12)
    return make_error("%s: metadata count %llu is absurd for a file of %llu bytes", file.c_str(),
                      (unsigned long long)n_kv, (unsigned long long)size_);
  // A tensor info takes at least 8 + 4 + 4 + 8 bytes.
  if (n_tensors > c.left() / 24)
    return make_error("%s: tensor count %llu is absurd for a file of %llu bytes", file.c_str(),
                      (unsigned long long)n_tensors, (unsigned long long)size_);

  kv_.reserve(n_kv);
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key;
    const std::string what = "metadata key #" + std::to_string(k);
    LS_TRY(c.read_string(&key, what, kMaxNameLen));
    uint32_t t = 0;
    LS_TRY(c.read(&t, "type of metadata '" + key + "'"));
    if (!valid_type(t))
      return make_error("%s: metadata '%s' has unknown value type %u", file.c_str(), key.c_str(), t);
    GgufValue v;
    LS_TRY(read_value(c, static_cast<GgufType>(t), &v, file, "metadata '" + key + "'", 0));
    if (kv_index_.count(key))
      return make_error("%s: metadata key '%s' appears twice", file.c_str(), key.c_str());
    kv_index_[key] = kv_.size();
    kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const GgufValue* a = find("general.alignment")) {
    if (a->type != GgufType::UINT32)
      return make_error("%s: general.alignment must be uint32, found %s", file.c_str(),
                        gguf_type_name(a->type));
    if (a->u == 0 || (a->u & (a->u - 1)) != 0)
      return make_error("%s: general.alignment %llu is not a power of two", file.c_str(),
                        (unsigned long long)a->u);
    alignment_ = a->u;
  }

  tensors_.reserve(n_tensors);
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensor t;
    LS_TRY(c.read_string(&t.name, "name of tensor #" + std::to_string(k), kMaxNameLen));
    const std::string tn = "tensor '" + t.name + "'";
    uint32_t n_dims = 0;
    LS_TRY(c.read(&n_dims, tn + " dimension count"));
    if (n_dims == 0 || n_dims > kMaxDims)
      return make_error("%s: %s has %u dimensions (1 to %u allowed)", file.c_str(), tn.c_str(),
                        n_dims, kMaxDims);
    t.shape.resize(n_dims);
    uint64_t elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      LS_TRY(c.read(&t.shape[d], tn + " dimension " + std::to_string(d)));
      // ggml keeps sizes in int64_t.
      if (t.shape[d] > static_cast<uint64_t>(INT64_MAX) || mul_overflows(elems, t.shape[d], &elems) ||
          elems > static_cast<uint64_t>(INT64_MAX))
        return make_error("%s: %s has an absurd shape (element count overflows)", file.c_str(),
                          tn.c_str());
    }
    uint32_t type = 0;
    LS_TRY(c.read(&type, tn + " type"));
    auto traits = ggml_type_traits(type);
    if (!traits)
      return make_error("%s: %s has unknown type id %u", file.c_str(), tn.c_str(), type);
    t.type = static_cast<GgmlType>(type);
    if (t.shape[0] % traits->block_elems != 0)
      return make_error("%s: %s: row length %llu is not a multiple of the %s block size %u",
                        file.c_str(), tn.c_str(), (unsigned long long)t.shape[0], traits->name,
                        traits->block_elems);
    LS_TRY(c.read(&t.rel_offset, tn + " offset"));
    if (t.rel_offset % alignment_ != 0)
      return make_error("%s: %s: offset %llu is not a multiple of the alignment %llu",
                        file.c_str(), tn.c_str(), (unsigned long long)t.rel_offset,
                        (unsigned long long)alignment_);
    if (mul_overflows(elems / traits->block_elems, traits->block_bytes, &t.bytes))
      return make_error("%s: %s: byte size overflows", file.c_str(), tn.c_str());
    if (tensor_index_.count(t.name))
      return make_error("%s: tensor name '%s' appears twice", file.c_str(), t.name.c_str());
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment.
  uint64_t pos = c.pos();
  uint64_t pad = (alignment_ - pos % alignment_) % alignment_;
  data_offset_ = pos + pad;
  if (data_offset_ > size_) {
    if (!tensors_.empty())
      return make_error("%s: truncated: the data section would start at byte %llu, past the end (%llu)",
                        file.c_str(), (unsigned long long)data_offset_, (unsigned long long)size_);
    data_offset_ = size_;  // a vocab-only file may end right after its metadata
  }
  const uint64_t data_size = size_ - data_offset_;

  for (GgufTensor& t : tensors_) {
    uint64_t end = 0;
    if (add_overflows(t.rel_offset, t.bytes, &end) || end > data_size)
      return make_error("%s: tensor '%s' (%llu bytes at data offset %llu) lies outside the data "
                        "section (%llu bytes): the file is truncated or corrupt",
                        file.c_str(), t.name.c_str(), (unsigned long long)t.bytes,
                        (unsigned long long)t.rel_offset, (unsigned long long)data_size);
    t.offset = data_offset_ + t.rel_offset;
  }
  // Overlap: sort extents by offset and compare neighbours.
  std::vector<const GgufTensor*> by_off;
  by_off.reserve(tensors_.size());
  for (const GgufTensor& t : tensors_) by_off.push_back(&t);
  std::sort(by_off.begin(), by_off.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->rel_offset < b->rel_offset; });
  for (size_t k = 1; k < by_off.size(); ++k) {
    const GgufTensor* a = by_off[k - 1];
    const GgufTensor* b = by_off[k];
    if (a->bytes > 0 && b->bytes > 0 && a->rel_offset + a->bytes > b->rel_offset)
      return make_error("%s: tensors '%s' and '%s' overlap in the data section", file.c_str(),
                        a->name.c_str(), b->name.c_str());
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
