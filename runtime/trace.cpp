// Tracer: per-track span buffers and counters, the Chrome trace writer, and
// the stall table with its bound rule.
// defines: span_kind_name, pipeline_stage, make_stall_table, StallTable::to_text,
//          Tracer, finish_trace
#include "runtime/trace.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <numeric>

namespace ls {

const char* span_kind_name(SpanKind k) {
  switch (k) {
    case SpanKind::Busy:
      return "busy";
    case SpanKind::Starved:
      return "starved";
    case SpanKind::Blocked:
      return "blocked";
  }
  return "busy";
}

int pipeline_stage(const std::string& actor) {
  static const struct {
    const char* name;
    int stage;
  } kStages[] = {
      {"planner", 0}, {"reader", 1},      {"copier", 2},      {"gpu-copy", 3},
      {"compute", 4}, {"cpu-compute", 4}, {"gpu-compute", 4}, {"sampler", 5},
  };
  for (const auto& s : kStages)
    if (actor == s.name) return s.stage;
  return -1;
}

// ---- The stall table ------------------------------------------------------------
//
// The bound rule. Per stage, as percentages of the run's wall time: b = busy,
// s = starved (waiting for input), k = blocked (waiting for a credit). In a
// pipeline in steady state every item passes every stage, so the stage with
// the longest service time is the busiest; the stages after it wait for its
// output (high s) and the stages before it wait for the credits it holds
// (high k). Hence:
//   1. If even the busiest stage has b < 50, no stage is saturated: the run is
//      latency-bound (a dependency, such as the token fed back to the planner,
//      serializes the stages). The bound is the busiest stage (the largest
//      share of the critical path), and the reason says latency-bound.
//   2. Otherwise stage X is *consistent* as the bound when no ordered stage
//      contradicts it: every stage downstream of X (a larger stage number) has
//      k <= s + 2, and every stage upstream of X has s <= k + 2 (2 points of
//      slack: waits of a few percent are noise). Stages with X's number
//      (compute and cpu-compute take turns) and unordered tracks (stage -1)
//      are not compared with X.
//      One exception upstream: a stage J starved behind a blocked stage I
//      further upstream (k_I > s_I + 2 and k_I + 2 >= s_J) does not
//      contradict X. A credit can span several stages — the planner's depth
//      credit is returned by compute, past the reader and the copier — and
//      then back-pressure from X stops the planner, and the stages between
//      it and X see it as an empty mailbox, not as a credit wait. (On the
//      real pipeline with slow kernels the reader is starved 70-98% that way,
//      and without the exception the bound came out as the idle planner.)
//   3. The bound is the consistent stage with the highest b (on a tie, the
//      upstream one). A busier stage that is not consistent is one whose
//      downstream is back-pressured (or upstream starved): it only keeps up.
//   4. If no stage is consistent, the bound is the busiest stage, and the
//      reason says that the waits do not fit a pipeline bound by one stage.
// Only tracks that did some work (a busy span) take part: a stage that only
// waited the whole run (the reader and copier of an all-resident plan) is not
// on this run's path, and its wait says nothing about the bound.
namespace {

constexpr double kSlackPct = 2.0;
constexpr double kSaturatedPct = 50.0;

bool mostly_blocked(const StallRow& r) {
  return r.blocked_pct > r.starved_pct + kSlackPct;
}
bool mostly_starved(const StallRow& r) {
  return r.starved_pct > r.blocked_pct + kSlackPct;
}

// The blocked stage upstream of j that j's starvation is explained by (rule
// step 2's exception), or nullptr.
const StallRow* blocked_upstream(const std::vector<StallRow>& rows, const StallRow& j) {
  for (const StallRow& i : rows)
    if (i.worked && i.stage >= 0 && i.stage < j.stage && mostly_blocked(i) &&
        i.blocked_pct + kSlackPct >= j.starved_pct)
      return &i;
  return nullptr;
}

// Whether stage j waits the wrong way for x to be the bound (rule step 2).
bool contradicts(const std::vector<StallRow>& rows, const StallRow& x, const StallRow& j) {
  if (x.stage < 0 || j.stage < 0 || j.stage == x.stage) return false;
  if (j.stage > x.stage) return mostly_blocked(j);
  return mostly_starved(j) && !blocked_upstream(rows, j);
}

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", v);
  return b;
}

// One line: the bound's busy share, how the others wait, and the runner-up.
std::string explain(const std::vector<StallRow>& rows, size_t bi, bool saturated, bool consistent,
                    const StallRow* runner_up) {
  const StallRow& x = rows[bi];
  std::string r = x.actor + " is busy " + pct(x.busy_pct) + " of the run";
  if (!saturated) {
    return r +
           "; no stage is saturated: latency-bound (a dependency serializes the stages, so "
           "more buffers will not help)";
  }
  std::string down, up;
  for (const StallRow& j : rows) {
    if (&j == &x || !j.worked || j.stage < 0 || x.stage < 0 || j.stage == x.stage) continue;
    if (j.stage > x.stage)
      down += (down.empty() ? "" : ", ") + j.actor + " starved " + pct(j.starved_pct);
    else if (const StallRow* i = mostly_starved(j) ? blocked_upstream(rows, j) : nullptr)
      up += (up.empty() ? "" : ", ") + j.actor + " starved " + pct(j.starved_pct) + " behind " +
            i->actor;
    else
      up += (up.empty() ? "" : ", ") + j.actor + " blocked " + pct(j.blocked_pct);
  }
  if (!down.empty()) r += "; downstream waits for input (" + down + ")";
  if (!up.empty()) r += "; upstream waits for credits (" + up + ")";
  if (!consistent) r += "; the waits do not fit a pipeline bound by one stage";
  if (runner_up && runner_up->busy_pct >= x.busy_pct)
    r += "; " + runner_up->actor + " is busier (" + pct(runner_up->busy_pct) +
         ") but waits the wrong way for a bound: it only keeps up";
  else if (runner_up && runner_up->busy_pct > x.busy_pct - 10.0)
    r += "; " + runner_up->actor + " is close behind (" + pct(runner_up->busy_pct) +
         "): nearly balanced";
  return r;
}

std::string human_bytes(uint64_t b) {
  char s[32];
  if (b >= 1000000000ull)
    std::snprintf(s, sizeof s, "%.2f GB", double(b) / 1e9);
  else if (b >= 1000000ull)
    std::snprintf(s, sizeof s, "%.2f MB", double(b) / 1e6);
  else if (b >= 1000ull)
    std::snprintf(s, sizeof s, "%.2f kB", double(b) / 1e3);
  else
    std::snprintf(s, sizeof s, "%" PRIu64 " B", b);
  return s;
}

}  // namespace

StallTable make_stall_table(const std::vector<TrackStats>& tracks) {
  StallTable t;
  uint64_t first = UINT64_MAX, last = 0;
  for (const TrackStats& s : tracks) {
    if (s.spans == 0) continue;
    first = std::min(first, s.first_ns);
    last = std::max(last, s.last_ns);
  }
  const uint64_t wall_ns = last > first ? last - first : 0;
  t.wall_s = double(wall_ns) * 1e-9;

  // Pipeline order, unordered tracks last; stable, so registration order breaks ties.
  std::vector<size_t> order(tracks.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int sa = tracks[a].stage < 0 ? 1 << 20 : tracks[a].stage;
    const int sb = tracks[b].stage < 0 ? 1 << 20 : tracks[b].stage;
    return sa < sb;
  });
  for (size_t i : order) {
    const TrackStats& s = tracks[i];
    StallRow r;
    r.actor = s.name;
    r.stage = s.stage;
    r.bytes = s.bytes;
    r.spans = s.spans;
    r.worked = s.busy_ns > 0;
    if (wall_ns > 0) {
      r.busy_pct = 100.0 * double(s.busy_ns) / double(wall_ns);
      r.starved_pct = 100.0 * double(s.starved_ns) / double(wall_ns);
      r.blocked_pct = 100.0 * double(s.blocked_ns) / double(wall_ns);
      r.gbps = double(s.bytes) / double(wall_ns);  // bytes/ns == GB/s
    }
    if (s.busy_ns > 0) r.busy_gbps = double(s.bytes) / double(s.busy_ns);
    t.rows.push_back(std::move(r));
  }

  if (wall_ns == 0) {
    t.reason = "no spans recorded";
    return t;
  }
  size_t busiest = SIZE_MAX;
  for (size_t i = 0; i < t.rows.size(); ++i)
    if (t.rows[i].worked && (busiest == SIZE_MAX || t.rows[i].busy_pct > t.rows[busiest].busy_pct))
      busiest = i;
  if (busiest == SIZE_MAX) {
    t.reason = "no stage did any work (only waits were recorded)";
    return t;
  }
  const bool saturated = t.rows[busiest].busy_pct >= kSaturatedPct;  // rule step 1
  size_t best = SIZE_MAX;  // steps 2 and 3; ties keep the first, i.e. upstream, row
  for (size_t i = 0; saturated && i < t.rows.size(); ++i) {
    const StallRow& x = t.rows[i];
    if (!x.worked) continue;
    bool ok = true;
    for (const StallRow& j : t.rows)
      if (j.worked && &j != &x && contradicts(t.rows, x, j)) ok = false;
    if (ok && (best == SIZE_MAX || x.busy_pct > t.rows[best].busy_pct)) best = i;
  }
  const bool consistent = best != SIZE_MAX;
  const size_t bi = consistent ? best : busiest;  // step 4 falls back to the busiest
  const StallRow* runner_up = nullptr;
  for (size_t i = 0; i < t.rows.size(); ++i)
    if (i != bi && t.rows[i].worked && (!runner_up || t.rows[i].busy_pct > runner_up->busy_pct))
      runner_up = &t.rows[i];
  t.bound = t.rows[bi].actor;
  t.reason = explain(t.rows, bi, saturated, consistent, runner_up);
  return t;
}

std::string StallTable::to_text() const {
  std::string o;
  char line[256];
  std::snprintf(line, sizeof line,
                "stall table over %.3f s (busy: working; starved: waiting for input; "
                "blocked: waiting for a credit)\n",
                wall_s);
  o += line;
  std::snprintf(line, sizeof line, "%-14s %7s %9s %9s %12s %8s %10s %9s\n", "actor", "busy %",
                "starved %", "blocked %", "bytes", "GB/s", "GB/s busy", "spans");
  o += line;
  for (const StallRow& r : rows) {
    char gbps[16] = "-", busy_gbps[16] = "-";
    if (r.bytes) {
      std::snprintf(gbps, sizeof gbps, "%.2f", r.gbps);
      std::snprintf(busy_gbps, sizeof busy_gbps, "%.2f", r.busy_gbps);
    }
    std::snprintf(line, sizeof line, "%-14s %7.1f %9.1f %9.1f %12s %8s %10s %9" PRIu64 "\n",
                  r.actor.c_str(), r.busy_pct, r.starved_pct, r.blocked_pct,
                  r.bytes ? human_bytes(r.bytes).c_str() : "-", gbps, busy_gbps, r.spans);
    o += line;
  }
  o += "bound: " + (bound.empty() ? std::string("(none)") : bound) + " (" + reason + ")\n";
  return o;
}

// ---- Tracer ------------------------------------------------------------------------

Tracer::Tracer(bool enabled, size_t max_spans_per_track)
    : enabled_(enabled),
      max_spans_(max_spans_per_track),
      start_(Clock::now()),
      tracks_(new Track[kMaxTracks]) {}

int Tracer::register_track(const std::string& name, int stage) {
  std::lock_guard<std::mutex> lock(register_mu_);
  const int id = n_tracks_.load(std::memory_order_relaxed);
  if (id >= kMaxTracks) return -1;
  Track& t = tracks_[size_t(id)];
  t.name = name;
  t.stage = stage == kStageFromName ? pipeline_stage(name) : stage;
  if (enabled_) t.records.reserve(std::min<size_t>(max_spans_, 4096));
  n_tracks_.store(id + 1, std::memory_order_release);  // publishes name and stage
  return id;
}

std::vector<TrackStats> Tracer::track_stats() const {
  std::vector<TrackStats> v;
  const int n = track_count();
  for (int i = 0; i < n; ++i) {
    const Track& t = tracks_[size_t(i)];
    TrackStats s;
    s.name = t.name;
    s.stage = t.stage;
    s.busy_ns = t.busy_ns.load(std::memory_order_relaxed);
    s.starved_ns = t.starved_ns.load(std::memory_order_relaxed);
    s.blocked_ns = t.blocked_ns.load(std::memory_order_relaxed);
    s.bytes = t.bytes.load(std::memory_order_relaxed);
    s.spans = t.spans.load(std::memory_order_relaxed);
    s.first_ns = t.first_ns.load(std::memory_order_relaxed);
    s.last_ns = t.last_ns.load(std::memory_order_relaxed);
    v.push_back(std::move(s));
  }
  return v;
}

StallTable Tracer::stall_table() const {
  return make_stall_table(track_stats());
}

size_t Tracer::span_count(int track) const {
  if (track < 0 || track >= track_count()) return 0;
  return tracks_[size_t(track)].records.size();
}

uint64_t Tracer::dropped_spans() const {
  uint64_t d = 0;
  for (int i = 0; i < track_count(); ++i)
    d += tracks_[size_t(i)].dropped.load(std::memory_order_relaxed);
  return d;
}

// ---- Chrome trace JSON ----------------------------------------------------------------
//
// Streamed with stdio rather than built as one nlohmann::json document: a long
// run has millions of spans, and a DOM of them would take gigabytes.
//   {"traceEvents": [
//     {"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"layerstream"}},
//     {"ph":"M","name":"thread_name","pid":1,"tid":T,"args":{"name":"reader","stage":1}},
//     {"ph":"M","name":"thread_sort_index","pid":1,"tid":T,"args":{"sort_index":N}},
//     {"ph":"X","name":"read","cat":"busy","pid":1,"tid":T,"ts":12.345,"dur":6.789,
//      "args":{"kind":"busy","layer":3,"step":0,"bytes":4096,"buffer":1,"flow_id":4}},
//     {"ph":"s","name":"buffer","cat":"flow","id":4,"pid":1,"tid":T,"ts":15.739,"bp":"e"},
//     ...], "displayTimeUnit": "ms", "otherData": {...}}
// ts and dur are microseconds with three decimals (exact ns). tid = track id + 1.
// A flow event sits 1 ns into its span, so it binds to that span as the
// enclosing slice, and the events of one trip are in causal order: each
// stage's span starts after it popped the message that the stage before
// pushed inside its own span (a span's middle is not: a thread descheduled
// after its push ends its span late). v1 flows are matched by (id, cat,
// name), hence one cat and name for all of them.
namespace {

class JsonOut {
 public:
  explicit JsonOut(std::FILE* f) : f_(f) {}
  void raw(const char* s) { std::fputs(s, f_); }
  void str(const char* s) {
    std::fputc('"', f_);
    for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p) {
      if (*p == '"' || *p == '\\') {
        std::fputc('\\', f_);
        std::fputc(*p, f_);
      } else if (*p < 0x20) {
        std::fprintf(f_, "\\u%04x", *p);
      } else {
        std::fputc(*p, f_);
      }
    }
    std::fputc('"', f_);
  }
  void us(uint64_t ns) { std::fprintf(f_, "%" PRIu64 ".%03u", ns / 1000, unsigned(ns % 1000)); }
  void u64(uint64_t v) { std::fprintf(f_, "%" PRIu64, v); }
  void i64(int64_t v) { std::fprintf(f_, "%" PRId64, v); }

 private:
  std::FILE* f_;
};

const char* flow_ph(uint8_t phase) {
  switch (phase) {
    case kFlowStart:
      return "s";
    case kFlowStep:
      return "t";
    case kFlowEnd:
      return "f";
  }
  return nullptr;
}

}  // namespace

Status Tracer::write_chrome_json(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return make_error("trace: cannot create %s: %s", tmp.c_str(), std::strerror(errno));
  std::vector<char> buf(size_t(1) << 20);
  std::setvbuf(f, buf.data(), _IOFBF, buf.size());
  JsonOut o(f);
  const int n = track_count();

  o.raw("{\"traceEvents\": [\n");
  o.raw(
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":"
      "\"layerstream\"}}");
  for (int i = 0; i < n; ++i) {
    const Track& t = tracks_[size_t(i)];
    const int tid = i + 1;
    const int sort_index = (t.stage >= 0 ? t.stage : 1000) * kMaxTracks + i;
    std::fprintf(
        f,
        ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":", tid);
    o.str(t.name.c_str());
    std::fprintf(f, ",\"stage\":%d}}", t.stage);
    std::fprintf(f,
                 ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":%d,"
                 "\"args\":{\"sort_index\":%d}}",
                 tid, sort_index);
  }
  for (int i = 0; i < n; ++i) {
    const int tid = i + 1;
    for (const SpanRecord& r : tracks_[size_t(i)].records) {
      const uint64_t dur = r.t1_ns > r.t0_ns ? r.t1_ns - r.t0_ns : 0;
      const char* kind = span_kind_name(r.kind);
      o.raw(",\n{\"ph\":\"X\",\"name\":");
      o.str(r.name ? r.name : "?");
      std::fprintf(f, ",\"cat\":\"%s\",\"pid\":1,\"tid\":%d,\"ts\":", kind, tid);
      o.us(r.t0_ns);
      o.raw(",\"dur\":");
      o.us(dur);
      std::fprintf(f, ",\"args\":{\"kind\":\"%s\",\"layer\":%d,\"step\":", kind, int(r.layer));
      o.i64(r.step);
      o.raw(",\"bytes\":");
      o.u64(r.bytes);
      std::fprintf(f, ",\"buffer\":%d", int(r.buffer));
      if (r.flow_id) {
        o.raw(",\"flow_id\":");
        o.u64(r.flow_id);
      }
      o.raw("}}");
      if (const char* ph = r.flow_id ? flow_ph(r.flow_phase) : nullptr) {
        std::fprintf(f, ",\n{\"ph\":\"%s\",\"name\":\"buffer\",\"cat\":\"flow\",\"id\":", ph);
        o.u64(r.flow_id);
        std::fprintf(f, ",\"pid\":1,\"tid\":%d,\"ts\":", tid);
        o.us(r.t0_ns + std::min<uint64_t>(dur / 2, 1));
        o.raw(",\"bp\":\"e\"}");
      }
    }
  }
  o.raw("\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"producer\": \"layerstream\", ");
  std::fprintf(f, "\"dropped_spans\": %" PRIu64 "}}\n", dropped_spans());

  const bool write_failed = std::ferror(f) != 0;
  const int write_errno = errno;
  if (std::fclose(f) != 0 || write_failed) {
    const int e = write_failed ? write_errno : errno;
    std::remove(tmp.c_str());
    return make_error("trace: cannot write %s: %s", tmp.c_str(), std::strerror(e));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    return make_error("trace: cannot rename %s to %s: %s", tmp.c_str(), path.c_str(),
                      std::strerror(e));
  }
  return ok();
}

Status finish_trace(const Tracer& tracer, const std::string& trace_path, bool print_stats) {
  Status st;
  if (!trace_path.empty()) st = tracer.write_chrome_json(trace_path);
  if (print_stats) std::fputs(tracer.stall_table().to_text().c_str(), stderr);
  if (st.ok() && !trace_path.empty() && tracer.dropped_spans() > 0)
    std::fprintf(stderr, "trace: %" PRIu64 " spans not kept (a track was full); stats are exact\n",
                 tracer.dropped_spans());
  return st;
}

}  // namespace ls
