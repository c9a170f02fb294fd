// The q8 path of matmul_cpu (kernels/cpu/matmul_cpu.h): quantize once, then
// rows in contiguous chunks over the pool, each row read once from memory
// and dotted with up to 8 tokens per pass (kernels/cpu/dot_q8.h).
// defines: matmul_cpu_quantize, matmul_cpu_q8
#include <algorithm>
#include <cassert>

#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/matmul_cpu.h"

namespace ls {

ActQ8View matmul_cpu_quantize(const float* x, int64_t n_tok, int64_t n_in,
                              CpuMatmulScratch& scratch, CpuIsa isa) {
  scratch.act().reserve(n_tok, n_in);
  quantize_act_q8_cpu(x, n_tok, n_in, scratch.act(), isa);
  return scratch.act().view(n_in);
}

namespace {

// Everything a task needs behind one pointer (std::function's small buffer:
// pool.run allocates nothing).
struct JobQ8 {
  const WeightView* w;
  const ActQ8View* x;
  int64_t n_tok;
  float* y;
  DotQ8Fn dot;
  uint64_t row_bytes;
  int64_t rows_per_task;
  int64_t prefetch_rows;
};

void run_rows_q8(const JobQ8& j, int64_t r0, int64_t r1) {
  const WeightView& w = *j.w;
  const uint8_t* src = static_cast<const uint8_t*>(w.data) + r0 * j.row_bytes;
  for (int64_t r = r0; r < r1; ++r, src += j.row_bytes) {
    // A row ahead in the chunk is fetched during this one's first tile (past
    // the chunk's end nothing: the next chunk may be another thread's). The
    // hardware prefetchers stop at 4 KiB pages; this does not.
    const int64_t k = j.prefetch_rows;
    const RowPrefetch next{src + k * j.row_bytes,
                           k > 0 && r + k < r1 ? static_cast<int64_t>(j.row_bytes) : 0};
    for (int64_t t0 = 0; t0 < j.n_tok; t0 += kDotMaxTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(kDotMaxTokens, j.n_tok - t0));
      j.dot(w.type, src, *j.x, t0, nt, j.y + t0 * w.n_out + r, w.n_out,
            t0 == 0 ? next : RowPrefetch{});
    }
  }
}

}  // namespace

void matmul_cpu_q8(ThreadPool& pool, const WeightView& w, const ActQ8View& x, int64_t n_tok,
                   float* y, CpuIsa isa, const CpuMatmulTuning& tune) {
  assert(matmul_cpu_supports(w) && x.n == w.n_in && cpu_isa_supported(isa));
  if (n_tok <= 0 || w.n_out <= 0) return;
  JobQ8 j{};
  j.w = &w;
  j.x = &x;
  j.n_tok = n_tok;
  j.y = y;
  j.dot = dot_q8_fn(isa);
  j.row_bytes = ggml_row_bytes(w.type, static_cast<uint64_t>(w.n_in));
  j.prefetch_rows = tune.prefetch_rows;
  const int64_t per_thread = std::max(1, tune.tasks_per_thread);
  const int64_t n_tasks_target = static_cast<int64_t>(pool.size()) * per_thread;
  j.rows_per_task = std::max<int64_t>(4, (w.n_out + n_tasks_target - 1) / n_tasks_target);
  const int64_t n_tasks = (w.n_out + j.rows_per_task - 1) / j.rows_per_task;
  const JobQ8* jp = &j;
  pool.run(n_tasks, [jp](int64_t task, int) {
    const int64_t r0 = task * jp->rows_per_task;
    run_rows_q8(*jp, r0, std::min(jp->w->n_out, r0 + jp->rows_per_task));
  });
}

}  // namespace ls
