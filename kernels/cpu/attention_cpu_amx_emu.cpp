// The AMX attention block with the tile unit emulated in plain C++ from the
// instructions' definition (TDPBF16PS: per row of C and column n, two f32
// sums, of the even and of the odd elements of each bf16 pair, each product
// exact and each addition rounded to nearest even; then C += even + odd),
// and the portable lanes for the vector work (attention_cpu_lanes.h): the
// tests' way to run the AMX block's layouts and splits on a CPU without AMX.
// The hardware need not add in this order, so the two agree within the
// bound, not in bits.
// defines: attention_block_amx_emu (kernels/cpu/attention_cpu_block.h)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cstring>

#include "kernels/cpu/attention_cpu_block.h"
#include "kernels/half.h"

#define LS_ATTN_TARGET
#include "kernels/cpu/attention_cpu_lanes.h"
#include "kernels/cpu/attention_cpu_amx_body.h"

namespace ls {
namespace {

struct AttnAmxEmu {
  uint8_t t[8][16][64];
  int colsb[8];

  void config(int ngp) {
    const AmxAttnTileConfig c(ngp);
    for (int i = 0; i < 8; ++i) colsb[i] = c.colsb[i];
  }
  void release() {}
  template <int T>
  void load(const void* p, int64_t stride) {
    for (int r = 0; r < 16; ++r)
      std::memcpy(t[T][r], static_cast<const uint8_t*>(p) + r * stride, colsb[T]);
  }
  template <int T>
  void store(void* p, int64_t stride) {
    for (int r = 0; r < 16; ++r)
      std::memcpy(static_cast<uint8_t*>(p) + r * stride, t[T][r], colsb[T]);
  }
  template <int T>
  void zero() {
    std::memset(t[T], 0, sizeof t[T]);
  }
  uint16_t bf(int tile, int r, int i) const {
    uint16_t h;
    std::memcpy(&h, &t[tile][r][2 * i], 2);
    return h;
  }
  template <int C, int A, int B>
  void dp() {
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < colsb[C] / 4; ++n) {
        float even = 0, odd = 0;
        for (int k = 0; k < colsb[A] / 4; ++k) {
          even += bf16_to_fp32(bf(A, m, 2 * k)) * bf16_to_fp32(bf(B, k, 2 * n));
          odd += bf16_to_fp32(bf(A, m, 2 * k + 1)) * bf16_to_fp32(bf(B, k, 2 * n + 1));
        }
        float c;
        std::memcpy(&c, &t[C][m][4 * n], 4);
        c += even + odd;
        std::memcpy(&t[C][m][4 * n], &c, 4);
      }
  }

  static void pack_keys(const uint16_t* k, int hd, uint16_t* hi, uint16_t* lo) {
    for (int i = 0; i < hd; ++i) {
      const float x = fp16_to_fp32(k[i]);
      hi[i] = static_cast<uint16_t>(f32_to_bits(x) >> 16);  // truncated
      lo[i] = fp32_to_bf16(x - bf16_to_fp32(hi[i]));        // exact: a bf16 value already
    }
  }

  static void pack_q(const float* q, int group, int ngp, int hd, uint16_t* qt) {
    const int nch = hd / 32;
    const int64_t part = int64_t{nch} * 16 * ngp * 2;
    std::memset(qt, 0, static_cast<size_t>(3 * part * 2));
    for (int n = 0; n < group; ++n)
      for (int d = 0; d < hd; ++d) {
        float x = q[int64_t{n} * hd + d];
        const int64_t at = int64_t{d / 32} * 16 * ngp * 2 + (d % 32 / 2) * ngp * 2 + 2 * n + d % 2;
        for (int j = 0; j < 3; ++j) {
          qt[j * part + at] = fp32_to_bf16(x);
          x -= bf16_to_fp32(qt[j * part + at]);
        }
      }
  }
};

}  // namespace

void attention_block_amx_emu(const AttnBlockArgs& a) {
  attn_block_amx<VecLanes<16>, AttnAmxEmu>(a);
}

}  // namespace ls
