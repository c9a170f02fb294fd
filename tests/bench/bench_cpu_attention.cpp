// bench_cpu_attention: the CPU compute tier's attention (kernels/cpu/
// attention_cpu.h) on one Llama 70B layer's decode step (one token, 64 query
// heads, 8 KV heads, head_dim 128, f16 cache), against this machine's host
// memory read bandwidth measured in the same run at the same thread count
// (runtime/probe_host: a multi-threaded read of a 2 GiB buffer, median of 5).
//
// Per context (--ctx, default 1k..16k) and thread count: the KV bytes one
// call reads, 2 · ctx · 8 · 128 · 2 (keys and values, f16), the time of a
// call (median, min, max of --reps calls after one warm-up), the GB/s at
// the median, and its ratio to the host bandwidth. The caches come from
// DRAM, as a real model's do, not from the last-level cache: a buffer of
// --kv-gib (1 GiB by default, past any LLC) holds as many distinct layers'
// caches of that context as fit, and successive calls rotate through them,
// across the settings of a sweep (a layer is read again only after the
// whole buffer has been).
// Acceptance (issue 14): a ratio >= 0.70 on a 16-core AVX-512 Xeon.
//
// --layout: tiles (head-major, each head's whole context contiguous, keys
// tiled: AttnKv::k_tiled; the default), paged (model/kv_cache.h's layout,
// as the engine's CPU tier reads it: pool blocks of 16 positions through a
// block table, each head's tile of keys and of values 4 KiB, the head's
// next ones 32 KiB on), heads (head-major, keys in rows: the CPU cache's
// layout before 2026-12-04) or rows (a position's row holds its 8 heads, as
// the GPU's cache does), or several. The values are random, so one buffer
// serves every layout; tiles and paged need contexts in whole tiles (16).
//
// --cold-ahead: the key positions a cold block prefetches ahead
// (AttnCpuTuning::cold_ahead; 0: as a warm block, the default; "/cN" in
// the prefetch column).
//
// --taper on,off: a row's first and last block cut in halves
// (AttnCpuTuning::taper, on by default; "/u" in the prefetch column: off,
// uniform blocks).
//
// --pin off,on: the pool's threads left to the OS or pinned one a CPU
// (ThreadPool::pin; "/p" in the prefetch column); with on, the host probe
// runs pinned too and the higher of its two figures is the bound.
//
// --fold-pf off,on: a fold fetching the row's state and the partial before
// merging (AttnCpuTuning::fold_prefetch; "/w" in the prefetch column: on).
//
// --start static,claim: a split call's first blocks given by pool task
// (the default) or claimed from the counter (AttnCpuTuning::static_start;
// "/s" in the prefetch column: static).
//
// --group-split 1,2: each KV head's query heads as this many rows, run
// whole (AttnCpuTuning::group_split; "/gN" in the prefetch column).
//
// --tokens 1,8: the call's tokens, of one sequence at the context's last
// positions (a verify step of K + 1 tokens, a prompt chunk); "/tN" in the
// prefetch column. The KV MB and GB/s count the cache once, as the distinct
// bytes. --share on,off: those tokens read the blocks their rows have
// alike once for all (AttnCpuTuning::share, the default) or each alone
// ("/x" in the prefetch column).
//
// --no-huge: the caches' memory without transparent huge pages (a
// std::vector's, as the engine's KV cache is, may have them or not).
//
// --block, --ahead, --hold and --fold (done: a row's partials folded as its
// blocks finish, the default; end: by its last block) sweep attention_cpu's
// knobs (AttnCpuTuning): positions
// per block (16..256, multiples of 16; 0: the kernel's choice by context
// length) and key rows
// prefetched ahead (0: the default); --prefetch what the scores loop
// prefetches: k1v2n (keys into L1, values into L2, and the thread's next
// block's keys into L2 during the value loop: the default), k2v2n, k1v2
// and k2v2 (no next block), k1v2f and k2v2f (tiled keys: the block's values
// all at its start, no next block), k1, v2, none.
//
// --timeline prints, under each split call's row, where its time goes
// (Timeline below), and in how many calls every thread of the pool took a
// block (the median call of each kind); --timeline-threads also each
// thread's blocks in the median call.
//
// --read adds, per context, the same bytes read with nothing computed: the
// same tasks (a block of positions of one head: its keys, then its values)
// on the same pool, each summing its bytes with the widest loads. The ratio
// of attention to it is what the arithmetic and the softmax cost beyond
// the reading itself.
//
// Usage: ls_bench_cpu_attention [--threads 1,16] [--ctx 1024,2048,...] [--reps 15]
//          [--isa best|all|avx512,...] [--layout tiles,paged,heads,rows] [--block 0,128,...]
//          [--ahead 0,16,...] [--hold -1,0,16,...] [--fold done,end]
//          [--prefetch k1v2n,none,...] [--read] [--timeline] [--pin off,on]
//          [--cold-ahead 0,16,...] [--taper on,off] [--fold-pf off,on] [--start claim,static]
//          [--group-split 1,2] [--tokens 1,8] [--share on,off]
//          [--kv-gib 1] [--host-bytes-gib 2] [--no-huge] [--json out.json]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <cstring>
#include <vector>

#include <sys/mman.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <nlohmann/json.hpp>

#include "kernels/cpu/attention_cpu.h"
#include "kernels/cpu/isa.h"
#include "kernels/kv_pages.h"
#include "kernels/half.h"
#include "runtime/probe_host.h"
#include "runtime/thread_pool.h"
#include "tests/bench/bench_cpu_util.h"

using namespace ls;

namespace {

constexpr int kHead = 64, kHeadKv = 8, kHeadDim = 128;
constexpr int64_t kRow = int64_t{kHeadKv} * kHeadDim;  // elements per position

// Anonymous memory, huge pages asked for (as HostReadBuffer does; --no-huge:
// refused, as a std::vector's memory may be without them), filled by
// the pool's threads (first touch) with finite f16 values in [-1, 1).
uint16_t* make_kv(ThreadPool& pool, uint64_t elems, bool huge) {
  const uint64_t bytes = elems * 2;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  uint16_t* h = static_cast<uint16_t*>(p);
  const int64_t n_tasks = 256;
  pool.run(n_tasks, [&](int64_t task, int) {
    uint64_t x = 0x9E3779B97F4A7C15ull * (task + 1);
    const uint64_t i0 = elems * task / n_tasks, i1 = elems * (task + 1) / n_tasks;
    for (uint64_t i = i0; i < i1; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      h[i] = fp32_to_fp16(static_cast<float>(x >> 40) / 8388608.0f - 1.0f);
    }
  });
  return h;
}

// --prefetch names as kAttnPf* bits; -1: unknown.
int prefetch_bits(const std::string& x) {
  if (x == "k1v2n") return kAttnPfKeysL1 | kAttnPfValues | kAttnPfNextKeys;
  if (x == "k2v2n") return kAttnPfKeysL2 | kAttnPfValues | kAttnPfNextKeys;
  if (x == "k1v2") return kAttnPfKeysL1 | kAttnPfValues;
  if (x == "k1v2f") return kAttnPfKeysL1 | kAttnPfValuesFirst;
  if (x == "k2v2f") return kAttnPfKeysL2 | kAttnPfValuesFirst;
  if (x == "k2v2") return kAttnPfKeysL2 | kAttnPfValues;
  if (x == "k1") return kAttnPfKeysL1;
  if (x == "v2") return kAttnPfValues;
  if (x == "none") return 0;
  return -1;
}

// The sum of n bytes (a multiple of 64, 64-byte aligned) as 64-bit lanes.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) uint64_t sum_avx512(const char* p, int64_t n) {
  __m512i acc = _mm512_set1_epi64(0);
  for (int64_t i = 0; i < n; i += 64)
    acc = _mm512_add_epi64(acc, _mm512_load_si512(reinterpret_cast<const void*>(p + i)));
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(reinterpret_cast<void*>(lanes), acc);
  uint64_t s = 0;
  for (uint64_t x : lanes) s += x;
  return s;
}
#endif
uint64_t sum_bytes(const char* p, int64_t n) {
#if defined(__x86_64__)
  if (cpu_isa_supported(CpuIsa::Avx512)) return sum_avx512(p, n);
#endif
  uint64_t s = 0;
  for (int64_t i = 0; i < n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    s += w;
  }
  return s;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// --timeline: where a split call's time goes (AttnCpuTuning::task_ns), the
// median over calls of: when the first and the last thread took their
// first block, a thread's first, middle and last blocks (the first starts
// cold; the last, claimed late, had its keys fetched by no one), a
// thread's busy time and the part of it spent folding (a task's time
// after its block), how far apart the threads ended, the fold after the
// last block, and the call.
struct Timeline {
  std::vector<int64_t> ns;  // (tasks, 4): thread, start, block end, fold end
  std::vector<double> m[10];
  std::vector<std::pair<double, std::string>> detail;  // (call us, per thread)
  bool threads = false;                                // print detail
  int pool_threads = 0;                                // the pool's size
  std::vector<double> whole, short_of;  // call us: every pool thread took a block, or not
  void add(int64_t c0, int64_t c1) {
    // The call's tasks: the first entries (sized for the most a call may
    // have; one whose tokens share blocks has fewer).
    size_t n = 0;
    while (n < ns.size() / 4 && ns[4 * n] >= 0) ++n;
    if (n == 0) return;  // not a split call
    struct Thr {
      int64_t first = -1, last_end = 0, busy = 0, fold = 0;
    };
    std::vector<Thr> th;
    int64_t end = 0, fold_last = 0;
    for (size_t i = 0; i < n; ++i) {
      const int64_t* t = &ns[4 * i];
      if (static_cast<size_t>(t[0]) >= th.size()) th.resize(static_cast<size_t>(t[0]) + 1);
      Thr& r = th[static_cast<size_t>(t[0])];
      if (r.first < 0 || t[1] < r.first) r.first = t[1];
      r.busy += t[3] - t[1];
      r.fold += t[3] - t[2];
      r.last_end = std::max(r.last_end, t[3]);
      if (t[3] > end) end = t[3], fold_last = t[3] - t[2];
    }
    // Each thread's tasks in start order: first, middle, last.
    std::vector<std::vector<std::pair<int64_t, double>>> by(th.size());
    for (size_t i = 0; i < n; ++i)
      by[static_cast<size_t>(ns[4 * i])].push_back(
          {ns[4 * i + 1], static_cast<double>(ns[4 * i + 2] - ns[4 * i + 1]) / 1e3});
    double f = 0, l = 0, mid = 0, n_mid = 0, busy = 0, fold = 0, n_th = 0;
    int64_t first = INT64_MAX, last_first = 0, end_min = INT64_MAX;
    for (size_t t = 0; t < th.size(); ++t) {
      if (by[t].empty()) continue;
      std::sort(by[t].begin(), by[t].end());
      f += by[t].front().second;
      l += by[t].size() > 1 ? by[t].back().second : 0;
      for (size_t k = 1; k + 1 < by[t].size(); ++k) mid += by[t][k].second, ++n_mid;
      busy += static_cast<double>(th[t].busy) / 1e3, ++n_th;
      fold += static_cast<double>(th[t].fold) / 1e3;
      first = std::min(first, th[t].first);
      last_first = std::max(last_first, th[t].first);
      end_min = std::min(end_min, th[t].last_end);
    }
    const double v[10] = {static_cast<double>(first - c0) / 1e3,
                          static_cast<double>(last_first - c0) / 1e3,
                          f / n_th,
                          n_mid > 0 ? mid / n_mid : 0,
                          l / n_th,
                          busy / n_th,
                          static_cast<double>(end - end_min) / 1e3,
                          static_cast<double>(fold_last) / 1e3,
                          static_cast<double>(c1 - c0) / 1e3,
                          fold / n_th};
    for (int k = 0; k < 10; ++k) m[k].push_back(v[k]);
    (static_cast<int>(n_th) >= pool_threads ? whole : short_of).push_back(v[8]);
    // Each thread's blocks (start-end, us from the call's start), for the
    // median call.
    std::string d;
    for (size_t t = 0; t < th.size(); ++t) {
      d += "          thread " + std::to_string(t) + ":";
      for (size_t i = 0; i < n; ++i)
        if (ns[4 * i] == static_cast<int64_t>(t)) {
          char b[64];
          std::snprintf(b, sizeof b, " %zu@%.1f-%.1f", i, (ns[4 * i + 1] - c0) / 1e3,
                        (ns[4 * i + 3] - c0) / 1e3);
          d += b;
        }
      d += "\n";
    }
    detail.push_back({static_cast<double>(c1 - c0), d});
    std::fill(ns.begin(), ns.end(), -1);
  }
  void print() const {
    if (m[0].empty()) {
      std::printf("        timeline: not a split call\n");
      return;
    }
    double md[10];
    for (int k = 0; k < 10; ++k) md[k] = stats(m[k]).med;
    std::printf(
        "        timeline (us, median): threads start %.1f..%.1f; blocks first %.1f mid %.1f "
        "last %.1f; busy %.1f a thread, folding %.1f of it; ends spread %.1f; last fold %.1f; "
        "call %.1f\n",
        md[0], md[1], md[2], md[3], md[4], md[5], md[9], md[6], md[7], md[8]);
    // A thread the machine does not run in time takes no block: the calls
    // where all did against the others.
    std::printf("        calls where all %d threads took a block: %zu of %zu", pool_threads,
                whole.size(), whole.size() + short_of.size());
    if (!whole.empty()) std::printf(", median %.1f us", stats(whole).med);
    if (!short_of.empty()) std::printf("; the others' median %.1f us", stats(short_of).med);
    std::printf("\n");
    if (threads) {
      auto d = detail;
      std::sort(d.begin(), d.end());
      std::printf("%s", d[d.size() / 2].second.c_str());
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  std::vector<int64_t> ctxs = {1024, 2048, 4096, 8192, 16384};
  std::vector<std::string> isa_names = {"best"};
  std::vector<std::string> layouts = {"tiles"};
  std::vector<int> blocks = {0}, aheads = {0}, holds = {-1}, colds = {0}, gsplits = {1};
  std::vector<std::string> prefetches = {"k1v2n"};
  std::vector<bool> folds = {true};
  std::vector<bool> pins = {false};
  std::vector<bool> tapers = {true};
  std::vector<bool> fold_pfs = {false}, statics = {true}, shares = {true};  // the kernel's defaults
  std::vector<int> n_toks = {1};
  bool read_only = false, timeline = false, timeline_threads = false, huge = true;
  int reps = 15;
  double host_gib = 2, kv_gib = 1;
  std::string json_out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") {
      for (auto& s : split(next())) threads.push_back(std::max(1, std::atoi(s.c_str())));
    } else if (a == "--ctx") {
      ctxs.clear();
      for (auto& s : split(next())) ctxs.push_back(std::max<int64_t>(1, std::atoll(s.c_str())));
    } else if (a == "--layout") {
      layouts = split(next());
      for (const auto& l : layouts)
        if (l != "rows" && l != "heads" && l != "tiles" && l != "paged") {
          std::fprintf(stderr, "--layout: '%s' is not one of tiles, paged, heads, rows\n",
                       l.c_str());
          return 2;
        }
    } else if (a == "--block" || a == "--ahead" || a == "--hold" || a == "--cold-ahead" ||
               a == "--group-split" || a == "--tokens") {
      std::vector<int>& v = a == "--block"         ? blocks
                            : a == "--ahead"       ? aheads
                            : a == "--hold"        ? holds
                            : a == "--group-split" ? gsplits
                            : a == "--tokens"      ? n_toks
                                                   : colds;
      v.clear();
      for (auto& x : split(next())) {
        const int n = std::atoi(x.c_str());
        if (n < (a == "--hold" ? -1 : 0) || (a == "--block" && (n % 16 != 0 || n > kAttnBlock)) ||
            (a == "--group-split" && (n < 1 || (kHead / kHeadKv) % n != 0)) ||
            (a == "--tokens" && (n < 1 || n > 64))) {
          std::fprintf(stderr, "%s: '%s' is not a valid value\n", a.c_str(), x.c_str());
          return 2;
        }
        v.push_back(n);
      }
    } else if (a == "--prefetch") {
      prefetches = split(next());
      for (const auto& x : prefetches)
        if (prefetch_bits(x) < 0) {
          std::fprintf(stderr,
                       "--prefetch: '%s' is not one of k1v2n, k2v2n, k1v2, k2v2, k1v2f, k2v2f, k1, "
                       "v2, none\n",
                       x.c_str());
          return 2;
        }
    } else if (a == "--fold" || a == "--pin" || a == "--taper" || a == "--fold-pf" ||
               a == "--start" || a == "--share") {
      // Two-way lists: done,end (true: done), static,claim (true: static)
      // and off,on (true: on).
      const bool fold = a == "--fold", start = a == "--start";
      const char* yes = fold ? "done" : start ? "static" : "on";
      const char* no = fold ? "end" : start ? "claim" : "off";
      std::vector<bool>& v = fold               ? folds
                             : start            ? statics
                             : a == "--pin"     ? pins
                             : a == "--fold-pf" ? fold_pfs
                             : a == "--share"   ? shares
                                                : tapers;
      v.clear();
      for (const auto& x : split(next())) {
        if (x != yes && x != no) {
          std::fprintf(stderr, "%s: '%s' is not one of %s, %s\n", a.c_str(), x.c_str(), yes, no);
          return 2;
        }
        v.push_back(x == yes);
      }
    } else if (a == "--read") {
      read_only = true;
    } else if (a == "--no-huge") {
      huge = false;
    } else if (a == "--timeline" || a == "--timeline-threads") {
      timeline = true;
      timeline_threads = a == "--timeline-threads";
    } else if (a == "--isa") {
      isa_names = split(next());
    } else if (a == "--reps") {
      reps = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--kv-gib") {
      kv_gib = std::atof(next().c_str());
    } else if (a == "--host-bytes-gib") {
      host_gib = std::atof(next().c_str());
    } else if (a == "--json") {
      json_out = next();
    } else {
      std::fprintf(stderr, "unknown argument %s (see the header of bench_cpu_attention.cpp)\n",
                   a.c_str());
      return 2;
    }
  }
  for (int64_t c : ctxs)
    if (c % kAttnKTile != 0 &&
        (std::find(layouts.begin(), layouts.end(), "tiles") != layouts.end() ||
         std::find(layouts.begin(), layouts.end(), "paged") != layouts.end())) {
      std::fprintf(stderr, "--ctx %ld: the tiles and paged layouts need a multiple of %d\n",
                   static_cast<long>(c), kAttnKTile);
      return 2;
    }
  if (threads.empty()) threads.push_back(default_thread_count());
  const int most = *std::max_element(threads.begin(), threads.end());

  const auto isas_or = bench_parse_isas(isa_names);
  if (!isas_or) return 2;
  const std::vector<CpuIsa> isas = *isas_or;

  // ---- The bound: host memory read bandwidth per thread count ----------------
  const bool any_pin = std::find(pins.begin(), pins.end(), true) != pins.end();
  const auto host_or = bench_host_bounds(threads, most, host_gib, any_pin);
  if (!host_or) return 1;
  const std::vector<double> host = *host_or;

  // ---- The caches: distinct layers, rotated ------------------------------------
  const int64_t max_ctx = *std::max_element(ctxs.begin(), ctxs.end());
  const uint64_t layer_max = 2 * static_cast<uint64_t>(max_ctx) * kRow;  // K then V
  const uint64_t elems =
      std::max<uint64_t>(layer_max, static_cast<uint64_t>(kv_gib * (1ull << 30)) / 2);
  // The caches' first touch on a pool of its own, gone before anything is
  // timed: its idle workers spin (yielding) for a while after their last
  // job, and 15 of them beside the 16-thread pool under test took its
  // threads' CPUs (until session 30 this pool lived on: in 202 of 202 calls
  // at 1k one of the 16 threads took no block, 2026-12-04-h200-s30.md).
  uint16_t* kv = [&] {
    ThreadPool fill_pool(most);
    return make_kv(fill_pool, elems, huge);
  }();
  std::printf(
      "\ncaches: %.2f GB of f16 keys and values, one token of a 70B layer (%d query heads, "
      "%d KV heads, head_dim %d) per call, each call on another layer's cache of the "
      "buffer in turn (reads come from DRAM)\n\n",
      elems * 2 / 1e9, kHead, kHeadKv, kHeadDim);

  const int most_tok = *std::max_element(n_toks.begin(), n_toks.end());
  std::vector<float> q(static_cast<size_t>(most_tok) * kHead * kHeadDim), out(q.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.37f * static_cast<float>(i));
  std::printf("%6s %3s %-8s %-6s %4s %4s %8s %7s %9s %9s %9s %9s %10s %6s %6s\n", "ctx", "thr",
              "isa", "layout", "blk", "ahd", "pf", "layers", "KV MB", "us med", "min", "max",
              "GB/s med", "host", "ratio");
  nlohmann::json rows = nlohmann::json::array();
  for (int th : threads)
    for (bool pinned : pins) {
      ThreadPool pool(th);
      if (pinned && !pool.pin()) {
        std::fprintf(stderr, "--pin on: cannot pin %d threads to CPUs here\n", th);
        return 1;
      }
      for (CpuIsa isa : isas) {
        for (const std::string& layout : layouts)
          for (int64_t ctx : ctxs) {
            const uint64_t layer = 2 * static_cast<uint64_t>(ctx) * kRow;  // elements, K then V
            const uint64_t n_layers = elems / layer;
            uint64_t next_layer = 0;
            const uint64_t bytes = layer * 2;
            // The median, min and max microseconds of --reps calls of fn on
            // successive layers' caches (one warm-up call first).
            // The calls go on through the buffer's layers where the last
            // setting's stopped, over every setting: a setting that started
            // again at layer 0 read the layers the one before it had just
            // read, which the 300 MiB L3 of the H200 machine's Xeon still
            // held at 1k-2k (42 calls of 4 MiB: a read-only pass took 15 us,
            // twice the host bandwidth, and the first setting of each
            // context was the slowest of its sweep; session 33, call 1).
            auto time_calls = [&](const std::function<void(const uint16_t*, const uint16_t*)>& fn) {
              std::vector<double> us;
              for (int r = -1; r < reps; ++r) {
                const uint16_t* k = kv + (next_layer++ % n_layers) * layer;
                const auto t0 = std::chrono::steady_clock::now();
                fn(k, k + layer / 2);
                const double sec =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                if (r >= 0) us.push_back(sec * 1e6);
              }
              return stats(us);
            };
            auto report = [&](const char* isa_name, int blk, int ahead, const std::string& pf,
                              const Stats& st) {
              const double gbps = bytes / (st.med * 1e-6) / 1e9;
              std::printf(
                  "%6ld %3d %-8s %-6s %4d %4d %8s %7lu %9.2f %9.1f %9.1f %9.1f %10.2f %6.2f "
                  "%6.2f\n",
                  static_cast<long>(ctx), th, isa_name, layout.c_str(), blk, ahead, pf.c_str(),
                  static_cast<unsigned long>(n_layers), bytes / 1e6, st.med, st.min, st.max, gbps,
                  host[th], gbps / host[th]);
              std::fflush(stdout);
              rows.push_back({{"ctx", ctx},
                              {"threads", th},
                              {"isa", isa_name},
                              {"layout", layout},
                              {"block", blk},
                              {"ahead", ahead},
                              {"prefetch", pf},
                              {"kv_bytes", bytes},
                              {"layers_rotated", n_layers},
                              {"us_median", st.med},
                              {"us_min", st.min},
                              {"us_max", st.max},
                              {"gbps_median", gbps},
                              {"host_gbps", host[th]},
                              {"ratio", gbps / host[th]}});
            };
            for (int blk : blocks)
              for (int ahead : aheads)
                for (int hold : holds)
                  for (bool fold_as_done : folds)
                    for (int cold : colds)
                      for (bool taper : tapers)
                        for (bool fold_pf : fold_pfs)
                          for (bool stat : statics)
                            for (int gs : gsplits)
                              for (int nt : n_toks)
                              for (bool share : shares)
                              for (const std::string& pf : prefetches) {
                                if (nt > ctx) continue;
                                AttnCpuTuning tune{blk, ahead, prefetch_bits(pf), hold,
                                                   fold_as_done};
                                tune.cold_ahead = cold;
                                tune.taper = taper;
                                tune.fold_prefetch = fold_pf;
                                tune.static_start = stat;
                                tune.group_split = gs;
                                tune.share = share ? 0 : 1;
                                // --hold and --fold end show in the prefetch column: k1v2n/h8/e.
                                const std::string pf_name =
                                    (hold < 0 ? pf : pf + "/h" + std::to_string(hold)) +
                                    (fold_as_done ? "" : "/e") +
                                    (cold == 0 ? "" : "/c" + std::to_string(cold)) +
                                    (taper ? "" : "/u") + (fold_pf ? "/w" : "") +
                                    (stat ? "/s" : "") + (gs > 1 ? "/g" + std::to_string(gs) : "") +
                                    (nt > 1 ? "/t" + std::to_string(nt) : "") +
                                    (share ? "" : "/x") + (pinned ? "/p" : "");
                                AttentionCpuScratch scratch;
                                // nt tokens of sequence 0 at the context's last positions.
                                std::vector<int32_t> pos(static_cast<size_t>(nt)), seq(pos.size(), 0);
                                for (int t = 0; t < nt; ++t)
                                  pos[static_cast<size_t>(t)] = static_cast<int32_t>(ctx - nt + t);
                                AttnArgs a;
                                a.n_head = kHead;
                                a.n_head_kv = kHeadKv;
                                a.head_dim = kHeadDim;
                                a.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
                                a.n_tok = nt;
                                a.pos = pos.data();
                                a.seq = seq.data();
                                a.q = q.data();
                                a.ldq = kHead * kHeadDim;
                                a.out = out.data();
                                a.ldo = a.ldq;
                                a.kv.type = AttnKvType::F16;
                                std::vector<int32_t> table;
                                if (layout == "rows") {
                                  a.kv.ld_pos = kRow;
                                } else if (layout == "paged") {
                                  // model/kv_cache.h: pool blocks of kKvBlockLen positions,
                                  // each head's tile in turn; the table in order, as a
                                  // fresh session's blocks are.
                                  table.resize(static_cast<size_t>(ctx / kKvBlockLen));
                                  for (size_t b = 0; b < table.size(); ++b)
                                    table[b] = static_cast<int32_t>(b);
                                  a.kv.ld_pos = kHeadDim;
                                  a.kv.ld_head = int64_t{kKvBlockLen} * kHeadDim;
                                  a.kv.ld_block = kRow * kKvBlockLen;
                                  a.kv.pages.table = table.data();
                                  a.kv.pages.max_blocks = static_cast<int32_t>(table.size());
                                  a.kv.pages.shift = kKvBlockShift;
                                  a.kv.k_tiled = true;
                                } else {  // head-major: each head's positions contiguous
                                  a.kv.ld_pos = kHeadDim;
                                  a.kv.ld_head = ctx * kHeadDim;
                                  a.kv.k_tiled = layout == "tiles";
                                }
                                a.kv.ld_seq = ctx * kRow;
                                AttnCpuTuning tt = tune;
                                Timeline tl;
                                tl.threads = timeline_threads;
                                tl.pool_threads = th;
                                if (timeline) {
                                  tl.ns.assign(
                                      static_cast<size_t>(
                                          4 * attention_cpu_blocks(ctx, blk, taper) * kHeadKv *
                                          nt),
                                      -1);
                                  tt.task_ns = tl.ns.data();
                                }
                                const Stats st =
                                    time_calls([&](const uint16_t* k, const uint16_t* v) {
                                      a.kv.k = k;
                                      a.kv.v = v;
                                      const int64_t c0 = now_ns();
                                      attention_cpu(pool, a, scratch, isa, tt);
                                      if (timeline) tl.add(c0, now_ns());
                                    });
                                report(cpu_isa_name(attention_cpu_isa(isa, kHeadDim)), blk, ahead,
                                       pf_name, st);
                                if (timeline) tl.print();
                              }
            if (read_only && (layout == "tiles" || layout == "heads")) {
              // The kernel's tasks (block-major: block b of head h is task
              // b·8 + h), reading only.
              const int blk = attention_cpu_block_len(ctx);
              const int64_t nb = attention_cpu_blocks(ctx);
              std::vector<uint64_t> sink(static_cast<size_t>(th) * 8);
              const Stats st = time_calls([&](const uint16_t* k, const uint16_t* v) {
                pool.run(nb * kHeadKv, [&](int64_t i, int thread) {
                  const int64_t h = i % kHeadKv;
                  const AttnBlockRange r = attention_cpu_block(ctx, i / kHeadKv);
                  const int64_t at = h * ctx * kHeadDim + r.p0 * kHeadDim;
                  const int64_t len = int64_t{r.n} * kHeadDim * 2;
                  sink[static_cast<size_t>(thread) * 8] +=
                      sum_bytes(reinterpret_cast<const char*>(k + at), len) +
                      sum_bytes(reinterpret_cast<const char*>(v + at), len);
                });
              });
              report("read", blk, 0, pinned ? "-/p" : "-", st);
            }
          }
      }
    }
  munmap(kv, elems * 2);
  if (!json_out.empty()) {
    nlohmann::json j;
    j["shape"] = {{"n_head", kHead}, {"n_head_kv", kHeadKv}, {"head_dim", kHeadDim}, {"kv", "f16"}};
    if (!bench_write_json(json_out, j, threads, host, rows)) return 1;
  }
  return 0;
}
