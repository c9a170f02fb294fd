// Byte sizes as users write them ("24GiB", "512MiB", "1.5GB", "4096", "0")
// and as we print them.
// defines: parse_bytes(), human_bytes()
#pragma once

#include <cstdint>
#include <string>

#include "runtime/status.h"

namespace ls {

// Suffixes: B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB (case-insensitive;
// K/M/G/T alone and *iB are powers of 1024, *B powers of 1000).
Expected<uint64_t> parse_bytes(const std::string& text);
// Approximate, for people: "1.50 GiB", "512.0 MiB", "900 B" (io/block_source.h has
// format_bytes for exact sizes such as "1 MiB").
std::string human_bytes(uint64_t bytes);

}  // namespace ls
