// Tracing and stall accounting for the actor pipeline.
//
// Every actor thread owns one track and records spans on it: Busy (working),
// Starved (waiting for input) and Blocked (waiting for a credit, i.e.
// back-pressure), each with layer, step, bytes and buffer id. Two things come
// out of the spans:
//   - always, even without --trace: per-track counters (busy / starved /
//     blocked ns, bytes, span count) that the stall table (--stats) is built
//     from. They cost two clock reads and a few adds per span;
//   - with --trace FILE: the spans themselves, kept in a per-track vector and
//     written at the end as Chrome trace JSON (Perfetto, chrome://tracing),
//     one thread track per actor, flow arrows following a buffer's trip
//     reader -> copier -> compute.
// GPU copy and compute spans are recorded with explicit times from CUDA event
// timestamps through Tracer::record, on their own tracks ("gpu-copy",
// "gpu-compute"), so that they never overlap the CPU spans of a track.
// Built with -DLS_NVTX=ON, every TraceScope is also an NVTX range of the same
// name, so an Nsight Systems capture shows the actors' spans beside the
// GPU's own rows.
//
// Threading: register_track from any thread at any time; record / TraceScope
// only from the one thread that writes that track (no locks on that path);
// stall_table() at any time (the counters are single-writer relaxed atomics,
// so a mid-run call is a consistent-enough snapshot for a watchdog);
// write_chrome_json() once the writers of the tracks have stopped.
//
// defines: SpanKind, span_kind_name(), FlowPhase, SpanRecord, trace_flow_id(),
//          pipeline_stage(), TrackStats, StallRow, StallTable, make_stall_table(),
//          Tracer, TraceScope, finish_trace()
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/status.h"

#ifdef LS_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace ls {

enum class SpanKind : uint8_t {
  Busy,     // working: reading, issuing copies, computing, sampling
  Starved,  // waiting for input (an empty mailbox)
  Blocked,  // waiting for a credit (a free staging buffer or device slot): back-pressure
};
// "busy", "starved", "blocked": the "cat" of the span in the Chrome trace.
const char* span_kind_name(SpanKind k);

// Where a span sits in a buffer's trip. Unscoped so it converts to uint8_t.
enum FlowPhase : uint8_t { kFlowNone = 0, kFlowStart = 1, kFlowStep = 2, kFlowEnd = 3 };

// One span. Times are ns on the tracer's clock (Tracer::now_ns, or CUDA event
// times converted to it). name must outlive the tracer (a string literal).
struct SpanRecord {
  uint64_t t0_ns, t1_ns;
  const char* name;
  SpanKind kind;
  int32_t layer;       // -1: not about one layer
  int64_t step;        // -1: not about one step
  uint64_t bytes;      // bytes moved by this span (counted for Busy spans)
  int32_t buffer;      // staging buffer or device slot id, -1: none
  uint64_t flow_id;    // 0: none; one id per buffer trip (see trace_flow_id)
  uint8_t flow_phase;  // FlowPhase
};

// Kept per span when tracing: 72 bytes, so a 4 Mi-span track is 288 MiB at most.
static_assert(sizeof(SpanRecord) == 72, "SpanRecord grew: update kDefaultMaxSpansPerTrack's note");

// The flow id of one layer's trip through the pipeline in one step: unique per
// (step, layer) and never 0. The buffer id alone is not unique, since buffers
// are reused every few layers.
inline uint64_t trace_flow_id(int64_t step, int32_t layer) {
  return ((uint64_t(step) << 24) | (uint32_t(layer) & 0xffffffu)) + 1;
}

// The position of an actor in the pipeline, upstream first, for the bound rule:
// planner 0, reader 1, copier 2, gpu-copy 3, compute / cpu-compute / gpu-compute 4
// (they alternate layers, so neither is upstream of the other), sampler 5.
// -1 for any other name: such a track is not ordered against the others.
int pipeline_stage(const std::string& actor);

// The totals of one track: what the stall table is computed from, whether they
// come from the live counters or from a trace file read back.
struct TrackStats {
  std::string name;
  int stage = -1;  // pipeline_stage order; -1 unordered
  uint64_t busy_ns = 0, starved_ns = 0, blocked_ns = 0;
  uint64_t bytes = 0;  // of Busy spans
  uint64_t spans = 0;
  uint64_t first_ns = UINT64_MAX, last_ns = 0;  // earliest span start, latest span end
};

struct StallRow {
  std::string actor;
  int stage = -1;
  double busy_pct = 0, starved_pct = 0, blocked_pct = 0;  // of the run's wall time
  uint64_t bytes = 0;
  double gbps = 0;       // bytes / wall time: the throughput the stage delivered
  double busy_gbps = 0;  // bytes / busy time: its rate while working (compare to the device limit)
  uint64_t spans = 0;
  bool worked = false;  // some busy time: the stage takes part in the bound rule
};

struct StallTable {
  std::vector<StallRow> rows;  // pipeline order (unordered tracks last)
  double wall_s = 0;           // earliest span start to latest span end, over all tracks
  std::string bound;   // the actor that bounds the pipeline, e.g. "reader"; empty if no spans
  std::string reason;  // why, in one line
  std::string to_text() const;
};

// The stall table and the bound rule (see trace.cpp for the rule, stated precisely).
StallTable make_stall_table(const std::vector<TrackStats>& tracks);

class Tracer {
 public:
  static constexpr int kMaxTracks = 64;
  static constexpr int kStageFromName = -2;  // register_track: look the stage up by name
  // 4 Mi spans x 72 B = 288 MiB per track at most; the counters stay exact past it.
  static constexpr size_t kDefaultMaxSpansPerTrack = size_t(1) << 22;

  explicit Tracer(bool enabled, size_t max_spans_per_track = kDefaultMaxSpansPerTrack);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  bool enabled() const { return enabled_; }

  // One track per actor thread ("planner", "reader", "copier", "compute",
  // "cpu-compute", "sampler", "gpu-copy", "gpu-compute"); returns its id, or -1
  // when kMaxTracks are taken (record ignores -1). stage: pipeline_stage order,
  // -1 unordered, kStageFromName to use pipeline_stage(name).
  int register_track(const std::string& name, int stage = kStageFromName);

  // Adds r to the track's counters; keeps r too when tracing is enabled.
  // Only the thread that writes `track` may call it.
  void record(int track, const SpanRecord& r);

  // Steady clock, ns since the tracer was made.
  uint64_t now_ns() const {
    return uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count());
  }
  // The tracer's start on the steady clock, to convert other timestamps (CUDA
  // events are relative to an event recorded at a known now_ns()).
  std::chrono::steady_clock::time_point start() const { return start_; }

  // Chrome trace JSON: {"traceEvents": [...], "displayTimeUnit": "ms"}. Written to
  // path + ".tmp" and renamed, so a reader never sees half a file.
  Status write_chrome_json(const std::string& path) const;

  StallTable stall_table() const;
  std::vector<TrackStats> track_stats() const;
  int track_count() const { return n_tracks_.load(std::memory_order_acquire); }
  size_t span_count(int track) const;  // spans kept (0 when disabled)
  uint64_t dropped_spans() const;      // spans not kept because a track was full

 private:
  using Clock = std::chrono::steady_clock;

  // Written by one thread; the counters are atomics only so that stall_table()
  // may read them mid-run (relaxed load + store: plain moves on x86, no lock).
  // alignas(64): tracks of different threads never share a cache line.
  struct alignas(64) Track {
    std::string name;
    int stage = -1;
    std::atomic<uint64_t> busy_ns{0}, starved_ns{0}, blocked_ns{0}, bytes{0}, spans{0};
    std::atomic<uint64_t> first_ns{UINT64_MAX}, last_ns{0}, dropped{0};
    std::vector<SpanRecord> records;
  };
  static void bump(std::atomic<uint64_t>& a, uint64_t v) {
    a.store(a.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }

  const bool enabled_;
  const size_t max_spans_;
  const Clock::time_point start_;
  std::unique_ptr<Track[]> tracks_;  // kMaxTracks, never moved: ids index it without a lock
  std::atomic<int> n_tracks_{0};
  std::mutex register_mu_;
};

inline void Tracer::record(int track, const SpanRecord& r) {
  if (track < 0) return;
  Track& t = tracks_[size_t(track)];
  const uint64_t d = r.t1_ns > r.t0_ns ? r.t1_ns - r.t0_ns : 0;
  switch (r.kind) {
    case SpanKind::Busy:
      bump(t.busy_ns, d);
      bump(t.bytes, r.bytes);
      break;
    case SpanKind::Starved:
      bump(t.starved_ns, d);
      break;
    case SpanKind::Blocked:
      bump(t.blocked_ns, d);
      break;
  }
  bump(t.spans, 1);
  if (r.t0_ns < t.first_ns.load(std::memory_order_relaxed))
    t.first_ns.store(r.t0_ns, std::memory_order_relaxed);
  if (r.t1_ns > t.last_ns.load(std::memory_order_relaxed))
    t.last_ns.store(r.t1_ns, std::memory_order_relaxed);
  if (!enabled_) return;  // the one branch that tracing off adds
  if (t.records.size() < max_spans_)
    t.records.push_back(r);
  else
    bump(t.dropped, 1);
}

// One span, from construction to destruction:
//   TraceScope span(tracer, track, "read", SpanKind::Busy, layer, step, bytes, buf,
//                   trace_flow_id(step, layer), kFlowStart);
// Costs two clock reads and the counter adds; a branch more when tracing is off.
class TraceScope {
 public:
  TraceScope(Tracer& tracer, int track, const char* name, SpanKind kind, int32_t layer,
             int64_t step, uint64_t bytes = 0, int32_t buffer = -1, uint64_t flow = 0,
             uint8_t flow_phase = kFlowNone)
      : tracer_(tracer), track_(track), rec_{tracer.now_ns(), 0,      name, kind,      layer, step,
                                             bytes,           buffer, flow, flow_phase} {
#ifdef LS_NVTX
    nvtxRangePushA(name);  // same name as the span, so Nsight and Perfetto agree
#endif
  }
  ~TraceScope() {
    rec_.t1_ns = tracer_.now_ns();
    tracer_.record(track_, rec_);
#ifdef LS_NVTX
    nvtxRangePop();
#endif
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  // What is known only once the span has begun (the message that ended a wait).
  void set_bytes(uint64_t bytes) {
    rec_.bytes = bytes;
  }
  void set_buffer(int32_t buffer) {
    rec_.buffer = buffer;
  }
  void set_flow(uint64_t flow, uint8_t phase) {
    rec_.flow_id = flow;
    rec_.flow_phase = phase;
  }

 private:
  Tracer& tracer_;
  int track_;
  SpanRecord rec_;
};

// The end of a run: writes the trace when trace_path is not empty (--trace) and
// prints the stall table to stderr when print_stats (--stats). Call it on every
// exit path, errors included, once the actors have stopped.
Status finish_trace(const Tracer& tracer, const std::string& trace_path, bool print_stats);

}  // namespace ls
