// GGUF v3 writer, used by `synth` and by tests. Metadata and tensor infos are
// declared first; create() writes the header and sizes the file; tensor data
// is then written tensor by tensor (any order, from any thread) with pwrite,
// so a 40 GB model streams to disk with bounded memory. The file is written
// under a temporary name and renamed by finish(), so a failed or interrupted
// run never leaves a half-written model under the real name.
// defines: GgufWriter
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "runtime/status.h"

namespace ls {

class GgufWriter {
 public:
  GgufWriter() = default;
  ~GgufWriter();
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // Header version: 3 (the default) or 2, which has the same layout. Any
  // other number is written as given (tests build broken files with it).
  void set_version(uint32_t v) { version_ = v; }

  // Metadata (later calls with the same key replace the value). An array is
  // written with the element count of its contents. Setting general.alignment
  // to a uint32 power of two also lays the tensors out at that alignment;
  // any other value is written as given, but the layout keeps the previous
  // alignment (tests build files with a bad alignment key this way).
  void set(const std::string& key, GgufValue v);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_str(const std::string& key, const std::string& v);
  void set_arr_str(const std::string& key, const std::vector<std::string>& v);
  void set_arr_f32(const std::string& key, const std::vector<float>& v);
  void set_arr_i32(const std::string& key, const std::vector<int32_t>& v);
  void set_alignment(uint32_t a) { set_u32("general.alignment", a); }

  // Tensors, in the order their data will lie in the file. Returns its index.
  size_t add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> shape);
  size_t tensor_count() const { return tensors_.size(); }
  uint64_t tensor_bytes(size_t i) const { return tensors_[i].bytes; }
  // Where its data starts, from the start of the data section.
  uint64_t tensor_offset(size_t i) const { return tensors_[i].rel_offset; }
  uint64_t total_bytes() const;  // the finished file's size (valid after add_tensor calls)

  // Serialise the header to memory (tests build broken files from it).
  std::vector<uint8_t> header_bytes() const;

  // Create PATH.tmp, write the header, size the file.
  Status create(const std::string& path);
  // Write a tensor's data (exactly tensor_bytes(i) bytes). Thread-safe.
  Status write_tensor(size_t i, std::span<const uint8_t> data);
  // Write part of a tensor's data, starting `at` bytes into it. Thread-safe.
  Status write_tensor_part(size_t i, uint64_t at, std::span<const uint8_t> data);
  // fsync-free close and rename to the final path.
  Status finish();

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> shape;
    uint64_t bytes = 0;
    uint64_t rel_offset = 0;
  };
  uint64_t data_offset() const;
  void lay_out();  // the tensors' offsets, in order, at alignment_

  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
  uint32_t version_ = 3;
  std::string path_, tmp_path_;
  int fd_ = -1;
  uint64_t data_off_ = 0;
};

}  // namespace ls
