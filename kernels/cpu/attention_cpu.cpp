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
                                  int64_t tasks, int64_t tokens) {
  if (threads > threads_ || group > group_ || head_dim > head_dim_) {
    threads_ = std::max(threads, threads_);
    group_ = std::max(group, group_);
    head_dim_ = std::max(head_dim, head_dim_);
    // Scores, the running state, the block's partial, a token's own state
    // and the transposed queries; rounded to 16 floats so threads do not
    // share cache lines.
    per_thread_ =
        (scores_floats() + 3 * triple_floats() + int64_t{group_} * head_dim_ + 15) / 16 * 16;
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
  if (static_cast<int64_t>(units_.size()) < kUnitInts * tokens + 1)
    units_.resize(static_cast<size_t>(kUnitInts * tokens + 1));
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

// A block to run: block b of key/value head h for the n tokens from t (of
// one sequence; n > 1: a block their rows share, AttnCpuTuning::share).
struct BlockId {
  int64_t t = -1;
  int h = 0, b = 0, n = 1;
};

// Block `id` into triple; `next`, if any (t >= 0), is the block this thread
// runs after it, whose keys the value loop prefetches; cold: no block of
// this thread fetched this one's keys.
void run_block(const Job& j, BlockId id, BlockId next, int thread, float* triple, bool cold) {
  const AttnArgs& a = *j.a;
  AttnBlockArgs ba;
  ba.q = a.q + id.t * a.ldq + int64_t{id.h} * j.group * a.head_dim;
  ba.tokens = id.n;
  ba.ldq_tok = a.ldq;
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

// A partial triple's three parts: m (group), l (group), acc (group,
// head_dim), each contiguous; a token's slice of a shared block's triple.
struct Tri {
  float* m;
  float* l;
  float* acc;
};
// Slice `slice` (of `group` rows) of a triple of `rows` rows at base.
Tri tri(float* base, int rows, int slice, int group, int hd) {
  const int64_t r0 = int64_t{slice} * group;
  return {base + r0, base + rows + r0, base + 2 * int64_t{rows} + r0 * hd};
}

// state = merge(state, part) (attention_cpu.h), per query head of the group.
[[gnu::noinline]] LS_ATTN_CLONES void merge(Tri state, Tri part, int group, int hd) {
  for (int g = 0; g < group; ++g) {
    const float mx = std::max(state.m[g], part.m[g]);
    const float fa = std::exp(state.m[g] - mx), fb = std::exp(part.m[g] - mx);
    state.m[g] = mx;
    state.l[g] = state.l[g] * fa + part.l[g] * fb;
    float* o = state.acc + int64_t{g} * hd;
    const float* po = part.acc + int64_t{g} * hd;
    for (int i = 0; i < hd; ++i) o[i] = o[i] * fa + po[i] * fb;
  }
}

// out = acc / l, per query head.
[[gnu::noinline]] LS_ATTN_CLONES void finish(Tri state, int group, int hd, float* out) {
  for (int g = 0; g < group; ++g) {
    const float inv = 1.0f / state.l[g];
    for (int i = 0; i < hd; ++i)
      out[int64_t{g} * hd + i] = state.acc[int64_t{g} * hd + i] * inv;
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

// Leading blocks that lie alike (the same positions) in the rows of tokens
// at positions pa and pb of one sequence: each row is cut by its own length
// (the block length, the halves of a tapered row's ends).
int common_blocks(const Job& j, int32_t pa, int32_t pb) {
  const int64_t na = int64_t{pa} + 1, nb = int64_t{pb} + 1;
  const int64_t most = std::min(attention_cpu_blocks(na, j.blk, j.taper),
                                attention_cpu_blocks(nb, j.blk, j.taper));
  int b = 0;
  for (; b < most; ++b) {
    const AttnBlockRange x = attention_cpu_block(na, b, j.blk, j.taper);
    const AttnBlockRange y = attention_cpu_block(nb, b, j.blk, j.taper);
    if (x.p0 != y.p0 || x.n != y.n) break;
  }
  return b;
}

// The call's units and tasks, in AttentionCpuScratch::units(): per token t
// (kTok ints at kTok·t) its unit's first token and size, the blocks its
// unit shares, the first task of its own blocks and of its unit's shared
// ones (split calls); after them the runs of tasks ("segments": a unit's
// shared blocks, or a token's own), each one's first task, then its token,
// tokens and first block. A unit is a run of consecutive tokens of one
// sequence whose rows begin with `shared` blocks alike, at most `most`
// tokens; a token with nothing to share is a unit of its own (shared 0).
struct Units {
  static constexpr int kTok = 5;
  int64_t* p;
  int64_t n_tok;
  int64_t& first(int64_t t) const { return p[kTok * t]; }
  int64_t& size(int64_t t) const { return p[kTok * t + 1]; }
  int64_t& shared(int64_t t) const { return p[kTok * t + 2]; }
  int64_t& own0(int64_t t) const { return p[kTok * t + 3]; }
  int64_t& shared0(int64_t t) const { return p[kTok * t + 4]; }
  // Segments: starts (n_seg + 1, the last the task count), then (t, n, b0).
  int64_t* seg_start() const { return p + kTok * n_tok; }
  int64_t* seg() const { return p + kTok * n_tok + 2 * n_tok + 1; }
};
static_assert(Units::kTok + 2 + 6 <= AttentionCpuScratch::kUnitInts, "units' room a token");

// Forms the units (Units); returns how many.
int64_t form_units(const Job& j, const Units& u, int most) {
  const AttnArgs& a = *j.a;
  int64_t n_units = 0;
  for (int64_t t0 = 0; t0 < a.n_tok; ++n_units) {
    int64_t n = 1;
    int shared = 0;
    while (t0 + n < a.n_tok && n < most && a.seq[t0 + n] == a.seq[t0]) {
      int c = common_blocks(j, a.pos[t0], a.pos[t0 + n]);
      if (n > 1) c = std::min(c, shared);
      if (c == 0) break;
      shared = c, ++n;
    }
    for (int64_t t = t0; t < t0 + n; ++t) u.first(t) = t0, u.size(t) = n, u.shared(t) = shared;
    t0 += n;
  }
  return n_units;
}

// Lays out a split call's tasks: each unit's shared blocks (block-major:
// block b of head h is its b·n_kv + h), then each of its tokens' own blocks
// (the same order); returns the number of segments.
int64_t lay_tasks(const Job& j, const Units& u) {
  const AttnArgs& a = *j.a;
  int64_t task = 0, n_seg = 0;
  int64_t* start = u.seg_start();
  int64_t* seg = u.seg();
  auto add = [&](int64_t t, int64_t n, int64_t b0, int64_t blocks) {
    start[n_seg] = task;
    seg[3 * n_seg] = t, seg[3 * n_seg + 1] = n, seg[3 * n_seg + 2] = b0;
    ++n_seg;
    task += blocks * j.n_kv;
  };
  for (int64_t t0 = 0; t0 < a.n_tok; t0 += u.size(t0)) {
    const int64_t n = u.size(t0), shared = u.shared(t0);
    const int64_t sh0 = shared > 0 ? task : -1;
    if (shared > 0) add(t0, n, 0, shared);
    for (int64_t t = t0; t < t0 + n; ++t) {
      u.shared0(t) = sh0;
      u.own0(t) = task;
      const int64_t own = n_blocks(j, a.pos[t]) - shared;
      if (own > 0) add(t, 1, shared, own);
    }
  }
  start[n_seg] = task;
  return n_seg;
}

// A whole row on one thread: each block folded into the state as it is made.
void run_row(const Job& j, int64_t t, int h, int thread) {
  const int G = j.group, hd = j.a->head_dim;
  const Tri state = tri(j.s->state(thread), G, 0, G, hd);
  float* part = j.s->part(thread);
  const int nb = n_blocks(j, j.a->pos[t]);
  for (int b = 0; b < nb; ++b) {
    const BlockId next = b + 1 < nb ? BlockId{t, h, b + 1} : BlockId{};
    run_block(j, {t, h, b}, next, thread, b == 0 ? state.m : part, b == 0);
    if (b > 0) merge(state, tri(part, G, 0, G, hd), G, hd);
  }
  finish(state, G, hd, out_of(*j.a, t, h, G));
}

// A unit's rows of head h on one thread: its shared blocks for all its
// tokens at once, folded in a state of all their rows; then per token its
// slice of that state, folded on with the token's own blocks. The same
// folds, in the same order, as each token's run_row.
void run_unit_rows(const Job& j, const Units& u, int64_t t0, int h, int thread) {
  const int64_t n = u.size(t0);
  const int shared = static_cast<int>(u.shared(t0));
  if (shared == 0) {
    for (int64_t t = t0; t < t0 + n; ++t) run_row(j, t, h, thread);
    return;
  }
  const AttnArgs& a = *j.a;
  const int G = j.group, hd = a.head_dim, R = static_cast<int>(n) * G;
  float* all = j.s->state(thread);
  float* part = j.s->part(thread);
  const int first_nb = n_blocks(j, a.pos[t0]);
  for (int b = 0; b < shared; ++b) {
    const BlockId next = b + 1 < shared        ? BlockId{t0, h, b + 1, static_cast<int>(n)}
                         : shared < first_nb ? BlockId{t0, h, shared}
                                             : BlockId{};
    run_block(j, {t0, h, b, static_cast<int>(n)}, next, thread, b == 0 ? all : part, b == 0);
    if (b > 0) merge(tri(all, R, 0, R, hd), tri(part, R, 0, R, hd), R, hd);
  }
  const Tri own = tri(j.s->own(thread), G, 0, G, hd);
  for (int64_t t = t0; t < t0 + n; ++t) {
    const Tri from = tri(all, R, static_cast<int>(t - t0), G, hd);
    std::copy(from.m, from.m + G, own.m);
    std::copy(from.l, from.l + G, own.l);
    std::copy(from.acc, from.acc + int64_t{G} * hd, own.acc);
    const int nb = n_blocks(j, a.pos[t]);
    for (int b = shared; b < nb; ++b) {
      const BlockId next = b + 1 < nb ? BlockId{t, h, b + 1}
                           : t + 1 < t0 + n && shared < n_blocks(j, a.pos[t + 1])
                               ? BlockId{t + 1, h, shared}
                               : BlockId{};
      run_block(j, {t, h, b}, next, thread, part, false);
      merge(own, tri(part, G, 0, G, hd), G, hd);
    }
    finish(own, G, hd, out_of(a, t, h, G));
  }
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
  // Tokens of one sequence that share blocks: at most kAttnShareRows query
  // rows a block by default; none with group_split (its rows are parts of
  // a group).
  const int most = j.kv_div > 1 || tune.share == 1 ? 1
                   : tune.share > 1               ? tune.share
                                                  : std::max(1, kAttnShareRows / j.group);
  scratch.reserve(pool.size(), j.group, a.head_dim, 0, 0, a.n_tok);
  const Units u{scratch.units(), a.n_tok};
  const int64_t n_units = form_units(j, u, most);
  int64_t widest = 1;
  for (int64_t t0 = 0; t0 < a.n_tok; t0 += u.size(t0))
    if (u.shared(t0) > 0) widest = std::max(widest, u.size(t0));
  const int rows_max = static_cast<int>(widest) * j.group;
  const int64_t rows = a.n_tok * j.n_kv, unit_rows = n_units * j.n_kv;
  // A split call's tasks (laid out here either way: the count decides).
  const int64_t n_seg = lay_tasks(j, u);
  const int64_t tasks = u.seg_start()[n_seg];
  // Split rows into blocks only when a unit's rows alone leave threads idle
  // (fewer than 4 per thread: rows differ in length) and some row has more
  // than one block. The results are the same either way (the fold is the
  // same).
  const bool split = pool.size() > 1 && unit_rows < 4 * int64_t{pool.size()} &&
                     tasks > unit_rows && j.kv_div == 1;
  scratch.reserve(pool.size(), rows_max, a.head_dim, split ? rows : 0, split ? tasks : 0,
                  a.n_tok);
  if (!split) {
    // Task r: the rows of head r mod n_kv of the (r / n_kv)-th unit (their
    // first tokens listed over the split layout's segments, unused here).
    struct Rows {
      const Job* j;
      const Units* u;
      const int64_t* unit0;
    };
    int64_t* unit0 = u.seg_start();
    for (int64_t t0 = 0, k = 0; t0 < a.n_tok; t0 += u.size(t0)) unit0[k++] = t0;
    const Rows rw{&j, &u, unit0};
    const Rows* rp = &rw;
    pool.run(unit_rows, [rp](int64_t r, int thread) {
      const int64_t n_kv = rp->j->n_kv;
      run_unit_rows(*rp->j, *rp->u, rp->unit0[r / n_kv], static_cast<int>(r % n_kv), thread);
    });
    return;
  }
  // One task per block, block-major within each run of tasks (lay_tasks):
  // the tasks running at once read all the heads of the same positions:
  // whole rows of the cache, a contiguous stretch of memory, rather than one
  // head's 1/n_head_kv of rows spread over the whole context (whose
  // neighbours the hardware prefetchers would fetch for nothing). A row's
  // partials are folded in block order, as its blocks finish (Split::one).
  AttentionCpuScratch::RowFold* fold = scratch.fold();
  for (int64_t t = 0; t < a.n_tok; ++t) {
    const int nb = n_blocks(j, a.pos[t]);
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
  // Task i: one block, of one token or of a unit's tokens, its partial into
  // split_part(i), then the fold of each of its rows: as blocks finish
  // (fold_as_done), or all of a row by its last block to finish.
  struct Split {
    const Job* j;
    const Units* u;
    int64_t n_seg;
    std::atomic<int64_t>* claim;
    int64_t tasks, hold;
    int64_t n_first, n_next;  // static_start's given blocks (first, next) per pool task
    bool as_done, fold_pf;
    uint32_t stamp;  // this call's (AttentionCpuScratch::Done)
    int64_t* times;  // AttnCpuTuning::task_ns
    BlockId id(int64_t i) const {
      const int64_t* start = u->seg_start();
      const int64_t s = std::upper_bound(start, start + n_seg + 1, i) - start - 1;
      const int64_t* sg = u->seg() + 3 * s;
      const int64_t k = i - start[s];
      return {sg[0], static_cast<int>(k % j->n_kv), static_cast<int>(sg[2] + k / j->n_kv),
              static_cast<int>(sg[1])};
    }
    // Row (t, h)'s block c: its task, and its partial (a slice of a shared
    // block's).
    int64_t task_of(int64_t t, int h, int c) const {
      const int64_t shared = u->shared(t);
      return c < shared ? u->shared0(t) + int64_t{c} * j->n_kv + h
                        : u->own0(t) + (c - shared) * j->n_kv + h;
    }
    Tri part_of(int64_t t, int h, int c) const {
      const int G = j->group, hd = j->a->head_dim;
      float* p = j->s->split_part(task_of(t, h, c));
      if (c >= u->shared(t)) return tri(p, G, 0, G, hd);
      return tri(p, static_cast<int>(u->size(t)) * G, static_cast<int>(t - u->first(t)), G, hd);
    }
    void one(int64_t i, BlockId next, int thread, bool cold) const {
      const BlockId b = id(i);
      const int G = j->group, hd = j->a->head_dim;
      int64_t* tr = times ? times + 4 * i : nullptr;
      if (tr) tr[0] = thread, tr[1] = now_ns();
      prefetch_for_write(j->s->split_part(i),
                         int64_t{b.n} * G * (hd + 2) * int64_t{sizeof(float)},
                         j->block == attention_block_avx512);
      run_block(*j, b, next, thread, j->s->split_part(i), cold);
      if (tr) tr[2] = now_ns();
      if (as_done) j->s->done()[i].v.store(stamp);
      for (int64_t t = b.t; t < b.t + b.n; ++t) fold_row(t, b.h);
    }
    // Row (t, h) after one of its blocks is done.
    void fold_row(int64_t t, int h) const {
      const int nb = n_blocks(*j, j->a->pos[t]);
      const int G = j->group, hd = j->a->head_dim;
      AttentionCpuScratch::RowFold& f = j->s->fold()[t * j->n_kv + h];
      const Tri state = part_of(t, h, 0);
      float* out = out_of(*j->a, t, h, G);
      if (!as_done) {
        // acq_rel: the folding thread sees every other block's partial.
        if (f.pending.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        for (int c = 1; c < nb; ++c) merge(state, part_of(t, h, c), G, hd);
        finish(state, G, hd, out);
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
      auto is_done = [&](int c) { return done[task_of(t, h, c)].v.load() == stamp; };
      const bool w = j->block == attention_block_avx512;
      auto fetch = [&](const Tri& x, bool write) {
        const int64_t ml = int64_t{G} * int64_t{sizeof(float)};
        const int64_t acc = ml * hd;
        if (write) {
          prefetch_for_write(x.m, ml, w), prefetch_for_write(x.l, ml, w);
          prefetch_for_write(x.acc, acc, w);
        } else {
          prefetch_lines(x.m, ml), prefetch_lines(x.l, ml), prefetch_lines(x.acc, acc);
        }
      };
      while (f.lock.exchange(1) == 0) {
        int c = f.frontier;
        if (fold_pf && c > 0 && c < nb && is_done(c)) fetch(state, true);
        for (; c < nb && is_done(c); ++c) {
          if (c == 0) continue;
          const Tri part = part_of(t, h, c);
          if (fold_pf) fetch(part, false);
          merge(state, part, G, hd);
        }
        f.frontier = c;
        if (c == nb) {
          finish(state, G, hd, out);
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
  const Split sp{&j,      &u,      n_seg,   claim,
                 tasks,   hold,    n_first, n_next,
                 tune.fold_as_done, tune.fold_prefetch, stamp, tune.task_ns};
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
