#include "model/unicode.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace ls {
namespace {

struct CodepointRange {
  uint32_t first, last;
};

#include "model/unicode_tables.inc"  // defines: kLetterRanges, kNumberRanges

template <size_t N>
bool in_ranges(const CodepointRange (&table)[N], uint32_t cp) {
  auto it = std::upper_bound(std::begin(table), std::end(table), cp,
                             [](uint32_t c, const CodepointRange& r) { return c < r.first; });
  return it != std::begin(table) && cp <= std::prev(it)->last;
}

bool printable_byte(uint32_t b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteMap {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 324> from_cp{};  // codepoints 0..323 cover the whole image
  ByteMap() {
    from_cp.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      to_cp[b] = printable_byte(b) ? b : next++;
      from_cp[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};
const ByteMap kByteMap;

}  // namespace

Utf8Char utf8_next(std::string_view s, size_t pos) {
  const auto at = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = at(pos);
  if (b0 < 0x80) return {b0, 1};
  const uint32_t n = utf8_seq_len(b0);
  if (n == 1 || b0 > 0xF4 || pos + n > s.size()) return {kInvalidCodepoint, 1};
  uint32_t cp = b0 & (0xFF >> (n + 1));
  for (uint32_t i = 1; i < n; ++i) {
    const uint8_t b = at(pos + i);
    if ((b & 0xC0) != 0x80) return {kInvalidCodepoint, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not characters.
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return {kInvalidCodepoint, 1};
  return {cp, n};
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return cp != kInvalidCodepoint && in_ranges(kLetterRanges, cp);
}

bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return cp != kInvalidCodepoint && in_ranges(kNumberRanges, cp);
}

bool is_space(uint32_t cp) {
  // White_Space in the Unicode Character Database (PropList.txt).
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

uint32_t byte_to_codepoint(uint8_t b) {
  return kByteMap.to_cp[b];
}

int codepoint_to_byte(uint32_t cp) {
  return cp < kByteMap.from_cp.size() ? kByteMap.from_cp[cp] : -1;
}

}  // namespace ls
