// Spreads the prefetches of the next weight row (RowPrefetch, kernels/cpu/
// dot.h) over the chunks of the row being dotted: a cursor that advances
// bytes · 256 / n per chunk of 256 values, one prefetch a line, into the
// cache level of the hint (0 L1, 1 L2, 2 L3, 3 non-temporal). Shared by
// the dot kernels (lane form AVX-512, chunk form); x86 only.
// defines: RowPrefetcher
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/dot.h"

namespace ls {

struct RowPrefetcher {
  const uint8_t* p;
  int64_t end, cur = 0, step16, at16 = 0;
  int hint;
  RowPrefetcher(const RowPrefetch& pf, int64_t n)
      : p(pf.p), end(pf.bytes), step16(n > 0 ? (pf.bytes << 16) / n * 256 : 0), hint(pf.hint) {}
  inline void advance() {
    if (!end) return;
    at16 += step16;
    const int64_t to = std::min<int64_t>(end, (at16 >> 16) + 64);
    for (; cur < to; cur += 64) {
      const char* a = reinterpret_cast<const char*>(p + cur);
      switch (hint) {  // the same every call: predicted
        case 1:
          _mm_prefetch(a, _MM_HINT_T1);
          break;
        case 2:
          _mm_prefetch(a, _MM_HINT_T2);
          break;
        case 3:
          _mm_prefetch(a, _MM_HINT_NTA);
          break;
        default:
          _mm_prefetch(a, _MM_HINT_T0);
      }
    }
  }
};

}  // namespace ls
