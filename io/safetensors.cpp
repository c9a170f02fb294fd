// safetensors parsing. The JSON header is parsed by nlohmann::json (never by
// hand); everything in it is then checked against the file before a tensor
// is handed out.
//
// Decisions, where the format leaves room (its reference reader, the
// `safetensors` crate, decides the same):
// - The header is at most 100 MB of UTF-8 JSON: one object whose values are
//   tensor entries, and "__metadata__", an object of strings. A key that
//   appears twice is an error (a JSON library would keep one silently).
// - An entry has exactly dtype (a known name), shape (non-negative integers;
//   [] is a scalar) and data_offsets ([begin, end], begin <= end, end - begin
//   = the shape's element count times the dtype's size).
// - The data section is exactly the tensors' bytes, back to back in some
//   order: no overlap, no gap, nothing after the last one. A tensor that ends
//   past the file's end is reported as truncation.
#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "io/map_guard.h"

namespace ls {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference reader's limit

struct DtypeInfo {
  StDtype type;
  const char* name;
  uint32_t bytes;
};
constexpr DtypeInfo kDtypes[] = {
    {StDtype::BOOL, "BOOL", 1},       {StDtype::U8, "U8", 1},           {StDtype::I8, "I8", 1},
    {StDtype::F8_E5M2, "F8_E5M2", 1}, {StDtype::F8_E4M3, "F8_E4M3", 1}, {StDtype::I16, "I16", 2},
    {StDtype::U16, "U16", 2},         {StDtype::F16, "F16", 2},         {StDtype::BF16, "BF16", 2},
    {StDtype::I32, "I32", 4},         {StDtype::U32, "U32", 4},         {StDtype::F32, "F32", 4},
    {StDtype::F64, "F64", 8},         {StDtype::I64, "I64", 8},         {StDtype::U64, "U64", 8},
};

// A name from the file, quoted for a message: at most 80 bytes, control bytes
// escaped, so a huge or binary key cannot push the rest out of make_error's buffer.
std::string quote_name(const std::string& s) {
  std::string out = "'";
  for (size_t k = 0; k < s.size() && k < 80; ++k) {
    const auto ch = static_cast<unsigned char>(s[k]);
    if (ch < 0x20 || ch == 0x7f || ch == '\'' || ch == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (s.size() > 80) out += "...";
  return out + "'";
}

std::string dims(const std::vector<uint64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

}  // namespace

const char* st_dtype_name(StDtype t) {
  for (const DtypeInfo& d : kDtypes)
    if (d.type == t) return d.name;
  return "?";
}

uint32_t st_dtype_bytes(StDtype t) {
  for (const DtypeInfo& d : kDtypes)
    if (d.type == t) return d.bytes;
  return 0;
}

uint64_t StTensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::~SafetensorsFile() {
  unmap_guarded(map_, size_);
}

const StTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Expected<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  auto m = map_file_guarded(path);
  if (!m) return m.error();
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->size_ = m->size;
  f->map_ = m->map;
  f->base_ = static_cast<const uint8_t*>(m->map);
  LS_TRY(f->parse_all());
  return f;
}

Expected<std::shared_ptr<SafetensorsFile>> SafetensorsFile::parse(std::span<const uint8_t> bytes,
                                                                  const std::string& name) {
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = name;
  f->base_ = bytes.data();
  f->size_ = bytes.size();
  LS_TRY(f->parse_all());
  return f;
}

Status SafetensorsFile::parse_all() {
  const char* file = path_.c_str();
  if (size_ < 8)
    return make_error(
        "%s: %llu bytes, too short for a safetensors file (8-byte header length): "
        "truncated?",
        file, static_cast<unsigned long long>(size_));
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= static_cast<uint64_t>(base_[k]) << (8 * k);
  if (n > kMaxHeaderBytes)
    return make_error(
        "%s: header length %llu is more than the format's limit of %llu bytes: not "
        "a safetensors file?",
        file, static_cast<unsigned long long>(n), static_cast<unsigned long long>(kMaxHeaderBytes));
  if (n > size_ - 8)
    return make_error(
        "%s: the header is %llu bytes but the file has only %llu after the length: "
        "truncated",
        file, static_cast<unsigned long long>(n), static_cast<unsigned long long>(size_ - 8));
  data_offset_ = 8 + n;
  const uint64_t data_size = size_ - data_offset_;

  // Parse: a top-level key seen twice is an error (the callback sees keys
  // before the library keeps one of them).
  nlohmann::json h;
  std::string dup;
  try {
    std::set<std::string> keys;
    auto cb = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& v) {
      if (ev == nlohmann::json::parse_event_t::key && depth == 1 && v.is_string() &&
          !keys.insert(v.get_ref<const std::string&>()).second && dup.empty())
        dup = v.get<std::string>();
      return true;
    };
    const char* p = reinterpret_cast<const char*>(base_ + 8);
    h = nlohmann::json::parse(p, p + n, cb);
  } catch (const nlohmann::json::exception& e) {
    return make_error("%s: the header is not valid JSON: %s", file, e.what());
  }
  if (!dup.empty())
    return make_error("%s: the header names %s twice", file, quote_name(dup).c_str());
  if (!h.is_object())
    return make_error("%s: the header is JSON but not an object (found %s)", file, h.type_name());

  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object())
        return make_error("%s: __metadata__ must be an object of strings, found %s", file,
                          v.type_name());
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          return make_error("%s: __metadata__ %s must be a string, found %s", file,
                            quote_name(m.key()).c_str(), m.value().type_name());
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string q = quote_name(key);
    if (!v.is_object())
      return make_error("%s: tensor %s: the entry must be an object, found %s", file, q.c_str(),
                        v.type_name());
    for (auto f = v.begin(); f != v.end(); ++f)
      if (f.key() != "dtype" && f.key() != "shape" && f.key() != "data_offsets")
        return make_error("%s: tensor %s: unknown field %s (dtype, shape, data_offsets)", file,
                          q.c_str(), quote_name(f.key()).c_str());
    StTensor t;
    t.name = key;
    // dtype
    auto d = v.find("dtype");
    if (d == v.end() || !d->is_string())
      return make_error("%s: tensor %s: dtype is missing or not a string", file, q.c_str());
    const std::string& dn = d->get_ref<const std::string&>();
    const DtypeInfo* info = nullptr;
    for (const DtypeInfo& x : kDtypes)
      if (dn == x.name) info = &x;
    if (!info)
      return make_error(
          "%s: tensor %s: unknown dtype %s (the format's are BOOL, U8, I8, "
          "F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64)",
          file, q.c_str(), quote_name(dn).c_str());
    t.dtype = info->type;
    // shape
    auto s = v.find("shape");
    if (s == v.end() || !s->is_array())
      return make_error("%s: tensor %s: shape is missing or not an array", file, q.c_str());
    uint64_t elems = 1;
    for (const nlohmann::json& x : *s) {
      if (!x.is_number_unsigned())
        return make_error("%s: tensor %s: shape %s: a dimension must be a non-negative integer",
                          file, q.c_str(), s->dump().substr(0, 80).c_str());
      t.shape.push_back(x.get<uint64_t>());
      if (__builtin_mul_overflow(elems, t.shape.back(), &elems))
        return make_error("%s: tensor %s: shape %s has more than 2^64 elements", file, q.c_str(),
                          s->dump().substr(0, 80).c_str());
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(elems, static_cast<uint64_t>(info->bytes), &bytes))
      return make_error("%s: tensor %s: shape %s is more than 2^64 bytes", file, q.c_str(),
                        dims(t.shape).c_str());
    // data_offsets
    auto o = v.find("data_offsets");
    if (o == v.end() || !o->is_array() || o->size() != 2 || !(*o)[0].is_number_unsigned() ||
        !(*o)[1].is_number_unsigned())
      return make_error(
          "%s: tensor %s: data_offsets must be two non-negative integers [begin, "
          "end]",
          file, q.c_str());
    t.begin = (*o)[0].get<uint64_t>();
    t.end = (*o)[1].get<uint64_t>();
    if (t.begin > t.end)
      return make_error("%s: tensor %s: data_offsets [%llu, %llu) end before they begin", file,
                        q.c_str(), static_cast<unsigned long long>(t.begin),
                        static_cast<unsigned long long>(t.end));
    if (t.end - t.begin != bytes)
      return make_error(
          "%s: tensor %s: data_offsets [%llu, %llu) hold %llu bytes, but %s %s "
          "needs %llu",
          file, q.c_str(), static_cast<unsigned long long>(t.begin),
          static_cast<unsigned long long>(t.end), static_cast<unsigned long long>(t.end - t.begin),
          info->name, dims(t.shape).c_str(), static_cast<unsigned long long>(bytes));
    tensors_.push_back(std::move(t));
  }

  // The data section: in offset order, inside the file, back to back.
  std::sort(tensors_.begin(), tensors_.end(), [](const StTensor& a, const StTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  const StTensor* prev = nullptr;
  for (const StTensor& t : tensors_) {
    if (t.end > data_size)
      return make_error(
          "%s: tensor %s: data_offsets [%llu, %llu) run past the end of the file "
          "(its data section has %llu bytes): truncated, or a wrong header",
          file, quote_name(t.name).c_str(), static_cast<unsigned long long>(t.begin),
          static_cast<unsigned long long>(t.end), static_cast<unsigned long long>(data_size));
    if (t.begin < at)
      return make_error(
          "%s: tensors %s [%llu, %llu) and %s [%llu, %llu) overlap", file,
          quote_name(prev->name).c_str(), static_cast<unsigned long long>(prev->begin),
          static_cast<unsigned long long>(prev->end), quote_name(t.name).c_str(),
          static_cast<unsigned long long>(t.begin), static_cast<unsigned long long>(t.end));
    if (t.begin > at)
      return make_error(
          "%s: bytes [%llu, %llu) of the data section belong to no tensor (the "
          "format allows no gaps; next is %s)",
          file, static_cast<unsigned long long>(at), static_cast<unsigned long long>(t.begin),
          quote_name(t.name).c_str());
    at = t.end;
    prev = &t;
  }
  if (at != data_size)
    return make_error("%s: %llu bytes after the last tensor's data belong to no tensor", file,
                      static_cast<unsigned long long>(data_size - at));
  for (size_t i = 0; i < tensors_.size(); ++i) index_[tensors_[i].name] = i;
  return ok();
}

}  // namespace ls
