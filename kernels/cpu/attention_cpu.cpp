// attention_cpu (kernels/cpu/attention_cpu.h): the work split, the merge of
// the blocks' partial triples and the ISA dispatch; a block's arithmetic is
// in attention_cpu_{avx512,avx2,scalar}.cpp.
//
// Contraction off: merge and finish must be the same arithmetic wherever
// they are called from (they are also kept out of line, one copy each).
// defines: AttentionCpuScratch::reserve, attention_cpu_isa, attention_cpu
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/cpu/attention_cpu.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>

#include "kernels/cpu/attention_cpu_block.h"

namespace ls {

void AttentionCpuScratch::reserve(int threads, int group, int head_dim, int64_t rows,
                                  int64_t tasks) {
  if (threads > threads_ || group > group_ || head_dim > head_dim_) {
    threads_ = std::max(threads, threads_);
    group_ = std::max(group, group_);
    head_dim_ = std::max(head_dim, head_dim_);
    // Scores, the running state, the block's partial and the transposed
    // queries; rounded to 16 floats so threads do not share cache lines.
    per_thread_ =
        (scores_floats() + 2 * triple_floats() + int64_t{group_} * head_dim_ + 15) / 16 * 16;
    thread_.assign(static_cast<size_t>(threads_ * per_thread_), 0.0f);
    split_floats_ = 0;  // the triple grew: resize below
    split_.clear();
  }
  if (tasks * triple_floats() > split_floats_) {
    split_floats_ = tasks * triple_floats();
    split_.assign(static_cast<size_t>(split_floats_), 0.0f);
  }
  if (tasks > tasks_) {
    tasks_ = tasks;
    done_ = std::make_unique<Done[]>(static_cast<size_t>(tasks_));
  }
  if (rows > rows_) {
    rows_ = rows;
    fold_ = std::make_unique<RowFold[]>(static_cast<size_t>(rows_));
  }
  if (static_cast<int64_t>(task0_.size()) < rows + 1) task0_.resize(static_cast<size_t>(rows + 1));
}

int attention_cpu_block_len(int64_t n_pos, int block) {
  if (block > 0) return block;
  return n_pos <= kAttnShortRow ? kAttnBlockShort : kAttnBlock;
}

namespace {
// Whether a row of n_pos positions in blocks of len cuts its first and last
// block in two: asked for, more than one block, halves of whole tiles.
bool tapered(int64_t n_pos, int len, bool taper) {
  return taper && n_pos > len && len % (2 * kAttnKTile) == 0;
}
}  // namespace

int64_t attention_cpu_blocks(int64_t n_pos, int block, bool taper) {
  const int len = attention_cpu_block_len(n_pos, block);
  const int64_t uniform = (n_pos + len - 1) / len;
  if (!tapered(n_pos, len, taper)) return uniform;
  const int64_t last = n_pos - (uniform - 1) * len;  // the last uniform block's length
  return uniform + 1 + (last > len / 2 ? 1 : 0);
}

AttnBlockRange attention_cpu_block(int64_t n_pos, int64_t b, int block, bool taper) {
  const int len = attention_cpu_block_len(n_pos, block);
  auto range = [&](int64_t p0, int64_t n) {
    return AttnBlockRange{p0, static_cast<int>(std::min<int64_t>(n, n_pos - p0))};
  };
  if (!tapered(n_pos, len, taper)) return range(b * len, len);
  const int half = len / 2;
  if (b < 2) return range(b * half, half);  // the first uniform block's halves
  const int64_t uniform = (n_pos + len - 1) / len;
  if (b - 1 < uniform - 1) return range((b - 1) * len, len);
  // The last uniform block's halves (the second only where it is longer
  // than half).
  const int64_t p0 = (uniform - 1) * len + (b - uniform) * half;
  return range(p0, half);
}

int64_t attention_cpu_max_blocks(int64_t n_ctx) {
  return std::max(attention_cpu_blocks(std::min<int64_t>(n_ctx, kAttnShortRow)),
                  attention_cpu_blocks(n_ctx));
}

CpuIsa attention_cpu_isa(CpuIsa isa, int head_dim) {
  if (isa == CpuIsa::Avx512 && head_dim % 16 == 0) return CpuIsa::Avx512;
  if ((isa == CpuIsa::Avx512 || isa == CpuIsa::Avx2) && head_dim % 8 == 0) return CpuIsa::Avx2;
  return CpuIsa::Portable;
}

namespace {

using BlockFn = void (*)(const AttnBlockArgs&);

// Everything a task needs, behind one pointer (std::function's small buffer:
// pool.run allocates nothing).
struct Job {
  const AttnArgs* a;
  AttentionCpuScratch* s;
  BlockFn block;
  int group;         // query heads a row computes (a GQA group, or a part of one)
  int n_kv;          // rows per token: the key/value heads times kv_div
  int kv_div;        // rows per key/value head (AttnCpuTuning::group_split)
  int blk;           // positions per block; 0: by the row's length
  bool taper;        // a row's first and last block in halves (AttnCpuTuning)
  int ahead;         // key rows prefetched ahead
  int cold_ahead;    // of a cold block (AttnCpuTuning::cold_ahead; 0: ahead)
  int prefetch;      // kAttnPf* bits
  int64_t kv_bytes;  // of one element
};

int n_blocks(const Job& j, int32_t pos) {
  return static_cast<int>(attention_cpu_blocks(int64_t{pos} + 1, j.blk, j.taper));
}

// Where block b of token t's key/value head h lies: its positions, and the
// runs of them (one for a contiguous cache; a paged cache's blocks, which
// tile the block: its length is a multiple of theirs, each found through
// the table), each run's first key and value.
struct BlockSpan {
  int n_pos = 0, run_len = 0, runs = 0;
};
BlockSpan block_span(const Job& j, int64_t t, int h, int b, const void** k_run,
                     const void** v_run) {
  const AttnArgs& a = *j.a;
  const AttnBlockRange r = attention_cpu_block(int64_t{a.pos[t]} + 1, b, j.blk, j.taper);
  const int64_t p0 = r.p0;
  BlockSpan sp;
  sp.n_pos = r.n;
  const int64_t head = int64_t{h / j.kv_div} * a.kv.head_stride(a.head_dim);
  sp.run_len = a.kv.pages.table ? 1 << a.kv.pages.shift : r.n;
  for (int r = 0; r * sp.run_len < sp.n_pos; ++r, ++sp.runs) {
    const int64_t at = a.kv.at(a.seq[t], static_cast<int32_t>(p0 + r * sp.run_len)) + head;
    k_run[r] = static_cast<const char*>(a.kv.k) + at * j.kv_bytes;
    if (v_run) v_run[r] = static_cast<const char*>(a.kv.v) + at * j.kv_bytes;
  }
  return sp;
}

// A block to run: (token, key/value head, block).
struct BlockId {
  int64_t t = -1;
  int h = 0, b = 0;
};

// Block `id` into triple; `next`, if any (t >= 0), is the block this thread
// runs after it, whose keys the value loop prefetches; cold: no block of
// this thread fetched this one's keys.
void run_block(const Job& j, BlockId id, BlockId next, int thread, float* triple, bool cold) {
  const AttnArgs& a = *j.a;
  AttnBlockArgs ba;
  ba.q = a.q + id.t * a.ldq + int64_t{id.h} * j.group * a.head_dim;
  const BlockSpan sp = block_span(j, id.t, id.h, id.b, ba.k_run, ba.v_run);
  ba.n_pos = sp.n_pos;
  ba.run_shift = a.kv.pages.table ? a.kv.pages.shift : 30;
  if (next.t >= 0 && (j.prefetch & kAttnPfNextKeys)) {
    const BlockSpan ns = block_span(j, next.t, next.h, next.b, ba.next_k, nullptr);
    // Keys of a run: tiled or rows, run_len positions of a head contiguous
    // (head-major; a row cache's runs hold its other heads too: only this
    // head's rows are read, so only the first row's bytes are fetched).
    const int64_t row = int64_t{a.head_dim} * j.kv_bytes;
    const bool contiguous = a.kv.ld_pos == a.head_dim;
    ba.next_runs = ns.runs;
    ba.next_run_bytes = contiguous ? ns.run_len * row : row;
    ba.next_last_bytes = contiguous ? (ns.n_pos - (ns.runs - 1) * ns.run_len) * row : row;
  }
  ba.type = a.kv.type;
  ba.k_tiled = a.kv.k_tiled;
  ba.ld_pos = a.kv.ld_pos;
  ba.ahead = cold && j.cold_ahead > 0 ? j.cold_ahead : j.ahead;
  ba.prefetch = j.prefetch;
  ba.group = j.group;
  ba.head_dim = a.head_dim;
  ba.scale = a.scale;
  ba.scores = j.s->scores(thread);
  ba.q_t = j.s->q_t(thread);
  ba.triple = triple;
  j.block(ba);
}

// One copy per ISA (GCC's target_clones, chosen at load): element-wise
// products and sums, contraction off, so every copy gives the same bits;
// the widest runs the fold at a split call's end, on its critical path.
// Not under ThreadSanitizer: a clone's resolver runs while the loader
// relocates the program, before TSan's runtime is up, and its instrumented
// code crashed every test binary at load (scripts/sanitize.sh tsan).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define LS_ATTN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LS_ATTN_CLONES
#endif

// The lines of [p, p + bytes) fetched for writing: PREFETCHW where the CPU
// has it (w: every AVX-512 CPU does), else a plain prefetch. A split
// call's partial was last read by another core (the previous call's
// fold), so its stores need the lines back; fetched as the block starts,
// not as its stores drain at its end, where the atomic that publishes the
// block waited for them: about 1 us of a 9 us block
// (raw-2026-12-04-s26/call3: the fold's share of a task). In asm: GCC
// takes a function of nothing but __builtin_prefetch for one without
// effects and drops calls to it.
void prefetch_for_write(void* p, int64_t bytes, bool w) {
  char* c = static_cast<char*>(p);
  for (int64_t o = 0; o < bytes; o += 64) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (w) {
      asm volatile("prefetchw %0" : : "m"(c[o]));
      continue;
    }
#endif
    __builtin_prefetch(c + o, 0, 3);
  }
  (void)w;
}

// The lines of [p, p + bytes) fetched for reading.
void prefetch_lines(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, 3);
}

// state = merge(state, part) (attention_cpu.h), per query head of the group.
[[gnu::noinline]] LS_ATTN_CLONES void merge(float* state, const float* part, int group, int hd) {
  float *m = state, *l = state + group, *acc = state + 2 * group;
  const float *pm = part, *pl = part + group, *pacc = part + 2 * group;
  for (int g = 0; g < group; ++g) {
    const float mx = std::max(m[g], pm[g]);
    const float fa = std::exp(m[g] - mx), fb = std::exp(pm[g] - mx);
    m[g] = mx;
    l[g] = l[g] * fa + pl[g] * fb;
    float* o = acc + int64_t{g} * hd;
    const float* po = pacc + int64_t{g} * hd;
    for (int i = 0; i < hd; ++i) o[i] = o[i] * fa + po[i] * fb;
  }
}

// out = acc / l, per query head.
[[gnu::noinline]] LS_ATTN_CLONES void finish(const float* state, int group, int hd, float* out) {
  const float* l = state + group;
  const float* acc = state + 2 * group;
  for (int g = 0; g < group; ++g) {
    const float inv = 1.0f / l[g];
    for (int i = 0; i < hd; ++i) out[int64_t{g} * hd + i] = acc[int64_t{g} * hd + i] * inv;
  }
}
#undef LS_ATTN_CLONES

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

float* out_of(const AttnArgs& a, int64_t t, int h, int group) {
  return a.out + t * a.ldo + int64_t{h} * group * a.head_dim;
}

// A whole row on one thread: each block folded into the state as it is made.
void run_row(const Job& j, int64_t t, int h, int thread) {
  float* state = j.s->state(thread);
  float* part = j.s->part(thread);
  const int nb = n_blocks(j, j.a->pos[t]);
  for (int b = 0; b < nb; ++b) {
    const BlockId next = b + 1 < nb ? BlockId{t, h, b + 1} : BlockId{};
    run_block(j, {t, h, b}, next, thread, b == 0 ? state : part, b == 0);
    if (b > 0) merge(state, part, j.group, j.a->head_dim);
  }
  finish(state, j.group, j.a->head_dim, out_of(*j.a, t, h, j.group));
}

}  // namespace

void attention_cpu(ThreadPool& pool, const AttnArgs& a, AttentionCpuScratch& scratch, CpuIsa isa,
                   const AttnCpuTuning& tune) {
  assert(a.n_head % a.n_head_kv == 0 && a.head_dim % 2 == 0 && cpu_isa_supported(isa));
  if (a.n_tok <= 0) return;
  Job j{};
  j.a = &a;
  j.s = &scratch;
  j.group = a.n_head / a.n_head_kv;
  // group_split: each key/value head's query heads as kv_div rows of their
  // own, run whole (below).
  j.kv_div = tune.group_split > 1 && j.group % tune.group_split == 0 ? tune.group_split : 1;
  j.group /= j.kv_div;
  j.n_kv = a.n_head_kv * j.kv_div;
  j.blk = tune.block;
  j.taper = tune.taper;
  assert(j.blk % 16 == 0 && j.blk >= 0 && j.blk <= kAttnBlock);
  // A paged cache's blocks tile every attention block (16 divides them all).
  assert(!a.kv.pages.table ||
         ((1 << a.kv.pages.shift) >= kAttnMinRun && (1 << a.kv.pages.shift) <= 16));
  // Tiled keys: rows of a head contiguous, runs of whole tiles.
  assert(!a.kv.k_tiled || (a.kv.ld_pos == a.head_dim &&
                           (!a.kv.pages.table || (1 << a.kv.pages.shift) % kAttnKTile == 0)));
  j.ahead = tune.ahead > 0 ? tune.ahead : a.kv.k_tiled ? kAttnAheadTiled : kAttnAheadRows;
  j.prefetch = tune.prefetch >= 0 ? tune.prefetch : kAttnPfDefault;
  // A key row layout keeps its own (short) distance for every block.
  j.cold_ahead = a.kv.k_tiled ? std::max(0, tune.cold_ahead) : 0;
  j.kv_bytes = a.kv.type == AttnKvType::F16 ? 2 : 4;
  switch (attention_cpu_isa(isa, a.head_dim)) {
    case CpuIsa::Avx512:
      j.block = attention_block_avx512;
      break;
    case CpuIsa::Avx2:
      j.block = attention_block_avx2;
      break;
    default:
      j.block = attention_block_portable;
      break;
  }
  const int64_t rows = a.n_tok * j.n_kv;
  int64_t tasks = 0;
  for (int64_t t = 0; t < a.n_tok; ++t) tasks += int64_t{n_blocks(j, a.pos[t])} * j.n_kv;
  // Split rows into blocks only when rows alone leave threads idle (fewer
  // than 4 per thread: rows differ in length) and some row has more than one
  // block. The results are the same either way (the fold is the same).
  const bool split =
      pool.size() > 1 && rows < 4 * int64_t{pool.size()} && tasks > rows && j.kv_div == 1;
  scratch.reserve(pool.size(), j.group, a.head_dim, split ? rows : 0, split ? tasks : 0);
  const Job* jp = &j;
  if (!split) {
    pool.run(rows, [jp](int64_t r, int thread) {
      run_row(*jp, r / jp->n_kv, static_cast<int>(r % jp->n_kv), thread);
    });
    return;
  }
  // One task per block, block-major: token t's tasks start at task0[t], and
  // block b of its head h is task task0[t] + b·n_head_kv + h, whose partial
  // is split_part(i). Block-major so that the tasks running at once read
  // all the heads of the same positions: whole rows of the cache, a
  // contiguous stretch of memory, rather than one head's 1/n_head_kv of
  // rows spread over the whole context (whose neighbours the hardware
  // prefetchers would fetch for nothing). A row's partials are folded in
  // block order, as its blocks finish (Split::one).
  int64_t* task0 = scratch.task0();
  AttentionCpuScratch::RowFold* fold = scratch.fold();
  task0[0] = 0;
  for (int64_t t = 0; t < a.n_tok; ++t) {
    const int nb = n_blocks(j, a.pos[t]);
    task0[t + 1] = task0[t] + int64_t{nb} * j.n_kv;
    for (int h = 0; h < j.n_kv; ++h) {
      AttentionCpuScratch::RowFold& f = fold[t * j.n_kv + h];
      f.pending.store(nb, std::memory_order_relaxed);
      f.lock.store(0, std::memory_order_relaxed);
      f.frontier = 0;
    }
  }
  // Flags left from a call 2^32 calls ago would read as this call's: reset
  // them when the stamp wraps.
  uint32_t stamp = scratch.next_stamp();
  if (stamp == 0) {
    for (int64_t i = 0; i < scratch.done_capacity(); ++i) scratch.done()[i].v.store(0);
    stamp = scratch.next_stamp();
  }
  // Task i: block b of token t's head h, its partial into split_part(i),
  // then the row's fold: as blocks finish (fold_as_done), or all of it by
  // the row's last block to finish.
  struct Split {
    const Job* j;
    std::atomic<int64_t>* claim;
    int64_t tasks, hold;
    int64_t n_first, n_next;  // static_start's given blocks (first, next) per pool task
    bool as_done, fold_pf;
    uint32_t stamp;  // this call's (AttentionCpuScratch::Done)
    int64_t* times;  // AttnCpuTuning::task_ns
    BlockId id(int64_t i) const {
      const int64_t* task0 = j->s->task0();
      const int64_t t = std::upper_bound(task0, task0 + j->a->n_tok + 1, i) - task0 - 1;
      const int n_kv = j->n_kv;
      return {t, static_cast<int>((i - task0[t]) % n_kv), static_cast<int>((i - task0[t]) / n_kv)};
    }
    void one(int64_t i, BlockId next, int thread, bool cold) const {
      const BlockId b = id(i);
      const int nb = n_blocks(*j, j->a->pos[b.t]);
      const int n_kv = j->n_kv;
      int64_t* tr = times ? times + 4 * i : nullptr;
      if (tr) tr[0] = thread, tr[1] = now_ns();
      prefetch_for_write(j->s->split_part(i),
                         int64_t{j->group} * (j->a->head_dim + 2) * int64_t{sizeof(float)},
                         j->block == attention_block_avx512);
      run_block(*j, b, next, thread, j->s->split_part(i), cold);
      if (tr) tr[2] = now_ns();
      AttentionCpuScratch::RowFold& f = j->s->fold()[b.t * n_kv + b.h];
      const int64_t first = j->s->task0()[b.t] + b.h;
      float* state = j->s->split_part(first);
      auto part = [&](int c) { return j->s->split_part(first + int64_t{c} * n_kv); };
      if (!as_done) {
        // acq_rel: the folding thread sees every other block's partial.
        if (f.pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        for (int c = 1; c < nb; ++c) merge(state, part(c), j->group, j->a->head_dim);
        finish(state, j->group, j->a->head_dim, out_of(*j->a, b.t, b.h, j->group));
        return;
      }
      // Fold as blocks finish: whoever holds the row's lock folds the done
      // blocks at its frontier, in block order, so the row's last block
      // leaves a merge or two on the critical path, not nb - 1 (each
      // reading a partial from another core's cache). A thread that finds
      // the lock taken leaves its block to the holder, which re-checks the
      // frontier after letting go: seq_cst on both sides (done, then the
      // lock; the lock, then done), so one of the two always sees the other.
      AttentionCpuScratch::Done* done = j->s->done();
      auto is_done = [&](int c) { return done[first + int64_t{c} * n_kv].v.load() == stamp; };
      done[i].v.store(stamp);
      const int64_t triple_bytes =
          int64_t{j->group} * (j->a->head_dim + 2) * int64_t{sizeof(float)};
      const bool w = j->block == attention_block_avx512;
      while (f.lock.exchange(1) == 0) {
        int c = f.frontier;
        if (fold_pf && c > 0 && c < nb && is_done(c)) prefetch_for_write(state, triple_bytes, w);
        for (; c < nb && is_done(c); ++c) {
          if (c == 0) continue;
          if (fold_pf) prefetch_lines(part(c), triple_bytes);
          merge(state, part(c), j->group, j->a->head_dim);
        }
        f.frontier = c;
        if (c == nb) {
          finish(state, j->group, j->a->head_dim, out_of(*j->a, b.t, b.h, j->group));
          return;  // the lock stays taken: nothing is left to fold
        }
        f.lock.store(0);
        if (!is_done(c)) return;
      }
    }
  };
  // Each thread takes blocks from a counter, and claims its next one as it
  // starts a block, so that the block's value loop can fetch the next one's
  // keys: a core's reads in flight are bounded by its fill buffers, and
  // with nothing to fetch while the values (already in cache) are summed,
  // that phase read nothing (attention_cpu.h). Not while at most a block
  // per thread is left (by default): one held back then can leave a thread
  // idle. On the H200 machine's Xeon, 16 threads, three rounds of one call,
  // claiming ahead to the end read 0.64-0.67 of the host bandwidth at 1k
  // and 0.62-0.75 at 2k, stopping 0.68-0.75 and 0.73-0.78
  // (bench/results/raw-2026-12-04-s25/call6).
  std::atomic<int64_t>* claim = scratch.claim();
  claim->store(0, std::memory_order_relaxed);
  const int64_t hold = !(j.prefetch & kAttnPfNextKeys) ? tasks
                       : tune.hold >= 0                ? tune.hold
                                                       : int64_t{pool.size()};
  // static_start: pool task r's first block is r and its next P + r, the
  // counter starting past them.
  const int64_t n_pool = pool.size();
  const int64_t n_first = tune.static_start ? std::min(n_pool, tasks) : 0;
  const int64_t n_next =
      n_first > 0 && tasks - n_first > hold ? std::min(n_pool, tasks - n_first) : 0;
  claim->store(n_first + n_next, std::memory_order_relaxed);
  const Split sp{
      &j,    claim,       tasks, hold, n_first, n_next, tune.fold_as_done, tune.fold_prefetch,
      stamp, tune.task_ns};
  const Split* spp = &sp;
  pool.run(n_pool, [spp](int64_t r, int thread) {
    const Split& s = *spp;
    int64_t i = r < s.n_first ? r : s.claim->fetch_add(1, std::memory_order_relaxed);
    int64_t held = r < s.n_next ? s.n_first + r : -1;  // a next block given, not claimed
    bool cold = true;                                  // the thread's first block
    while (i < s.tasks) {
      int64_t next = -1;
      if (held >= 0) {
        next = held;
        held = -1;
      } else if (s.tasks - s.claim->load(std::memory_order_relaxed) > s.hold) {
        next = s.claim->fetch_add(1, std::memory_order_relaxed);
        if (next >= s.tasks) next = -1;
      }
      s.one(i, next >= 0 ? s.id(next) : BlockId{}, thread, cold);
      if (s.times) s.times[4 * i + 3] = now_ns();
      cold = next < 0;
      i = next >= 0 ? next : s.claim->fetch_add(1, std::memory_order_relaxed);
    }
  });
}

}  // namespace ls
