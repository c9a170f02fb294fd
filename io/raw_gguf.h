// The model on a raw block device (the VFIO reader reads a namespace, not a
// file): the user writes the GGUF file at an LBA with dd, and before the
// first layer is read the reader checks that what lies there is the file
// given by -m, so a wrong LBA, a different model or an incomplete dd is a
// clear error instead of garbage weights. Transport-independent: the device
// is read through a callback.
//
// Checked, in this order: the device holds the whole file from the LBA; the
// GGUF magic is there; the header region [0, data_offset) -- version,
// metadata, tensor infos (names, types, shapes, offsets: the whole data
// layout) -- has the file's FNV-1a 64 checksum; the file's last 4 KiB are
// the same on the device (an interrupted dd).
// defines: RawRead, fnv1a64(), verify_raw_gguf()
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "io/gguf.h"
#include "runtime/status.h"

namespace ls {

// Reads `bytes` at `offset` from the model's start on the device into dst.
using RawRead = std::function<Status(uint64_t offset, uint64_t bytes, uint8_t* dst)>;

uint64_t fnv1a64(std::span<const uint8_t> bytes, uint64_t h = 0xcbf29ce484222325ull);

// file: the GGUF given by -m (mapped); device_bytes: bytes on the device from
// the model's start on; where: how errors name the place ("namespace 1 of
// 0000:00:04.0 at LBA 2048").
Status verify_raw_gguf(const GgufFile& file, uint64_t device_bytes, const RawRead& read,
                       const std::string& where);

}  // namespace ls
