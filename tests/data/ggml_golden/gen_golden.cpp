// Golden data generator for layerstream's quant tests, linked against ggml
// (llama.cpp ggml-base, built CPU-only without -march flags).
// Usage: gen_golden OUTDIR [--check-half]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ggml.h"
#include "kernels/half.h"  // layerstream's, only for --check-half

namespace {

uint64_t g_state = 0x9E3779B97F4A7C15ull;
uint64_t next_u64() {  // splitmix64
  uint64_t z = (g_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform() {
  return (next_u64() >> 11) * (1.0 / 9007199254740992.0);
}  // [0,1)
double gauss() {
  double u1 = uniform(), u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Input for block-quantized types: n values in groups of `blk`. Most groups
// are gaussian with a random per-group scale; some groups are special cases.
std::vector<float> make_quant_input(int64_t n, int blk) {
  std::vector<float> x(n);
  const int64_t ng = n / blk;
  for (int64_t g = 0; g < ng; ++g) {
    float* p = x.data() + g * blk;
    const int kind = static_cast<int>(g % 8);
    const double scale = std::ldexp(1.0, static_cast<int>(uniform() * 12) - 8);  // 2^-8 .. 2^3
    for (int i = 0; i < blk; ++i) {
      double v = gauss() * scale;
      switch (kind) {
        case 1:
          if (g == 1) v = 0.0;
          break;  // all zero (once)
        case 2:
          v = std::fabs(v) + 0.25 * scale;
          break;  // all positive
        case 3:
          v = -std::fabs(v) - 0.25 * scale;
          break;  // all negative
        case 4:
          if (i == blk / 3) v = 40.0 * scale;
          break;  // one outlier
        case 5:
          v = v * 1e-5;
          break;  // tiny: fp16 subnormal scales
        case 6:
          if ((i / 16) % 2 == 0) v = 0.0;
          break;  // zeroed sub-blocks of 16
        case 7:
          v = (g == 7) ? 0.75 : v;
          break;  // constant (once)
        default:
          v *= std::ldexp(1.0, (i / 16) % 4 - 1);
          break;  // scale varies per 16
      }
      p[i] = static_cast<float>(v);
    }
  }
  return x;
}

// Input for F16 / BF16 / F32: special values, then values spread over a wide range.
std::vector<float> make_float_input(int64_t n) {
  std::vector<float> x;
  const float specials[] = {0.0f,
                            -0.0f,
                            INFINITY,
                            -INFINITY,
                            NAN,
                            -NAN,
                            1.0f,
                            -1.0f,
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            -65520.0f,
                            1e10f,
                            3.0e38f,
                            5.9604645e-8f /*2^-24*/,
                            2.9802322e-8f /*2^-25 tie*/,
                            4.4703484e-8f /*1.5 * 2^-25*/,
                            6.1035156e-5f /*2^-14*/,
                            6.0975552e-5f /*largest fp16 subnormal*/,
                            1e-8f,
                            1e-30f,
                            1e-40f,
                            1.0009765625f /*1 + 2^-10*/,
                            1.00048828125f /*tie to even*/,
                            1.00146484375f /*tie, rounds up*/,
                            3.3895314e38f};
  for (float s : specials) x.push_back(s);
  while (static_cast<int64_t>(x.size()) < n) {
    const int e = static_cast<int>(uniform() * 50) - 30;  // 2^-30 .. 2^19
    x.push_back(static_cast<float>(gauss() * std::ldexp(1.0, e)));
  }
  return x;
}

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_bytes(std::vector<uint8_t>& b, const void* p, size_t n) {
  const uint8_t* c = static_cast<const uint8_t*>(p);
  b.insert(b.end(), c, c + n);
}

int check_half() {
  // fp16 -> fp32, all 65536 inputs.
  int64_t bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    float a = ggml_fp16_to_fp32(static_cast<ggml_fp16_t>(h));
    float b = ls::fp16_to_fp32(static_cast<uint16_t>(h));
    uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    if (ua != ub) {
      if (bad < 10) std::printf("fp16_to_fp32 %04x: ggml %08x ours %08x\n", h, ua, ub);
      ++bad;
    }
  }
  std::printf("fp16_to_fp32: %lld mismatches of 65536\n", static_cast<long long>(bad));
  // fp32 -> fp16 and fp32 -> bf16, all 2^32 inputs.
  int64_t bad16 = 0, badbf = 0;
  for (uint64_t u = 0; u < (1ull << 32); ++u) {
    float f;
    uint32_t u32 = static_cast<uint32_t>(u);
    std::memcpy(&f, &u32, 4);
    uint16_t a = ggml_fp32_to_fp16(f);
    uint16_t b = ls::fp32_to_fp16(f);
    if (a != b) {
      if (bad16 < 10) std::printf("fp32_to_fp16 %08x: ggml %04x ours %04x\n", u32, a, b);
      ++bad16;
    }
    ggml_bf16_t ab = ggml_fp32_to_bf16(f);
    uint16_t bb = ls::fp32_to_bf16(f);
    if (ab.bits != bb) {
      if (badbf < 10) std::printf("fp32_to_bf16 %08x: ggml %04x ours %04x\n", u32, ab.bits, bb);
      ++badbf;
    }
  }
  std::printf("fp32_to_fp16: %lld mismatches of 2^32\n", static_cast<long long>(bad16));
  std::printf("fp32_to_bf16: %lld mismatches of 2^32\n", static_cast<long long>(badbf));
  return (bad || bad16 || badbf) ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUTDIR [--check-half]\n", argv[0]);
    return 2;
  }
  // ggml_init fills the fp16 -> fp32 table that dequantize_row_* use.
  ggml_init_params params = {1 << 20, nullptr, false};
  ggml_context* ctx = ggml_init(params);

  if (argc > 2 && std::strcmp(argv[2], "--check-half") == 0) return check_half();

  struct Spec {
    ggml_type type;
    const char* name;
    int64_t n;
  };
  const Spec specs[] = {
      {GGML_TYPE_F32, "f32", 512},    {GGML_TYPE_F16, "f16", 1024},
      {GGML_TYPE_BF16, "bf16", 1024}, {GGML_TYPE_Q4_0, "q4_0", 1024},
      {GGML_TYPE_Q4_1, "q4_1", 1024}, {GGML_TYPE_Q5_0, "q5_0", 1024},
      {GGML_TYPE_Q5_1, "q5_1", 1024}, {GGML_TYPE_Q8_0, "q8_0", 1024},
      {GGML_TYPE_Q2_K, "q2_k", 4096}, {GGML_TYPE_Q3_K, "q3_k", 4096},
      {GGML_TYPE_Q4_K, "q4_k", 4096}, {GGML_TYPE_Q5_K, "q5_k", 4096},
      {GGML_TYPE_Q6_K, "q6_k", 4096},
  };
  int rc = 0;
  for (const Spec& s : specs) {
    g_state = 0x5EED0000ull + static_cast<uint64_t>(s.type);  // fixed seed per type
    const ggml_type_traits* tr = ggml_get_type_traits(s.type);
    const int64_t blk = tr->blck_size;
    std::vector<float> x =
        blk == 1 ? make_float_input(s.n) : make_quant_input(s.n, static_cast<int>(blk));
    const size_t qbytes = ggml_row_size(s.type, s.n);
    std::vector<uint8_t> q(qbytes), qref(qbytes);
    // As llama-quantize does: one row of n values, no importance matrix.
    size_t got = ggml_quantize_chunk(s.type, x.data(), q.data(), 0, 1, s.n, nullptr);
    if (got != qbytes) {
      std::fprintf(stderr, "%s: size %zu != %zu\n", s.name, got, qbytes);
      return 1;
    }
    // Cross-check: the type's reference quantizer gives the same bytes.
    if (tr->from_float_ref) {
      tr->from_float_ref(x.data(), qref.data(), s.n);
      if (std::memcmp(q.data(), qref.data(), qbytes) != 0) {
        std::fprintf(stderr, "%s: ggml_quantize_chunk != from_float_ref\n", s.name);
        rc = 1;
      }
    }
    std::vector<float> y(s.n);
    if (s.type == GGML_TYPE_F32) {
      std::memcpy(y.data(), q.data(), qbytes);
    } else {
      tr->to_float(q.data(), y.data(), s.n);
    }
    std::vector<uint8_t> out;
    put_bytes(out, "LSGQ", 4);
    put_u32(out, 1);  // version
    put_u32(out, static_cast<uint32_t>(s.type));
    put_u32(out, static_cast<uint32_t>(s.n));
    put_u32(out, static_cast<uint32_t>(qbytes));
    put_bytes(out, x.data(), x.size() * 4);
    put_bytes(out, q.data(), qbytes);
    put_bytes(out, y.data(), y.size() * 4);
    std::string path = std::string(argv[1]) + "/" + s.name + ".bin";
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(out.data(), 1, out.size(), f) != out.size()) {
      std::perror(path.c_str());
      return 1;
    }
    std::fclose(f);
    std::printf("%-5s n=%lld blocks=%lld bytes=%zu -> %s (%zu bytes)\n", s.name,
                static_cast<long long>(s.n), static_cast<long long>(s.n / blk), qbytes,
                path.c_str(), out.size());
  }
  ggml_free(ctx);
  return rc;
}
