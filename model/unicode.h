// The few Unicode facts the tokenizers need: UTF-8 decoding that never fails
// (an invalid byte stands for itself), the categories \p{L} and \p{N} from
// generated range tables (scripts/gen_unicode_tables.py), the White_Space
// property for \s, and the GPT-2 byte <-> codepoint mapping of byte-level BPE.
// defines: Utf8Char, utf8_next, utf8_seq_len, utf8_append, is_letter, is_number,
//          is_space, byte_to_codepoint, codepoint_to_byte
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ls {

// One decoded character: its codepoint and its length in bytes. A byte that
// does not start a valid UTF-8 sequence decodes to kInvalidCodepoint with
// len 1, so the text's bytes are always kept.
struct Utf8Char {
  uint32_t cp;
  uint32_t len;
};
inline constexpr uint32_t kInvalidCodepoint = 0xFFFFFFFF;
Utf8Char utf8_next(std::string_view s, size_t pos);

// Length of the sequence a lead byte announces (1 for ASCII and for stray
// continuation bytes); it does not check the continuation bytes.
inline uint32_t utf8_seq_len(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

void utf8_append(std::string& out, uint32_t cp);

bool is_letter(uint32_t cp);  // \p{L}
bool is_number(uint32_t cp);  // \p{N}
bool is_space(uint32_t cp);   // \s: the White_Space property

// GPT-2 byte-level mapping: printable bytes map to themselves, the other 68
// (controls, space, DEL, NBSP, soft hyphen...) to U+0100 onwards, in order.
uint32_t byte_to_codepoint(uint8_t b);
// The inverse; -1 when cp is not the image of a byte.
int codepoint_to_byte(uint32_t cp);

}  // namespace ls
