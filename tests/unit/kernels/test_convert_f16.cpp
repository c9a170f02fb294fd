// convert_f16 (kernels/cpu/convert_f16.h) against the scalar conversions of
// kernels/half.h: every f16 value, and f32 values from every range (random
// bit patterns, the f16 subnormal, normal and overflow edges, the halfway
// points that round to even), bit for bit; a NaN stays a NaN. Lengths 0 to
// 40 check the tails past the 8-wide vectors. Whatever the CPU: the F16C
// path where it has one, the scalar path otherwise (same contract).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ios>
#include <random>
#include <vector>

#include "kernels/cpu/convert_f16.h"
#include "kernels/half.h"

using namespace ls;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST_CASE("convert_f16: every f16 value to f32 as fp16_to_fp32 does") {
  std::vector<uint16_t> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> f(65536);
  fp16_to_fp32_n(h.data(), f.data(), 65536);
  int64_t bad = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const float want = fp16_to_fp32(h[i]);
    bad += std::isnan(want) ? !std::isnan(f[i]) : bits(f[i]) != bits(want);
  }
  CHECK(bad == 0);
}

TEST_CASE("convert_f16: f32 to f16 as fp32_to_fp16 does, round to nearest even") {
  std::vector<float> in;
  std::mt19937 rng(5);
  for (int i = 0; i < 1 << 20; ++i) in.push_back(from_bits(rng()));
  // Every f16 value, its neighbours in f32, and the halfway points between
  // consecutive f16 values (ties: round to even), over the whole range.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float a = fp16_to_fp32(static_cast<uint16_t>(h));
    const float b = fp16_to_fp32(static_cast<uint16_t>(h + 1));
    for (float x :
         {a, b, (a + b) / 2, std::nextafter((a + b) / 2, 0.0f), std::nextafter((a + b) / 2, 1e9f)})
      in.push_back(x), in.push_back(-x);
  }
  for (float x : {65504.0f, 65519.0f, 65520.0f, 1e10f, INFINITY, 0x1p-25f, 0x1p-24f, 0x1.8p-25f,
                  0x1p-26f, 0.0f, NAN})
    in.push_back(x), in.push_back(-x);
  std::vector<uint16_t> out(in.size());
  fp32_to_fp16_n(in.data(), out.data(), static_cast<int64_t>(in.size()));
  int64_t bad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t want = fp32_to_fp16(in[i]);
    const bool nan = std::isnan(in[i]);
    const bool is_nan_out = (out[i] & 0x7c00) == 0x7c00 && (out[i] & 0x3ff) != 0;
    if (nan ? !is_nan_out : out[i] != want) {
      if (bad++ < 3)
        FAIL_CHECK("f32 bits " << std::hex << bits(in[i]) << ": " << out[i] << " vs " << want);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("convert_f16: every length from 0 to 40, nothing written past n") {
  for (int64_t n = 0; n <= 40; ++n) {
    std::vector<float> f(48, -7.0f), back(48, 123.0f);
    for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(i) * 0.37f - 3;
    std::vector<uint16_t> h(48, 0xABCD);
    fp32_to_fp16_n(f.data(), h.data(), n);
    fp16_to_fp32_n(h.data(), back.data(), n);
    for (int64_t i = 0; i < 48; ++i) {
      if (i < n) {
        CHECK(h[i] == fp32_to_fp16(f[i]));
        CHECK(back[i] == fp16_to_fp32(h[i]));
      } else {
        CHECK(h[i] == 0xABCD);
        CHECK(back[i] == 123.0f);
      }
    }
  }
}
