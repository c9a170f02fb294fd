// GGUF v2/v3 reader: header, metadata of every value type (nested arrays
// too), tensor infos, alignment and the data section, all checked against the
// file size before anything is trusted. The file is memory-mapped read-only;
// tensor bytes are read in place (the streaming reader uses offsets instead).
// defines: GgufType, GgufArray, GgufValue, GgufTensor, GgufFile
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/ggml_type.h"
#include "runtime/status.h"

namespace ls {

// Metadata value types, numbered as in the GGUF specification.
enum class GgufType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
const char* gguf_type_name(GgufType t);
// Bytes of one scalar element (0 for STRING and ARRAY).
uint32_t gguf_scalar_bytes(GgufType t);

struct GgufValue;

// An array keeps numeric elements packed as on disk (little-endian), so a
// 128k-entry token-type array costs 512 KiB, not 128k variants.
struct GgufArray {
  GgufType elem_type = GgufType::UINT8;
  uint64_t count = 0;
  std::vector<uint8_t> raw;          // scalar elements, count * gguf_scalar_bytes(elem_type)
  std::vector<std::string> strings;  // elem_type == STRING
  std::vector<GgufValue> arrays;     // elem_type == ARRAY (nested)

  // Element i (< count) as a number, whatever its scalar type (bool as 0/1;
  // a float out of int64_t range saturates, NaN gives 0).
  double number(uint64_t i) const;
  int64_t integer(uint64_t i) const;
};

struct GgufValue {
  GgufType type = GgufType::UINT8;
  uint64_t u = 0;                  // UINT8..UINT64, BOOL
  int64_t i = 0;                   // INT8..INT64
  double f = 0;                    // FLOAT32, FLOAT64
  std::string s;                   // STRING
  std::shared_ptr<GgufArray> arr;  // ARRAY

  bool is_integer() const;
  bool is_number() const;  // integer, float or bool
  double as_double() const;
  int64_t as_int() const;
  std::string to_string(size_t max_elems = 8) const;  // for inspect
};

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<uint64_t> shape;  // ne[0] is the contiguous (row) dimension, as in ggml
  uint64_t rel_offset = 0;      // from the start of the data section, as stored
  uint64_t offset = 0;          // absolute offset in the file
  uint64_t bytes = 0;           // size of its data
  uint64_t elements() const;
  uint64_t rows() const;  // product of ne[1..]; a dimension may be 0 (an empty tensor)
};

class GgufFile {
 public:
  // Map and parse a file. Errors name the path and the field or tensor; what
  // is accepted and rejected is listed at the top of gguf.cpp.
  static Expected<std::shared_ptr<GgufFile>> open(const std::string& path);
  // Parse bytes already in memory (tests and the fuzzer). The bytes must
  // outlive the result.
  static Expected<std::shared_ptr<GgufFile>> parse(std::span<const uint8_t> bytes,
                                                   const std::string& name);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return size_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(const std::string& key) const;
  // Typed lookups: an error names the key and what was found instead.
  Expected<int64_t> get_int(const std::string& key) const;
  Expected<double> get_float(const std::string& key) const;
  Expected<std::string> get_string(const std::string& key) const;
  Expected<bool> get_bool(const std::string& key) const;
  Expected<const GgufArray*> get_array(const std::string& key) const;

  // Tensors, in file order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(const std::string& name) const;
  // The tensor's bytes, in the mapped file.
  std::span<const uint8_t> tensor_data(const GgufTensor& t) const {
    return {base_ + t.offset, static_cast<size_t>(t.bytes)};
  }
  const uint8_t* base() const { return base_; }

 private:
  GgufFile() = default;
  Status parse_all();

  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  void* map_ = nullptr;  // non-null when we own an mmap
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace ls
