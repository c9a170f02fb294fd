// safetensors reader (Hugging Face's checkpoint format): an 8-byte
// little-endian header length N, N bytes of JSON, then the data section.
// The JSON maps each tensor name to {"dtype", "shape", "data_offsets":
// [begin, end)} (offsets from the start of the data section), plus an
// optional "__metadata__" object of strings. The header is parsed with
// nlohmann::json, then checked before anything is trusted: every dtype known,
// every size equal to its shape's, every tensor inside the file, no two
// overlapping, no bytes of the data section left over (what the format's own
// reader demands). The file is memory-mapped read-only; tensor bytes are read
// in place.
// defines: StDtype, st_dtype_name(), st_dtype_bytes(), StTensor, SafetensorsFile
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace ls {

// The element types the format defines (named as in the header).
enum class StDtype : uint8_t {
  BOOL,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
};
const char* st_dtype_name(StDtype t);
uint32_t st_dtype_bytes(StDtype t);

struct StTensor {
  std::string name;
  StDtype dtype = StDtype::F32;
  std::vector<uint64_t> shape;  // row-major, the last dimension contiguous (PyTorch's order)
  uint64_t begin = 0, end = 0;  // data_offsets: from the start of the data section
  uint64_t elements() const;    // product of shape (1 for a scalar)
};

class SafetensorsFile {
 public:
  // Map and parse a file; errors name the path, and the tensor or field.
  static Expected<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  // Parse bytes already in memory (tests and the fuzzer); they must outlive the result.
  static Expected<std::shared_ptr<SafetensorsFile>> parse(std::span<const uint8_t> bytes,
                                                          const std::string& name);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  uint64_t data_offset() const { return data_offset_; }  // 8 + the header's length
  // Tensors in the order of their data.
  const std::vector<StTensor>& tensors() const { return tensors_; }
  const StTensor* find(const std::string& name) const;
  // "__metadata__" (string values only, as the format says).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The tensor's bytes, in the mapped file (little-endian; not necessarily aligned).
  std::span<const uint8_t> data(const StTensor& t) const {
    return {base_ + data_offset_ + t.begin, static_cast<size_t>(t.end - t.begin)};
  }

 private:
  SafetensorsFile() = default;
  Status parse_all();

  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  void* map_ = nullptr;  // non-null when we own an mmap
  uint64_t data_offset_ = 0;
  std::vector<StTensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace ls
