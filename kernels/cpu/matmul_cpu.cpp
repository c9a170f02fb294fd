// matmul_cpu (kernels/cpu/matmul_cpu.h): the row loop, the work split and
// the ISA dispatch; the arithmetic is in unpack_*.cpp and dot_*.cpp.
// defines: CpuMatmulScratch::reserve, matmul_cpu_supports, matmul_cpu
#include "kernels/cpu/matmul_cpu.h"

#include <algorithm>
#include <cassert>

#include "kernels/cpu/dot.h"
#include "kernels/cpu/unpack.h"

namespace ls {

void CpuMatmulScratch::reserve(int n_threads, int64_t n_in) {
  n_in = (n_in + 31) / 32 * 32;
  if (n_threads <= this->n_threads() && n_in <= max_n_in_) return;
  max_n_in_ = std::max(max_n_in_, n_in);
  q_.resize(std::max<size_t>(q_.size(), n_threads));
  sm_.resize(q_.size());
  for (auto& q : q_) q.assign(max_n_in_, 0);
  for (auto& sm : sm_) sm.assign(2 * max_n_in_ / 16, 0.0f);
}

bool matmul_cpu_supports(const WeightView& w) {
  return g16_supports(w.type, w.n_in);
}

namespace {

using UnpackFn = void (*)(GgmlType, const void*, int64_t, const G16Row&);
using DotFn = void (*)(const G16Row&, int64_t, const float*, int64_t, int, float*, int64_t,
                       const RowPrefetch&);

// Everything a task needs, behind one pointer: a lambda capturing only this
// fits std::function's small buffer, so pool.run allocates nothing.
struct Job {
  const WeightView* w;
  const float* x;
  int64_t n_tok;
  float* y;
  CpuMatmulScratch* scratch;
  UnpackFn unpack;
  DotFn dot;
  bool has_min;
  uint64_t row_bytes;
  int64_t rows_per_task;
};

void run_rows(const Job& j, int64_t r0, int64_t r1, int thread) {
  const WeightView& w = *j.w;
  const CpuMatmulScratch::Row buf = j.scratch->row(thread);
  const G16Row row{buf.q, buf.s, j.has_min ? buf.m : nullptr};
  const uint8_t* src = static_cast<const uint8_t*>(w.data) + r0 * j.row_bytes;
  for (int64_t r = r0; r < r1; ++r, src += j.row_bytes) {
    j.unpack(w.type, src, w.n_in, row);
    // The unpacked row stays in L1/L2 across the token tiles: the weights
    // come from memory once, however many tokens there are.
    // The next row is fetched during the first tile's dot (the last row of
    // the chunk fetches nothing: the next chunk may be another thread's).
    const RowPrefetch next{src + j.row_bytes, r + 1 < r1 ? static_cast<int64_t>(j.row_bytes) : 0};
    for (int64_t t0 = 0; t0 < j.n_tok; t0 += kDotMaxTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(kDotMaxTokens, j.n_tok - t0));
      j.dot(row, w.n_in, j.x + t0 * w.n_in, w.n_in, nt, j.y + t0 * w.n_out + r, w.n_out,
            t0 == 0 ? next : RowPrefetch{});
    }
  }
}

}  // namespace

void matmul_cpu(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y,
                CpuMatmulScratch& scratch, CpuIsa isa) {
  assert(matmul_cpu_supports(w));
  assert(scratch.n_threads() >= pool.size() && scratch.max_n_in() >= w.n_in);
  assert(cpu_isa_supported(isa));
  if (n_tok <= 0 || w.n_out <= 0) return;
  Job j{};
  j.w = &w;
  j.x = x;
  j.n_tok = n_tok;
  j.y = y;
  j.scratch = &scratch;
  j.has_min = g16_has_min(w.type);
  j.row_bytes = ggml_row_bytes(w.type, static_cast<uint64_t>(w.n_in));
  switch (isa) {
    case CpuIsa::Avx512:
      j.unpack = unpack_g16_avx2, j.dot = dot_g16_f32_avx512;
      break;
    case CpuIsa::Avx2:
      j.unpack = unpack_g16_avx2, j.dot = dot_g16_f32_avx2;
      break;
    default:
      j.unpack = unpack_g16_scalar, j.dot = dot_g16_f32_scalar;
      break;
  }
  // Four contiguous chunks per thread: long sequential runs for the
  // prefetchers, and slack for a thread that wakes late to be covered by the
  // others. At least 4 rows per chunk so tiny matrices do not become one task
  // per row.
  const int64_t n_tasks_target = static_cast<int64_t>(pool.size()) * 4;
  j.rows_per_task = std::max<int64_t>(4, (w.n_out + n_tasks_target - 1) / n_tasks_target);
  const int64_t n_tasks = (w.n_out + j.rows_per_task - 1) / j.rows_per_task;
  const Job* jp = &j;
  pool.run(n_tasks, [jp](int64_t task, int thread) {
    const int64_t r0 = task * jp->rows_per_task;
    run_rows(*jp, r0, std::min(jp->w->n_out, r0 + jp->rows_per_task), thread);
  });
}

}  // namespace ls
