// The CPU compute tier's attention: a batch of query tokens over a key/value
// cache (the contract and the layout of kernels/ref/attention.h, whose
// attention_ref_f32 stays the oracle), at the speed of reading the cache
// from memory.
//
// Work unit: (token, key/value head, block of positions), or (tokens of one
// sequence, head, block) below. All the query heads of the head's GQA group
// are computed together, so each key and value of the head is read once per
// token, not once per query head; f16
// rows are converted in registers as they are read (AVX-512 _mm512_cvtph_ps,
// AVX2+F16C _mm256_cvtph_ps, portable fp16_to_fp32), nothing converted in
// advance.
//
// Scores: with tiled keys (AttnKv::k_tiled, the KvCache's layout) a vector
// holds one dim of 16 positions, so a block's scores are FMAs of each key
// vector with broadcast query values, a lane per position; with key rows,
// FMAs over dims and a transposed horizontal sum per 16 scores (about a
// third more instructions, and a query load per FMA).
//
// Softmax: two passes inside a block, a log-sum-exp merge across blocks.
// A block computes its scores s = q·k·scale into an L1-resident buffer
// (group × kAttnBlock floats), takes their max m, turns them into e =
// exp(s - m) in place (vectorised), sums l = Σe and accumulates acc = Σ e·v:
// a partial triple (m, l, acc). Why not a per-position online softmax: it
// rescales the group × head_dim accumulator whenever the max grows and
// serialises the exps; here each exp is computed once, vectorised over
// positions, and the value loop is plain FMAs. Why not two passes over the
// whole context: the scores of a 16k context would leave L1, and a block is
// also the unit of the thread split.
//
// Stable reduction: blocks start at multiples of the block length (which
// depends only on the row's own length: kAttnShortRow below), whatever the
// thread count or the batch, and a row's output is always the left fold
//     state = p_0;  state = merge(state, p_b) for b = 1..n-1;  out = acc / l
// with merge(a, b) = (m, a.l·e^(a.m-m) + b.l·e^(b.m-m), a.acc·e^(a.m-m) +
// b.acc·e^(b.m-m)), m = max(a.m, b.m), in that order. Whether one thread
// folds the blocks as it computes them or the blocks run on many threads
// and their stored partials are folded in block order as they finish
// (AttnCpuTuning::fold_as_done; or all by the row's last block), the
// arithmetic is the same: results do not depend on the thread count, nor
// on which other tokens share the batch. On the H200 machine's Xeon, 16
// threads, folding by the last block put 45-50 us of a 16k call's 700 on
// its critical path (63 merges of other cores' partials), folding as they
// finish 1.5 us (bench/results/raw-2026-12-04-s26/call3).
//
// Tokens of one sequence (a verify step's K + 1, a prompt chunk) see the
// same positions up to the shortest one's row: consecutive tokens of a
// sequence in the batch make a unit whose leading blocks, those that lie
// alike in every token's row (the same positions, as each token's own
// partition cuts them), are computed once for all the unit's tokens, their
// query rows together (AttnCpuTuning::share); each token's remaining blocks
// run alone. Each token's row is still the same fold of the same partials,
// so its bits are those of the token alone; the keys and values of a shared
// block are read once, not once per token (a width-8 verify step at a 4k
// context read 134 MB of a 70b layer's cache where 17 MB are distinct).
//
// A paged cache (kernels/kv_pages.h) is read through its block table: a
// block's positions are runs of the cache's blocks (16 positions, which
// divide every block length here), each run's address from the table; the
// arithmetic, and so the result, is the same as over a contiguous cache.
//
// Split: with many (unit, head) rows (prefill) a task is a unit's rows of a
// head; with few (decode: one token × 8 heads; a verify step's unit × 8
// heads) each block is a task, so one token uses
// every thread at long contexts, the tasks in block-major order (those
// running at once read whole rows of the same positions, contiguous
// memory). A context of at most one block length is one block: no split,
// no merge.
//
// Reads in flight: on the H200 machine's Xeon the kernel is bound by how
// many reads each core has in flight (its fill buffers), not by its
// arithmetic (without software prefetch it read 0.35-0.55 of the host
// bandwidth). So every phase of a block keeps reads going: its keys are
// prefetched at its start, its values while its scores run, and while its
// values are summed, the keys of the next block the thread runs (the next
// block of a row; in a split call, the task it claimed as it started this
// one).
//
// Variants (kernels/cpu/isa.h, chosen per call): avx512 and avx2 need
// head_dim a multiple of 16 and 8; other head dims, and CPUs without AVX2,
// take the portable one. All three share one templated body
// (attention_cpu_body.h) over a vector type; exp is a polynomial in the
// SIMD variants (a few ulp), std::exp in the portable one.
// defines: kAttnBlock, kAttnBlockShort, kAttnShortRow, kAttnPf*, AttnCpuTuning,
// AttentionCpuScratch,
//          attention_cpu_block_len(), attention_cpu_blocks(), attention_cpu_max_blocks(),
//          attention_cpu(), attention_cpu_isa()
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/ref/attention.h"
#include "runtime/thread_pool.h"

namespace ls {

// Positions per block, at most: 256 positions of a 128-dim f16 head are
// 64 KiB of keys and 64 KiB of values (L2-resident while the block runs), a
// few microseconds of one core's reading; small enough that one decode
// token at 1k positions and 8 heads makes 32 tasks, large enough that a
// block's merge (3 · group · head_dim flops, against 4 · kAttnBlock · group ·
// head_dim in the block) and its task's overhead cost a few per cent at
// most. (128 read 4-8 % slower at 4k-16k contexts on the H200 machine's
// Xeon, in the same runs: bench/results/2026-12-01-h200-issue14.md.) The
// scratch is sized for it; a call may use shorter blocks (AttnCpuTuning).
inline constexpr int kAttnBlock = 256;

// Rows of at most kAttnShortRow positions use blocks of kAttnBlockShort: a
// decode token at 1k positions then makes 64 tasks rather than 32, which
// balance better over 16 threads (the call is short, so its last tasks'
// stragglers weigh); past 1k, 256 is as fast or faster. On the H200
// machine's Xeon, 16 threads, three runs of one call: 1k 0.51-0.52 of the
// host bandwidth with 256, 0.59-0.63 with 128; 4k-16k 256 ahead by 2-8 %
// (bench/results/raw-2026-12-01-s6/call9-attention-block-order.txt). With
// tiled keys and the next block's keys fetched in the value loop, 2k read
// 0.67-0.70 with 256 against 0.64-0.66 with 128, three rounds of one call
// (bench/results/raw-2026-12-04-s25/call9), so the rule's limit is 1k.
// The length is the row's own, so results still depend on nothing else.
inline constexpr int kAttnBlockShort = 128;
inline constexpr int kAttnShortRow = 1024;

// What the scores loop prefetches (AttnCpuTuning::prefetch): the key row
// `ahead` positions on into L1 or L2, each position's value row into L2;
// with tiled keys, kAttnPfValuesFirst: the block's value rows all at its
// start instead of a step's during the step.
inline constexpr int kAttnPfKeysL1 = 1, kAttnPfKeysL2 = 2, kAttnPfValues = 4;
inline constexpr int kAttnPfValuesFirst = 8;
// The value loop fetching the keys of the thread's next block into L2.
inline constexpr int kAttnPfNextKeys = 16;
inline constexpr int kAttnPfDefault = kAttnPfKeysL1 | kAttnPfValues | kAttnPfNextKeys;

// Key positions prefetched ahead by default: rows, 8 positions; tiled, the
// whole block at its start (the step loop then prefetches nothing more of
// the keys). On the H200 machine's Xeon, 16 threads, tiled keys, two rounds
// of one call (host 91-98 GB/s): one step ahead (32 positions) read 0.62-0.69
// of the host bandwidth at 1k and 0.72-0.79 at 16k, the whole block
// 0.72-0.76 and 0.81-0.88; at 256 positions 0.43-0.46 against 0.63-0.71
// (bench/results/raw-2026-12-04-s25/call3). A core's reads in flight are
// bounded by its fill buffers; a burst at the block's start has them all
// busy at once, and other cores compute while it waits.
inline constexpr int kAttnAheadRows = 8;
inline constexpr int kAttnAheadTiled = kAttnBlock;

// Query rows (tokens · group) a shared block computes at most by default
// (AttnCpuTuning::share): 8 tokens of a 70b's group of 8, 16 of a group of
// 4; the scores scratch of a thread is this many rows of kAttnBlock floats.
inline constexpr int kAttnShareRows = 64;

// Knobs of attention_cpu, for the bench to sweep. Results depend on block
// (the reduction's shape), never on ahead (a prefetch distance), nor on
// share (which tokens read a block together).
struct AttnCpuTuning {
  int block = 0;  // positions per block, a multiple of 16 in 16..kAttnBlock; 0: by row length
  int ahead = 0;  // key rows prefetched ahead of the scores loop; 0: the default (kAttnAhead*)
  // What the scores loop prefetches (kAttnPf* bits of attention_cpu_block.h);
  // -1: the default.
  int prefetch = -1;
  // Split calls: a thread claims its next block as it starts one while more
  // than `hold` blocks are unclaimed (with kAttnPfNextKeys); -1: the
  // default, the pool's thread count.
  int hold = -1;
  // Split calls: fold a row's partials as its blocks finish, in block order
  // (false: the row's last block to finish folds them all). The same
  // arithmetic either way.
  bool fold_as_done = true;
  // Tiled keys: the key positions a cold block (one whose keys no earlier
  // block of its thread fetched: a thread's first, or one it did not claim
  // ahead) prefetches before its scores loop and ahead within it; 0: as a
  // warm block (`ahead`: the whole block first, 512 L1 misses of a
  // 128-position block, which the core's fill buffers take 16 at a time
  // while nothing is computed: the ~4.5 us a thread's first block takes
  // beyond the others at 1k, raw-2026-12-04-s26). 16 (one step of the
  // loop) lets the arithmetic start as the first keys arrive. On the H200
  // machine's Xeon, 16 threads, three rounds: 0, 16 and 64 within the noise
  // of each other at 1k-16k (bench/results/2026-12-04-h200-s29.md), so the
  // default stays 0.
  int cold_ahead = 0;
  // A row's first and last block in halves (attention_cpu_block): a split
  // call's first round of blocks (each thread's cold one, which waits for
  // its keys with nothing to overlap) and its last round (where threads
  // that find nothing left wait for the others) both take half as long.
  // Changes the reduction's shape, as `block` does. On the H200 machine's
  // Xeon, 16 threads, five rounds of one call (median of 10 rows each):
  // 0.645 of the host bandwidth at 1k against 0.61 uniform, 2k 0.705
  // against 0.675, 4k 0.78 against 0.75, 16k 0.835 against 0.84; the
  // timeline at 1k: a thread's first block 11.9 us against 17.6, the
  // threads' ends 9.6 us apart against 16.8 (raw-2026-12-04-s30/call4).
  bool taper = true;
  // Split calls: before a fold's merges, fetch the row's state for writing
  // (PREFETCHW) and the partial to merge, all their lines at once. The
  // state was last written by whichever core folded last, the partial by
  // the block's own core: a merge's loads otherwise find each line in
  // another core's cache one dependent step at a time (a thread's folding
  // took 6.4 us of its 50.8 busy in a 1k call, raw-2026-12-05-s32/call1).
  bool fold_prefetch = false;
  // Split calls: pool task r starts with block r and holds block P + r
  // (P: the pool's size) as its next, rather than claiming both from the
  // shared counter: 16 threads' first two claims are 32 read-modify-writes
  // of one line, in turn, as the call starts (its threads started 0.6-3.8
  // us in). Any thread may run pool task r, so a late worker's blocks are
  // still run. On the H200 machine's Xeon, 16 threads, 1k, 202 calls each:
  // a call 49.3 / 48.6 us against 54.3 / 52.0 claimed (a thread's first
  // block 7.1 against 9.9 us, the threads' ends 7.1 apart against 11.4);
  // 4k-16k within the noise (bench/results/2026-12-05-h200-s33.md).
  bool static_start = true;
  // Each key/value head's query heads as this many rows of their own (it
  // must divide the group; 1: off), every row run whole by one thread, no
  // split: one decode token of a 70B layer is 16 rows of 4 query heads for
  // 16 threads, with no partial crossing cores (the two rows of a head read
  // the same keys and values, the second of them mostly from the shared
  // last-level cache). A query head's arithmetic is the same in a row of 4
  // as in one of 8, so the bits are those of the whole-row fold.
  int group_split = 1;
  // Diagnostics (the bench's --timeline): split calls write, per task i,
  // task_ns[4i..4i+3] = the thread, and steady_clock nanoseconds at its
  // start, at its block's end and after its part of the fold. Null: none.
  int64_t* task_ns = nullptr;
  // Tokens of one sequence that share a block's reads, at most; 1: none
  // (each token reads its blocks alone); 0: the default, kAttnShareRows
  // query rows (at least one token).
  int share = 0;
};

// Buffers of attention_cpu, grown on demand (so size it once for the largest
// call and nothing is allocated per call): per thread a scores block, two
// partial triples and the transposed queries; for the split path, one partial per task and one
// counter per row.
class AttentionCpuScratch {
 public:
  // Room for `threads` pool threads, blocks of up to `group` query rows (a
  // GQA group, or the group of each token of a shared block) of head_dim,
  // split calls of up to `rows` (token, head) rows and `tasks` blocks in
  // all, and calls of up to `tokens` tokens (the units of tokens that share
  // blocks, and their tasks: attention_cpu.cpp).
  void reserve(int threads, int group, int head_dim, int64_t rows, int64_t tasks,
               int64_t tokens = 0);

  // (group, kAttnBlock) scores of a block.
  float* scores(int thread) { return thread_.data() + thread * per_thread_; }
  // A row's running triple and a block's partial triple: m (group), l
  // (group), acc (group, head_dim); and a token's own running triple where
  // its unit's shared blocks were folded in state.
  float* state(int thread) { return scores(thread) + scores_floats(); }
  float* part(int thread) { return state(thread) + triple_floats(); }
  float* own(int thread) { return part(thread) + triple_floats(); }
  // (head_dim, group): the group's queries transposed, for tiled keys.
  float* q_t(int thread) { return own(thread) + triple_floats(); }
  // Split path: task i's partial triple and whether it is done, each row's
  // fold (below).
  float* split_part(int64_t i) { return split_.data() + i * triple_floats(); }
  // A task is done in a call when its flag holds the call's stamp (so the
  // flags need no reset: that loop took a line from another core per task).
  // A cache line each: a task's flag is written by its thread and read by
  // the row's folder; 64 flags in one line bounced between all the cores.
  struct alignas(64) Done {
    std::atomic<uint32_t> v{0};
  };
  Done* done() { return done_.get(); }
  uint32_t next_stamp() { return ++stamp_; }
  int64_t done_capacity() const { return tasks_; }
  // A row's fold: blocks still running; the fold's lock and its frontier
  // (the next block to fold; blocks before it are in the row's first
  // partial). A cache line each: rows finish on different threads.
  struct alignas(64) RowFold {
    std::atomic<int> pending{0};
    std::atomic<int> lock{0};
    int frontier = 0;
  };
  RowFold* fold() { return fold_.get(); }
  std::atomic<int64_t>* claim() { return &claim_->v; }  // split path: the next task
  static constexpr int kUnitInts = 13;
  // Per token its unit and tasks, per run of tasks where it starts
  // (attention_cpu.cpp's layout, kUnitInts a token).
  int64_t* units() { return units_.data(); }

 private:
  int64_t triple_floats() const { return int64_t{group_} * (head_dim_ + 2); }
  int64_t scores_floats() const { return int64_t{group_} * kAttnBlock; }
  int threads_ = 0, group_ = 0, head_dim_ = 0;
  int64_t per_thread_ = 0, split_floats_ = 0, rows_ = 0, tasks_ = 0;
  uint32_t stamp_ = 0;
  std::vector<float> thread_;        // (threads, per_thread_)
  std::vector<float> split_;         // (tasks, triple)
  std::unique_ptr<Done[]> done_;     // (tasks)
  std::unique_ptr<RowFold[]> fold_;  // (rows)
  struct alignas(64) Counter {       // a line of its own: every thread takes from it
    std::atomic<int64_t> v{0};
  };
  std::unique_ptr<Counter> claim_ = std::make_unique<Counter>();
  std::vector<int64_t> units_;  // (kUnitInts · tokens + 1)
};

// Positions per block of a row of n_pos positions (1..n_ctx) under the
// tuning's block (0: by the row's length; the longest block), the row's
// number of blocks, and block b's first position and length. With taper
// (AttnCpuTuning::taper), a row of more than one block has its first and
// its last block cut in two halves (where the block length is a multiple
// of 32): 1,024 positions in blocks of 128 are 64, 64, 6 x 128, 64, 64.
int attention_cpu_block_len(int64_t n_pos, int block = 0);
int64_t attention_cpu_blocks(int64_t n_pos, int block = 0, bool taper = true);
struct AttnBlockRange {
  int64_t p0;
  int n;
};
AttnBlockRange attention_cpu_block(int64_t n_pos, int64_t b, int block = 0, bool taper = true);
// The most blocks any row of up to n_ctx positions has, tapered or not (for
// reserve()).
int64_t attention_cpu_max_blocks(int64_t n_ctx);

// The variant attention_cpu runs for this head_dim when asked for isa.
CpuIsa attention_cpu_isa(CpuIsa isa, int head_dim);

// out = attention (kernels/ref/attention.h). Requires n_head a multiple of
// n_head_kv, head_dim even, 0 <= pos[t] < the cache's n_ctx, and
// cpu_isa_supported(isa).
void attention_cpu(ThreadPool& pool, const AttnArgs& a, AttentionCpuScratch& scratch,
                   CpuIsa isa = cpu_isa_active(), const AttnCpuTuning& tune = {});

}  // namespace ls
