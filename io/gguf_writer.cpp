#include "io/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ls {
namespace {

class Buf {
 public:
  template <typename T>
  void put(T x) {
    const size_t at = b_.size();
    b_.resize(at + sizeof(T));  // (not insert: GCC 12 warns falsely about it at -O3)
    std::memcpy(b_.data() + at, &x, sizeof(T));
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
  }
  void value(const GgufValue& v) {
    switch (v.type) {
      case GgufType::UINT8:
        put<uint8_t>(static_cast<uint8_t>(v.u));
        break;
      case GgufType::INT8:
        put<int8_t>(static_cast<int8_t>(v.i));
        break;
      case GgufType::UINT16:
        put<uint16_t>(static_cast<uint16_t>(v.u));
        break;
      case GgufType::INT16:
        put<int16_t>(static_cast<int16_t>(v.i));
        break;
      case GgufType::UINT32:
        put<uint32_t>(static_cast<uint32_t>(v.u));
        break;
      case GgufType::INT32:
        put<int32_t>(static_cast<int32_t>(v.i));
        break;
      case GgufType::UINT64:
        put<uint64_t>(v.u);
        break;
      case GgufType::INT64:
        put<int64_t>(v.i);
        break;
      case GgufType::FLOAT32:
        put<float>(static_cast<float>(v.f));
        break;
      case GgufType::FLOAT64:
        put<double>(v.f);
        break;
      case GgufType::BOOL:
        put<uint8_t>(v.u ? 1 : 0);
        break;
      case GgufType::STRING:
        str(v.s);
        break;
      case GgufType::ARRAY:
        if (v.arr) {
          array(*v.arr);
        } else {
          array(GgufArray{});
        }
        break;
    }
  }
  void array(const GgufArray& a) {
    put<uint32_t>(static_cast<uint32_t>(a.elem_type));
    if (a.elem_type == GgufType::STRING) {
      put<uint64_t>(a.strings.size());
      for (const auto& s : a.strings) str(s);
    } else if (a.elem_type == GgufType::ARRAY) {
      put<uint64_t>(a.arrays.size());
      for (const auto& e : a.arrays) {
        if (e.arr) {
          array(*e.arr);
        } else {  // a default GgufValue of type ARRAY: an empty array
          put<uint32_t>(static_cast<uint32_t>(GgufType::UINT8));
          put<uint64_t>(0);
        }
      }
    } else {
      const uint32_t eb = gguf_scalar_bytes(a.elem_type);
      const uint64_t n = eb ? a.raw.size() / eb : 0;
      put<uint64_t>(n);
      b_.insert(b_.end(), a.raw.begin(), a.raw.begin() + static_cast<ptrdiff_t>(n * eb));
    }
  }
  std::vector<uint8_t>& bytes() { return b_; }

 private:
  std::vector<uint8_t> b_;
};

template <typename T>
GgufValue numeric_array(GgufType et, const std::vector<T>& v) {
  GgufValue out;
  out.type = GgufType::ARRAY;
  out.arr = std::make_shared<GgufArray>();
  out.arr->elem_type = et;
  out.arr->count = v.size();
  out.arr->raw.resize(v.size() * sizeof(T));
  std::memcpy(out.arr->raw.data(), v.data(), out.arr->raw.size());
  return out;
}

Status pwrite_all(int fd, const uint8_t* p, uint64_t n, uint64_t off, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0) {
      if (errno == EINTR) continue;
      return make_error("%s: write failed at byte %llu: %s", path.c_str(), (unsigned long long)off,
                        std::strerror(errno));
    }
    p += w;
    n -= static_cast<uint64_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return ok();
}

}  // namespace

GgufWriter::~GgufWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_path_.c_str());  // never finished: leave nothing behind
  }
}

void GgufWriter::set(const std::string& key, GgufValue v) {
  if (key == "general.alignment" && v.type == GgufType::UINT32 && v.u != 0 && v.u <= UINT32_MAX &&
      (v.u & (v.u - 1)) == 0) {
    alignment_ = static_cast<uint32_t>(v.u);
    lay_out();
  }
  for (auto& kv : kv_)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  kv_.emplace_back(key, std::move(v));
}
void GgufWriter::set_u32(const std::string& key, uint32_t v) {
  GgufValue x;
  x.type = GgufType::UINT32;
  x.u = v;
  set(key, x);
}
void GgufWriter::set_i32(const std::string& key, int32_t v) {
  GgufValue x;
  x.type = GgufType::INT32;
  x.i = v;
  set(key, x);
}
void GgufWriter::set_u64(const std::string& key, uint64_t v) {
  GgufValue x;
  x.type = GgufType::UINT64;
  x.u = v;
  set(key, x);
}
void GgufWriter::set_f32(const std::string& key, float v) {
  GgufValue x;
  x.type = GgufType::FLOAT32;
  x.f = v;
  set(key, x);
}
void GgufWriter::set_bool(const std::string& key, bool v) {
  GgufValue x;
  x.type = GgufType::BOOL;
  x.u = v;
  set(key, x);
}
void GgufWriter::set_str(const std::string& key, const std::string& v) {
  GgufValue x;
  x.type = GgufType::STRING;
  x.s = v;
  set(key, x);
}
void GgufWriter::set_arr_str(const std::string& key, const std::vector<std::string>& v) {
  GgufValue x;
  x.type = GgufType::ARRAY;
  x.arr = std::make_shared<GgufArray>();
  x.arr->elem_type = GgufType::STRING;
  x.arr->count = v.size();
  x.arr->strings = v;
  set(key, x);
}
void GgufWriter::set_arr_f32(const std::string& key, const std::vector<float>& v) {
  set(key, numeric_array(GgufType::FLOAT32, v));
}
void GgufWriter::set_arr_i32(const std::string& key, const std::vector<int32_t>& v) {
  set(key, numeric_array(GgufType::INT32, v));
}

size_t GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> shape) {
  Tensor t;
  t.name = name;
  t.type = type;
  t.shape = std::move(shape);
  uint64_t elems = 1;
  for (uint64_t d : t.shape) elems *= d;
  const GgmlTypeTraits tr = ggml_traits(type);
  t.bytes = elems / tr.block_elems * tr.block_bytes;
  tensors_.push_back(std::move(t));
  lay_out();
  return tensors_.size() - 1;
}

void GgufWriter::lay_out() {
  uint64_t off = 0;
  for (Tensor& t : tensors_) {
    t.rel_offset = (off + alignment_ - 1) / alignment_ * alignment_;
    off = t.rel_offset + t.bytes;
  }
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
  Buf b;
  b.put<uint32_t>(0x46554747u);  // "GGUF" read as a little-endian u32
  b.put<uint32_t>(version_);
  b.put<uint64_t>(tensors_.size());
  b.put<uint64_t>(kv_.size());
  for (const auto& [k, v] : kv_) {
    b.str(k);
    b.put<uint32_t>(static_cast<uint32_t>(v.type));
    b.value(v);
  }
  for (const Tensor& t : tensors_) {
    b.str(t.name);
    b.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (uint64_t d : t.shape) b.put<uint64_t>(d);
    b.put<uint32_t>(static_cast<uint32_t>(t.type));
    b.put<uint64_t>(t.rel_offset);
  }
  auto& out = b.bytes();
  out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  return std::move(out);
}

uint64_t GgufWriter::data_offset() const {
  return header_bytes().size();
}

uint64_t GgufWriter::total_bytes() const {
  uint64_t end = 0;
  if (!tensors_.empty()) end = tensors_.back().rel_offset + tensors_.back().bytes;
  return data_offset() + end;
}

Status GgufWriter::create(const std::string& path) {
  path_ = path;
  // Unique per process: two writers of the same model (parallel tests) must
  // not share a temporary file; the last rename wins, and both are whole.
  tmp_path_ = path + ".tmp." + std::to_string(::getpid());
  const std::vector<uint8_t> header = header_bytes();
  uint64_t end = tensors_.empty() ? 0 : tensors_.back().rel_offset + tensors_.back().bytes;
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return make_error("%s: cannot create: %s", tmp_path_.c_str(), std::strerror(errno));
  LS_TRY(pwrite_all(fd_, header.data(), header.size(), 0, tmp_path_));
  data_off_ = header.size();
  if (::ftruncate(fd_, static_cast<off_t>(header.size() + end)) != 0)
    return make_error("%s: cannot size to %llu bytes: %s", tmp_path_.c_str(),
                      (unsigned long long)(header.size() + end), std::strerror(errno));
  return ok();
}

Status GgufWriter::write_tensor(size_t i, std::span<const uint8_t> data) {
  const Tensor& t = tensors_.at(i);
  if (data.size() != t.bytes)
    return make_error("%s: tensor '%s' needs %llu bytes, got %zu", path_.c_str(), t.name.c_str(),
                      (unsigned long long)t.bytes, data.size());
  return pwrite_all(fd_, data.data(), data.size(), data_off_ + t.rel_offset, tmp_path_);
}

Status GgufWriter::write_tensor_part(size_t i, uint64_t at, std::span<const uint8_t> data) {
  const Tensor& t = tensors_.at(i);
  if (at > t.bytes || data.size() > t.bytes - at)
    return make_error("%s: write of %zu bytes at %llu overruns tensor '%s' (%llu bytes)",
                      path_.c_str(), data.size(), (unsigned long long)at, t.name.c_str(),
                      (unsigned long long)t.bytes);
  return pwrite_all(fd_, data.data(), data.size(), data_off_ + t.rel_offset + at, tmp_path_);
}

Status GgufWriter::finish() {
  if (fd_ < 0) return make_error("%s: finish() without create()", path_.c_str());
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(tmp_path_.c_str());
    return make_error("%s: close failed: %s", tmp_path_.c_str(), std::strerror(errno));
  }
  fd_ = -1;
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp_path_.c_str());
    return make_error("%s: cannot rename from %s: %s", path_.c_str(), tmp_path_.c_str(),
                      std::strerror(e));
  }
  return ok();
}

}  // namespace ls
