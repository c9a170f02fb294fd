#include "io/ggml_type.h"

#include <cctype>
#include <string>

namespace ls {
namespace {

struct Row {
  GgmlType type;
  GgmlTypeTraits traits;
};

// Block sizes from ggml-common.h: QK4_0 = QK4_1 = QK5_0 = QK5_1 = QK8_0 = 32,
// QK_K = 256. Byte counts are the sizes of the block structs in kernels/quant_blocks.h.
constexpr Row kTypes[] = {
    {GgmlType::F32, {"f32", 1, 4, true}},       {GgmlType::F16, {"f16", 1, 2, true}},
    {GgmlType::Q4_0, {"q4_0", 32, 18, true}},   {GgmlType::Q4_1, {"q4_1", 32, 20, true}},
    {GgmlType::Q5_0, {"q5_0", 32, 22, true}},   {GgmlType::Q5_1, {"q5_1", 32, 24, true}},
    {GgmlType::Q8_0, {"q8_0", 32, 34, true}},   {GgmlType::Q8_1, {"q8_1", 32, 36, false}},
    {GgmlType::Q2_K, {"q2_K", 256, 84, true}},  {GgmlType::Q3_K, {"q3_K", 256, 110, true}},
    {GgmlType::Q4_K, {"q4_K", 256, 144, true}}, {GgmlType::Q5_K, {"q5_K", 256, 176, true}},
    {GgmlType::Q6_K, {"q6_K", 256, 210, true}}, {GgmlType::Q8_K, {"q8_K", 256, 292, false}},
    {GgmlType::I8, {"i8", 1, 1, false}},        {GgmlType::I16, {"i16", 1, 2, false}},
    {GgmlType::I32, {"i32", 1, 4, false}},      {GgmlType::I64, {"i64", 1, 8, false}},
    {GgmlType::F64, {"f64", 1, 8, false}},      {GgmlType::BF16, {"bf16", 1, 2, true}},
};

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t id) {
  for (const Row& r : kTypes)
    if (static_cast<uint32_t>(r.type) == id) return r.traits;
  return std::nullopt;
}

const char* ggml_type_name(GgmlType t) {
  auto tr = ggml_type_traits(static_cast<uint32_t>(t));
  return tr ? tr->name : "unknown";
}

const char* ggml_type_id_name(uint32_t id) {
  if (auto tr = ggml_type_traits(id)) return tr->name;
  switch (id) {  // ggml.h's enum ggml_type; 4, 5 and 31..33, 36..38 were removed
    case 16:
      return "iq2_xxs";
    case 17:
      return "iq2_xs";
    case 18:
      return "iq3_xxs";
    case 19:
      return "iq1_s";
    case 20:
      return "iq4_nl";
    case 21:
      return "iq3_s";
    case 22:
      return "iq2_s";
    case 23:
      return "iq4_xs";
    case 29:
      return "iq1_m";
    case 34:
      return "tq1_0";
    case 35:
      return "tq2_0";
    case 39:
      return "mxfp4";
    default:
      return nullptr;
  }
}

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const Row& r : kTypes) {
    std::string n = r.traits.name;
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (n == lower) return r.type;
  }
  return std::nullopt;
}

}  // namespace ls
