// The q8 path of matmul_cpu (kernels/cpu/matmul_cpu.h): quantize once, then
// the rows of one or more weights (q/k/v, gate/up: the parts share x) in one
// pool job. Each row is read once from memory and dotted with up to 8 tokens
// per pass (kernels/cpu/dot_q8.h).
//
// Work split: the parts' rows are one sequence, claimed in ranges from an
// atomic cursor. Ranges shrink as the job drains (guided: remaining /
// (threads * tasks_per_thread), at least kMinRows), so the first claims are
// long streams and the last are short: a thread that finishes early waits
// for at most a short range, not a sixteenth of another thread's share. A
// thread claims its next range while it computes the last rows of the
// current one, so the row prefetch runs on across the boundary instead of
// starting each range with a cold miss. Which thread computes a row does not
// change its result (each row is one fixed-order dot), so results do not
// depend on the thread count or on the split.
// defines: matmul_cpu_quantize, matmul_cpu_q8, matmul_cpu_q8_parts, matmul_cpu_q8_auto,
//          parse_cpu_tuning
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdlib>

#include "kernels/cpu/dot_q8.h"
#include "kernels/cpu/dot_q8c.h"
#include "kernels/cpu/gemm_q8c.h"
#include "kernels/cpu/q8_chunks.h"
#include "kernels/cpu/matmul_cpu.h"

namespace ls {

ActQ8View matmul_cpu_quantize(const float* x, int64_t n_tok, int64_t n_in,
                              CpuMatmulScratch& scratch, CpuIsa isa) {
  scratch.act().reserve(n_tok, n_in);
  quantize_act_q8_cpu(x, n_tok, n_in, scratch.act(), isa);
  return scratch.act().view(n_in);
}

ActQ8View matmul_cpu_quantize(ThreadPool& pool, const float* x, int64_t n_tok, int64_t n_in,
                              CpuMatmulScratch& scratch, CpuIsa isa) {
  // Ranges of whole chunks (the chunk form quantizes per 256), at least 16k
  // values a task: below that one thread does it (a wake-up costs more).
  const int64_t unit = n_in % 256 == 0 ? 8 : 1;
  const int64_t nu = n_tok * n_in / kActQ8Block / unit;
  const int64_t tasks =
      std::min<int64_t>(2 * int64_t{pool.size()}, n_tok * n_in / (int64_t{16} << 10));
  if (tasks <= 1) return matmul_cpu_quantize(x, n_tok, n_in, scratch, isa);
  ActQ8Buffer& act = scratch.act();
  act.reserve(n_tok, n_in);
  pool.run(tasks, [&](int64_t task, int) {
    quantize_act_q8_cpu_blocks(x, n_in, nu * task / tasks * unit, nu * (task + 1) / tasks * unit,
                               act, isa);
  });
  return act.view(n_in);
}

namespace {

// Short enough that the last claims end together, long enough that a claim
// (one atomic) is noise next to it: 8 rows of 8192 Q4_K values are 36 KiB.
constexpr int64_t kMinRows = 8;

// Everything the threads share behind one pointer (std::function's small
// buffer: pool.run allocates nothing).
struct JobQ8 {
  const MatmulQ8Part* parts;
  int n_parts;
  int64_t start[kMatmulQ8MaxParts + 1];  // first row of each part in the sequence
  uint64_t row_bytes[kMatmulQ8MaxParts];
  const ActQ8View* x;
  int64_t n_tok;
  DotQ8Fn dot[kMatmulQ8MaxParts];  // per part: the chunk form's dot for a K-quant when x has it
  int64_t prefetch_rows;
  int prefetch_hint;
  int64_t divisor;  // threads * tasks_per_thread
  std::atomic<int64_t> cursor{0};

  int64_t total() const { return start[n_parts]; }
  int part_of(int64_t g) const {
    int p = 0;
    while (g >= start[p + 1]) ++p;
    return p;
  }
  const uint8_t* row(int p, int64_t g) const {
    return static_cast<const uint8_t*>(parts[p].w.data) + (g - start[p]) * row_bytes[p];
  }
  // [r0, r1) of the sequence, or false when it is drained.
  bool claim(int64_t& r0, int64_t& r1) {
    int64_t cur = cursor.load(std::memory_order_relaxed), n;
    do {
      const int64_t left = total() - cur;
      if (left <= 0) return false;
      n = std::min(left, std::max(kMinRows, left / divisor));
    } while (!cursor.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
    r0 = cur;
    r1 = cur + n;
    return true;
  }
};

void run_thread_q8(JobQ8& j) {
  int64_t r0, r1, n0 = 0, n1 = 0;
  if (!j.claim(r0, r1)) return;
  for (;;) {
    bool claimed_next = false, have_next = false;
    for (int64_t g = r0; g < r1; ++g) {
      // The row k ahead in this thread's sequence: in this range, or at the
      // start of the next one (claimed now, while this one still runs).
      RowPrefetch next{};
      const int64_t ahead = g + j.prefetch_rows;
      if (j.prefetch_rows > 0) {
        int64_t a = -1;
        if (ahead < r1) {
          a = ahead;
        } else {
          if (!claimed_next) {
            have_next = j.claim(n0, n1);
            claimed_next = true;
          }
          if (have_next && n0 + (ahead - r1) < n1) a = n0 + (ahead - r1);
        }
        if (a >= 0) {
          const int pa = j.part_of(a);
          next = {j.row(pa, a), static_cast<int64_t>(j.row_bytes[pa]), j.prefetch_hint};
        }
      }
      const int p = j.part_of(g);
      const MatmulQ8Part& part = j.parts[p];
      const uint8_t* src = j.row(p, g);
      const int64_t r = g - j.start[p];
      for (int64_t t0 = 0; t0 < j.n_tok; t0 += kDotMaxTokens) {
        const int nt = static_cast<int>(std::min<int64_t>(kDotMaxTokens, j.n_tok - t0));
        j.dot[p](part.w.type, src, *j.x, t0, nt, part.y + t0 * part.w.n_out + r, part.w.n_out,
                 t0 == 0 ? next : RowPrefetch{});
      }
    }
    if (!claimed_next) have_next = j.claim(n0, n1);
    if (!have_next) return;
    r0 = n0;
    r1 = n1;
  }
}

}  // namespace

void matmul_cpu_q8_parts(ThreadPool& pool, const MatmulQ8Part* parts, int n_parts,
                         const ActQ8View& x, int64_t n_tok, CpuIsa isa,
                         const CpuMatmulTuning& tune) {
  assert(n_parts >= 1 && n_parts <= kMatmulQ8MaxParts && cpu_isa_supported(isa));
  if (n_tok <= 0) return;
  JobQ8 j;
  j.parts = parts;
  j.n_parts = n_parts;
  j.start[0] = 0;
  for (int p = 0; p < n_parts; ++p) {
    const WeightView& w = parts[p].w;
    assert(matmul_cpu_supports(w) && x.n == w.n_in);
    j.row_bytes[p] = ggml_row_bytes(w.type, static_cast<uint64_t>(w.n_in));
    j.start[p + 1] = j.start[p] + std::max<int64_t>(0, w.n_out);
  }
  if (j.total() == 0) return;
  j.x = &x;
  j.n_tok = n_tok;
  for (int p = 0; p < n_parts; ++p)
    j.dot[p] = x.qc && q8c_type(parts[p].w.type) ? dot_q8c_fn(isa) : dot_q8_fn(isa);
  j.prefetch_rows = tune.prefetch_rows;
  j.prefetch_hint = tune.prefetch_hint;
  j.divisor = static_cast<int64_t>(pool.size()) * std::max(1, tune.tasks_per_thread);
  JobQ8* jp = &j;
  pool.run(pool.size(), [jp](int64_t, int) { run_thread_q8(*jp); });
}

void matmul_cpu_q8_auto(ThreadPool& pool, const MatmulQ8Part* parts, int n_parts,
                        const ActQ8View& x, int64_t n_tok, CpuMatmulScratch& scratch, CpuIsa isa,
                        const CpuMatmulTuning& tune) {
  if (x.qc) {  // the chunk form: its GEMM for K-quants where the tile unit runs it, else the dot
    bool all_k = true, any_k = false;
    for (int p = 0; p < n_parts; ++p) {
      all_k = all_k && q8c_type(parts[p].w.type);
      any_k = any_k || q8c_type(parts[p].w.type);
    }
    if (any_k && !all_k) {  // mixed: one part at a time, each by its own form
      for (int p = 0; p < n_parts; ++p)
        matmul_cpu_q8_auto(pool, parts + p, 1, x, n_tok, scratch, isa, tune);
      return;
    }
    if (all_k) {
      const GemmQ8cTileFn k = isa == CpuIsa::Avx512 ? gemm_q8c_kernel(GemmQ8Amx::Auto) : nullptr;
      if (k && n_tok >= gemm_q8c_min_tokens())
        gemm_q8c_parts(pool, parts, n_parts, x, n_tok, scratch.gemm_chunks(), k);
      else
        matmul_cpu_q8_parts(pool, parts, n_parts, x, n_tok, isa, tune);
      return;
    }
  }
  // Each part by its own threshold (the direct tile's types from 4 tokens
  // on AVX-512 VNNI, the others from 8): the GEMM's parts, then the dot's.
  MatmulQ8Part gemm[kMatmulQ8MaxParts], dot[kMatmulQ8MaxParts];
  int n_gemm = 0, n_dot = 0;
  for (int p = 0; p < n_parts; ++p) {
    if (n_tok >= gemm_q8_min_tokens(isa, parts[p].w.type, x.n))
      gemm[n_gemm++] = parts[p];
    else
      dot[n_dot++] = parts[p];
  }
  if (n_gemm > 0) gemm_q8_parts(pool, gemm, n_gemm, x, n_tok, scratch.gemm(), isa);
  if (n_dot > 0) matmul_cpu_q8_parts(pool, dot, n_dot, x, n_tok, isa, tune);
}

Expected<CpuMatmulTuning> parse_cpu_tuning(const std::string& s, CpuMatmulTuning t) {
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    char* stop = nullptr;
    const long v = eq == std::string::npos ? -1 : std::strtol(item.c_str() + eq + 1, &stop, 10);
    if (eq == std::string::npos || *stop != '\0' || stop == item.c_str() + eq + 1)
      return make_error("cpu tuning '%s': want NAME=INTEGER (tasks, pf, hint)", item.c_str());
    if (name == "tasks" && v >= 1 && v <= 1024) {
      t.tasks_per_thread = static_cast<int>(v);
    } else if (name == "pf" && v >= 0 && v <= 64) {
      t.prefetch_rows = static_cast<int>(v);
    } else if (name == "hint" && v >= 0 && v <= 3) {
      t.prefetch_hint = static_cast<int>(v);
    } else {
      return make_error(
          "cpu tuning '%s': unknown name or value out of range (tasks 1..1024, pf 0..64, hint "
          "0..3)",
          item.c_str());
    }
  }
  return t;
}

void matmul_cpu_q8(ThreadPool& pool, const WeightView& w, const ActQ8View& x, int64_t n_tok,
                   float* y, CpuIsa isa, const CpuMatmulTuning& tune) {
  const MatmulQ8Part part{w, y};
  matmul_cpu_q8_parts(pool, &part, 1, x, n_tok, isa, tune);
}

}  // namespace ls
