// The ggml tensor types as GGUF numbers them, with their block geometry.
// Shared by host and device code; the numbers are the on-disk ids (ggml.h's
// enum ggml_type), so they must never be renumbered.
// defines: GgmlType, GgmlTypeTraits, ggml_type_traits(), ggml_type_name(),
//          ggml_type_id_name(), ggml_type_from_name(), ggml_row_bytes()
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ls {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

struct GgmlTypeTraits {
  const char* name;      // llama.cpp's spelling, lower case ("q4_K")
  uint32_t block_elems;  // elements per block (1 for plain types)
  uint32_t block_bytes;  // bytes per block
  bool dequantizable;    // layerstream can turn it into float
};

// Traits of a type id read from a file; nullopt for ids we do not know the
// layout of (the GGUF reader rejects those, naming the tensor).
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t id);
inline GgmlTypeTraits ggml_traits(GgmlType t) {
  return *ggml_type_traits(static_cast<uint32_t>(t));
}
const char* ggml_type_name(GgmlType t);
// ggml's name for any type id it defines, including those layerstream has no
// layout for ("iq2_xxs"), so an error can say what it meant; nullptr if unknown.
const char* ggml_type_id_name(uint32_t id);
// Accepts "q4_k", "Q4_K", "f16", ... (case-insensitive).
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

// Bytes of a row of n elements; n must be a multiple of the block size.
inline uint64_t ggml_row_bytes(GgmlType t, uint64_t n) {
  const GgmlTypeTraits tr = ggml_traits(t);
  return n / tr.block_elems * tr.block_bytes;
}

}  // namespace ls
