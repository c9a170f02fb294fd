// The check that a raw device holds the model given by -m (io/raw_gguf.h):
// an image in memory with the tiny model at an LBA, read through the
// callback; each way it can be wrong gives its own error.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "io/raw_gguf.h"
#include "tests/unit/test_models.h"

using namespace ls;

namespace {

struct Image {
  std::vector<uint8_t> bytes;
  uint64_t lba_offset = 0;
  RawRead reader() {
    return [this](uint64_t off, uint64_t n, uint8_t* dst) -> Status {
      if (lba_offset + off + n > bytes.size()) return make_error("read past the image");
      std::memcpy(dst, bytes.data() + lba_offset + off, n);
      return ok();
    };
  }
  uint64_t device_bytes() const { return bytes.size() - lba_offset; }
};

Image image_with(const GgufFile& f, uint64_t lba, uint64_t extra = 8192) {
  Image im;
  im.lba_offset = lba * 512;
  im.bytes.assign(im.lba_offset + f.file_size() + extra, 0xA5);
  std::memcpy(im.bytes.data() + im.lba_offset, f.base(), f.file_size());
  return im;
}

std::string message(const Status& s) {
  return s.ok() ? "" : s.error().message;
}

}  // namespace

TEST_CASE("raw gguf: the model at its LBA passes, and each mismatch is named") {
  auto f = GgufFile::open(test::tiny_model_path("ls_test_raw_gguf"));
  REQUIRE(f.has_value());
  const GgufFile& file = **f;
  const std::string where = "namespace 1 of 0000:00:04.0 at LBA 2048";

  Image good = image_with(file, 2048);
  CHECK(verify_raw_gguf(file, good.device_bytes(), good.reader(), where).ok());

  SUBCASE("a wrong LBA: no magic there") {
    Image im = good;
    im.lba_offset += 512;
    const std::string m = message(verify_raw_gguf(file, im.device_bytes(), im.reader(), where));
    CHECK(m.find("no GGUF file there") != std::string::npos);
    CHECK(m.find("LBA 2048") != std::string::npos);
  }
  SUBCASE("another model: the metadata differ") {
    Image im = good;
    im.bytes[im.lba_offset + file.data_offset() / 2] ^= 0x01;
    const std::string m = message(verify_raw_gguf(file, im.device_bytes(), im.reader(), where));
    CHECK(m.find("header and metadata differ") != std::string::npos);
  }
  SUBCASE("an interrupted dd: the tail differs") {
    Image im = good;
    im.bytes[im.lba_offset + file.file_size() - 10] ^= 0xFF;
    const std::string m = message(verify_raw_gguf(file, im.device_bytes(), im.reader(), where));
    CHECK(m.find("last 4096 bytes") != std::string::npos);
  }
  SUBCASE("a device too small for the file") {
    const std::string m =
        message(verify_raw_gguf(file, file.file_size() - 1, good.reader(), where));
    CHECK(m.find("does not fit") != std::string::npos);
  }
  SUBCASE("a read error is passed on") {
    RawRead failing = [](uint64_t, uint64_t, uint8_t*) -> Status {
      return make_error("LBA 2048: media error");
    };
    CHECK(message(verify_raw_gguf(file, good.device_bytes(), failing, where)) ==
          "LBA 2048: media error");
  }
}
