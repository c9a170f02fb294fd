// Tracer, Chrome trace writer, stall table and `trace summarize`: a simulated
// reader -> copier -> compute pipeline with credits (staging buffers, device
// slots) run I/O-bound and compute-bound, the trace parsed back with
// nlohmann_json, and the cost of a span measured.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/trace.h"
#include "runtime/trace_summary.h"
#include "tests/unit/ls_binary.h"

using namespace ls;
using nlohmann::json;

namespace {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr double kSanitizerSlowdown = 10;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
constexpr double kSanitizerSlowdown = 10;
#else
constexpr double kSanitizerSlowdown = 1;
#endif
#else
constexpr double kSanitizerSlowdown = 1;
#endif

// A mailbox: pop blocks while it is empty. Credit pools are mailboxes of free ids.
template <typename T>
class Chan {
 public:
  void push(T v) {
    {
      std::lock_guard<std::mutex> l(mu_);
      q_.push_back(v);
    }
    cv_.notify_one();
  }
  T pop() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !q_.empty(); });
    T v = q_.front();
    q_.pop_front();
    return v;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> q_;
};

struct SimConfig {
  int items = 32;  // layer visits: step = i / layers, layer = i % layers
  int layers = 4;
  int staging = 2;  // staging buffers (reader credits)
  int slots = 2;    // device slots (copier credits)
  int read_us, copy_us, compute_us;
  uint64_t bytes = 1 << 20;  // per layer
};

struct Msg {
  int item, buf;  // item -1: end of the run
};

void simulate_work(int us) {
  std::this_thread::sleep_for(std::chrono::microseconds(us));
}

// reader: waits for a staging credit (blocked), reads (busy, flow start).
// copier: waits for input (starved), a slot credit (blocked), copies (busy, flow step),
//         returns the staging credit. compute: waits for input (starved), computes
//         (busy, flow end), returns the slot credit.
void run_pipeline(Tracer& tr, const SimConfig& c) {
  Chan<int> staging_free, slot_free;
  Chan<Msg> to_copier, to_compute;
  for (int i = 0; i < c.staging; ++i) staging_free.push(i);
  for (int i = 0; i < c.slots; ++i) slot_free.push(i);

  std::thread reader([&] {
    const int trk = tr.register_track("reader");
    for (int i = 0; i < c.items; ++i) {
      const int32_t layer = i % c.layers;
      const int64_t step = i / c.layers;
      int buf;
      {
        TraceScope w(tr, trk, "wait staging", SpanKind::Blocked, layer, step);
        buf = staging_free.pop();
        w.set_buffer(buf);
      }
      {
        TraceScope s(tr, trk, "read", SpanKind::Busy, layer, step, c.bytes, buf,
                     trace_flow_id(step, layer), kFlowStart);
        simulate_work(c.read_us);
      }
      to_copier.push({i, buf});
    }
    to_copier.push({-1, -1});
  });
  std::thread copier([&] {
    const int trk = tr.register_track("copier");
    for (;;) {
      Msg m;
      {
        TraceScope w(tr, trk, "wait input", SpanKind::Starved, -1, -1);
        m = to_copier.pop();
      }
      if (m.item < 0) break;
      const int32_t layer = m.item % c.layers;
      const int64_t step = m.item / c.layers;
      int slot;
      {
        TraceScope w(tr, trk, "wait slot", SpanKind::Blocked, layer, step);
        slot = slot_free.pop();
      }
      {
        TraceScope s(tr, trk, "h2d", SpanKind::Busy, layer, step, c.bytes, slot,
                     trace_flow_id(step, layer), kFlowStep);
        simulate_work(c.copy_us);
      }
      staging_free.push(m.buf);
      to_compute.push({m.item, slot});
    }
    to_compute.push({-1, -1});
  });
  std::thread compute([&] {
    const int trk = tr.register_track("compute");
    for (;;) {
      Msg m;
      {
        TraceScope w(tr, trk, "wait input", SpanKind::Starved, -1, -1);
        m = to_compute.pop();
      }
      if (m.item < 0) break;
      const int32_t layer = m.item % c.layers;
      const int64_t step = m.item / c.layers;
      {
        TraceScope s(tr, trk, "layer", SpanKind::Busy, layer, step, c.bytes, m.buf,
                     trace_flow_id(step, layer), kFlowEnd);
        simulate_work(c.compute_us);
      }
      slot_free.push(m.buf);
    }
  });
  reader.join();
  copier.join();
  compute.join();
}

SimConfig io_bound() {
  SimConfig c;
  c.read_us = 5000, c.copy_us = 20, c.compute_us = 20;
  return c;
}
SimConfig compute_bound() {
  SimConfig c;
  c.read_us = 20, c.copy_us = 20, c.compute_us = 5000;
  return c;
}

const StallRow& row(const StallTable& t, const std::string& actor) {
  for (const StallRow& r : t.rows)
    if (r.actor == actor) return r;
  FAIL("no row for " << actor);
  return t.rows.front();
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("ls_test_trace_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

}  // namespace

TEST_CASE("trace: an I/O-bound pipeline is bound by the reader") {
  const SimConfig c = io_bound();
  Tracer tr(true);
  run_pipeline(tr, c);
  const StallTable t = tr.stall_table();
  MESSAGE(t.to_text());
  CHECK(t.bound == "reader");
  CHECK(row(t, "reader").busy_pct > 80.0);
  CHECK(row(t, "copier").starved_pct > 50.0);
  CHECK(row(t, "compute").starved_pct > 50.0);
  CHECK(row(t, "reader").bytes == uint64_t(c.items) * c.bytes);
  CHECK(row(t, "reader").spans == 2u * c.items);  // a wait for a credit and a read per item
  // Rows come in pipeline order whatever order the threads registered in.
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[0].actor == "reader");
  CHECK(t.rows[1].actor == "copier");
  CHECK(t.rows[2].actor == "compute");
  CHECK(t.to_text().find("bound: reader") != std::string::npos);
}

TEST_CASE("trace: a compute-bound pipeline is bound by compute") {
  Tracer tr(true);
  run_pipeline(tr, compute_bound());
  const StallTable t = tr.stall_table();
  MESSAGE(t.to_text());
  CHECK(t.bound == "compute");
  CHECK(row(t, "compute").busy_pct > 80.0);
  CHECK(row(t, "reader").blocked_pct > 50.0);  // back-pressured: no free staging buffer
  CHECK(row(t, "copier").blocked_pct > 50.0);  // back-pressured: no free device slot
}

TEST_CASE("trace: the bound rule on hand-made totals") {
  auto track = [](const char* name, uint64_t busy, uint64_t starved, uint64_t blocked) {
    TrackStats s;
    s.name = name;
    s.stage = pipeline_stage(name);
    s.busy_ns = busy, s.starved_ns = starved, s.blocked_ns = blocked;
    s.spans = 1;
    s.first_ns = 0, s.last_ns = 1000;
    return s;
  };
  SUBCASE("the busiest stage is not the bound when the stage after it is back-pressured") {
    // The reader is busier than compute, but the copier waits for slots that only
    // compute frees: compute is the bound, and the reader merely keeps up.
    const StallTable t =
        make_stall_table({track("reader", 900, 0, 50), track("copier", 200, 50, 700),
                          track("compute", 850, 100, 0)});
    CHECK(t.bound == "compute");
    CHECK(t.reason.find("reader is busier") != std::string::npos);
  }
  SUBCASE("a balanced pipeline names the runner-up") {
    const StallTable t = make_stall_table(
        {track("reader", 950, 0, 30), track("copier", 100, 850, 0), track("compute", 900, 80, 0)});
    CHECK(t.bound == "reader");
    CHECK(t.reason.find("compute is close behind") != std::string::npos);
  }
  SUBCASE("no saturated stage: latency-bound") {
    const StallTable t =
        make_stall_table({track("planner", 100, 800, 0), track("reader", 300, 600, 0),
                          track("compute", 350, 600, 0)});
    CHECK(t.bound == "compute");
    CHECK(t.reason.find("latency-bound") != std::string::npos);
  }
  SUBCASE("waits that fit no single bound fall back to the busiest stage") {
    // reader is starved (its upstream is slow) and compute is blocked (its downstream is).
    const StallTable t =
        make_stall_table({track("reader", 600, 300, 0), track("compute", 500, 0, 400),
                          track("sampler", 100, 0, 800)});
    CHECK(t.bound == "reader");
    CHECK(t.reason.find("do not fit") != std::string::npos);
  }
  SUBCASE("a stage that only waited (idle reader of a resident plan) is not on the path") {
    const StallTable t = make_stall_table({track("planner", 1, 0, 860), track("reader", 0, 946, 0),
                                           track("copier", 0, 939, 0), track("compute", 807, 1, 0),
                                           track("sampler", 1, 966, 0)});
    CHECK(t.bound == "compute");
  }
  SUBCASE("only waits") {
    const StallTable t =
        make_stall_table({track("reader", 0, 900, 0), track("compute", 0, 800, 0)});
    CHECK(t.bound.empty());
    CHECK(t.reason.find("no stage did any work") != std::string::npos);
  }
  SUBCASE("no spans") {
    const StallTable t = make_stall_table({});
    CHECK(t.bound.empty());
    CHECK(t.reason == "no spans recorded");
    CHECK(t.to_text().find("bound: (none)") != std::string::npos);
  }
}

TEST_CASE("trace: the Chrome trace has one track per actor, spans with args, and paired flows") {
  const SimConfig c = io_bound();
  Tracer tr(true);
  run_pipeline(tr, c);
  const std::string path = temp_path("flows.json");
  REQUIRE(tr.write_chrome_json(path).ok());
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  const json doc = read_json(path);
  std::filesystem::remove(path);

  CHECK(doc.at("displayTimeUnit") == "ms");
  const json& evs = doc.at("traceEvents");
  REQUIRE(evs.is_array());

  // Tracks: a thread_name per actor, on distinct tids.
  std::map<int, std::string> track_of_tid;
  for (const json& e : evs)
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      track_of_tid[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
  std::set<std::string> names;
  for (const auto& [tid, n] : track_of_tid) names.insert(n);
  CHECK(track_of_tid.size() == 3);
  CHECK(names == std::set<std::string>{"reader", "copier", "compute"});

  // Spans: complete events with the kind as cat and layer/step/bytes/buffer in args.
  std::map<std::string, int> span_names;
  std::map<uint64_t, std::vector<const json*>> spans_by_flow;
  int reads = 0;
  for (const json& e : evs) {
    if (e.at("ph") != "X") continue;
    REQUIRE(track_of_tid.count(e.at("tid").get<int>()) == 1);
    const std::string track = track_of_tid[e.at("tid").get<int>()];
    const std::string name = e.at("name").get<std::string>();
    ++span_names[track + "/" + name];
    const json& a = e.at("args");
    CHECK(e.at("cat") == a.at("kind"));
    CHECK(e.at("dur").get<double>() >= 0.0);
    for (const char* k : {"layer", "step", "bytes", "buffer"}) CHECK(a.contains(k));
    if (name == "read") {
      ++reads;
      CHECK(e.at("cat") == "busy");
      CHECK(a.at("bytes").get<uint64_t>() == c.bytes);
      CHECK(a.at("layer").get<int>() >= 0);
      CHECK(a.at("layer").get<int>() < c.layers);
      CHECK(a.at("step").get<int>() >= 0);
      CHECK(a.at("step").get<int>() < c.items / c.layers);
      CHECK(a.at("buffer").get<int>() >= 0);
      CHECK(a.at("buffer").get<int>() < c.staging);
      CHECK(e.at("dur").get<double>() >= c.read_us * 0.9);  // slept at least read_us
    }
    if (a.contains("flow_id")) spans_by_flow[a.at("flow_id").get<uint64_t>()].push_back(&e);
  }
  CHECK(reads == c.items);
  CHECK(span_names["reader/wait staging"] == c.items);
  CHECK(span_names["copier/h2d"] == c.items);
  CHECK(span_names["copier/wait slot"] == c.items);
  CHECK(span_names["copier/wait input"] == c.items + 1);  // + the wait for the end message
  CHECK(span_names["compute/layer"] == c.items);
  CHECK(span_names["compute/wait input"] == c.items + 1);

  // Flows: per id one "s" on the reader, one "t" on the copier, one "f" on compute,
  // each inside a span of that track carrying the same flow id.
  std::map<uint64_t, std::string> phases;  // id -> "stf" in the order met
  for (const json& e : evs) {
    const std::string ph = e.at("ph").get<std::string>();
    if (ph != "s" && ph != "t" && ph != "f") continue;
    CHECK(e.at("cat") == "flow");
    CHECK(e.at("name") == "buffer");
    CHECK(e.at("bp") == "e");
    const uint64_t id = e.at("id").get<uint64_t>();
    phases[id] += ph;
    const std::string track = track_of_tid[e.at("tid").get<int>()];
    CHECK(track == (ph == "s" ? "reader" : ph == "t" ? "copier" : "compute"));
    bool enclosed = false;
    for (const json* s : spans_by_flow[id]) {
      const double ts = s->at("ts").get<double>(), dur = s->at("dur").get<double>();
      if (s->at("tid") == e.at("tid") && e.at("ts").get<double>() >= ts &&
          e.at("ts").get<double>() <= ts + dur)
        enclosed = true;
    }
    CHECK_MESSAGE(enclosed, "flow " << id << " " << ph << " is not inside its span");
  }
  CHECK(phases.size() == size_t(c.items));
  for (const auto& flow : phases) {
    const auto id = flow.first;
    const std::string& p = flow.second;
    std::string sorted = p;
    std::sort(sorted.begin(), sorted.end());
    CHECK_MESSAGE(sorted == "fst", "flow " << id << " has phases " << p);
  }
  // Flow ids are distinct per (step, layer) although buffers are reused.
  CHECK(trace_flow_id(0, 1) != trace_flow_id(1, 0));
  CHECK(trace_flow_id(0, 0) != 0);
}

TEST_CASE("trace: summarize of the written file agrees with the in-memory table") {
  for (const bool io : {true, false}) {
    CAPTURE(io);
    Tracer tr(true);
    run_pipeline(tr, io ? io_bound() : compute_bound());
    const std::string path = temp_path("summary.json");
    REQUIRE(tr.write_chrome_json(path).ok());
    const StallTable mem = tr.stall_table();
    auto file = summarize_chrome_trace(path);
    std::filesystem::remove(path);
    REQUIRE_MESSAGE(file, (file ? "" : file.error().message));
    CHECK(file->bound == mem.bound);
    CHECK(file->bound == (io ? "reader" : "compute"));
    CHECK(file->wall_s == doctest::Approx(mem.wall_s).epsilon(1e-6));
    REQUIRE(file->rows.size() == mem.rows.size());
    for (size_t i = 0; i < mem.rows.size(); ++i) {
      const StallRow &a = mem.rows[i], &b = file->rows[i];
      CAPTURE(a.actor);
      CHECK(b.actor == a.actor);
      CHECK(std::abs(b.busy_pct - a.busy_pct) < 1.0);
      CHECK(std::abs(b.starved_pct - a.starved_pct) < 1.0);
      CHECK(std::abs(b.blocked_pct - a.blocked_pct) < 1.0);
      CHECK(b.bytes == a.bytes);
      CHECK(b.spans == a.spans);
    }
  }
}

TEST_CASE("trace: tracing disabled keeps no spans but still counts the stall statistics") {
  const SimConfig c = io_bound();
  Tracer tr(false);
  CHECK_FALSE(tr.enabled());
  run_pipeline(tr, c);
  REQUIRE(tr.track_count() == 3);
  for (int i = 0; i < tr.track_count(); ++i) CHECK(tr.span_count(i) == 0);
  const StallTable t = tr.stall_table();
  CHECK(t.bound == "reader");
  CHECK(row(t, "reader").busy_pct > 80.0);
  CHECK(row(t, "reader").spans == 2u * c.items);
  CHECK(row(t, "copier").bytes == uint64_t(c.items) * c.bytes);

  // The file still names the tracks, and has no spans.
  const std::string path = temp_path("off.json");
  REQUIRE(tr.write_chrome_json(path).ok());
  const json doc = read_json(path);
  std::filesystem::remove(path);
  int threads = 0, spans = 0;
  for (const json& e : doc.at("traceEvents")) {
    threads += e.at("ph") == "M" && e.at("name") == "thread_name";
    spans += e.at("ph") == "X";
  }
  CHECK(threads == 3);
  CHECK(spans == 0);
}

TEST_CASE("trace: a full track keeps its counters exact and counts the spans it drops") {
  Tracer tr(true, /*max_spans_per_track=*/10);
  const int trk = tr.register_track("reader");
  for (int i = 0; i < 25; ++i) {
    TraceScope s(tr, trk, "read", SpanKind::Busy, i, 0, 100);
  }
  CHECK(tr.span_count(trk) == 10);
  CHECK(tr.dropped_spans() == 15);
  CHECK(tr.track_stats()[0].spans == 25);
  CHECK(tr.track_stats()[0].bytes == 2500);
}

TEST_CASE("trace: errors name the file") {
  SUBCASE("summarize of a missing file") {
    auto t = summarize_chrome_trace("/nonexistent/dir/run.trace.json");
    REQUIRE_FALSE(t);
    CHECK(t.error().message.find("/nonexistent/dir/run.trace.json") != std::string::npos);
  }
  SUBCASE("summarize of a file that is not JSON, or not a trace") {
    const std::string path = temp_path("bad.json");
    for (const char* text : {"{\"traceEvents\": [", "{\"events\": []}",
                             "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"busy\",\"ts\":\"x\"}]}"}) {
      CAPTURE(text);
      std::ofstream(path) << text;
      auto t = summarize_chrome_trace(path);
      REQUIRE_FALSE(t);
      CHECK(t.error().message.find(path) != std::string::npos);
    }
    std::filesystem::remove(path);
  }
  SUBCASE("writing into a missing directory") {
    Tracer tr(true);
    Status st = tr.write_chrome_json("/nonexistent/dir/run.trace.json");
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message.find("/nonexistent/dir/run.trace.json") != std::string::npos);
  }
}

TEST_CASE("trace: layerstream trace summarize prints the stall table") {
  Tracer tr(true);
  run_pipeline(tr, io_bound());
  const std::string path = temp_path("cli.json");
  REQUIRE(tr.write_chrome_json(path).ok());
  auto run = [](const std::string& cmd, std::string* out) {
    std::FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
    return ::pclose(p);
  };
  std::string out;
  CHECK(run(std::string(LS_BINARY) + " trace summarize " + path + " 2>&1", &out) == 0);
  std::filesystem::remove(path);
  CHECK(out.find("bound: reader") != std::string::npos);
  CHECK(out.find("copier") != std::string::npos);
  std::string err;
  CHECK(run(std::string(LS_BINARY) + " trace summarize " + path + " 2>&1", &err) != 0);
  CHECK(err.find(path) != std::string::npos);
}

TEST_CASE("trace: the cost of a TraceScope, with tracing off and on") {
  // ns per span, median / min / max over repetitions. The bounds are generous
  // (a span is two clock reads, ~35 ns each on a VM, and a few adds) so that a
  // loaded CI machine passes, yet a syscall, a lock or an allocation per span
  // would fail them. Sanitizers instrument every access: 10x the bounds there.
  constexpr int kSpans = 100000, kReps = 7;
  constexpr double kBoundOffNs = 500 * kSanitizerSlowdown, kBoundOnNs = 2000 * kSanitizerSlowdown;
  auto measure = [&](bool enabled) {
    std::vector<double> ns;
    for (int rep = 0; rep < kReps; ++rep) {
      Tracer tr(enabled);
      const int trk = tr.register_track("bench");
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kSpans; ++i) {
        TraceScope s(tr, trk, "span", SpanKind::Busy, i & 127, i, 64, i & 3);
      }
      const auto t1 = std::chrono::steady_clock::now();
      REQUIRE(tr.track_stats()[0].spans == uint64_t(kSpans));
      CHECK(tr.span_count(trk) == size_t(enabled ? kSpans : 0));
      ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kSpans);
    }
    std::sort(ns.begin(), ns.end());
    return ns;
  };
  // What two clock reads cost on this machine, for reference.
  Tracer ref(false);
  const auto c0 = std::chrono::steady_clock::now();
  uint64_t sink = 0;
  for (int i = 0; i < kSpans; ++i) sink += ref.now_ns() ^ ref.now_ns();
  const double clock_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - c0).count() /
      kSpans;
  CHECK(sink != 1);  // keeps the loop

  const std::vector<double> off = measure(false), on = measure(true);
  char line[256];
  std::snprintf(line, sizeof line,
                "TraceScope ns/span  median   min    max   (bound)\n"
                "  tracing off       %6.1f %6.1f %6.1f   (< %.0f)\n"
                "  tracing on        %6.1f %6.1f %6.1f   (< %.0f)\n"
                "  two clock reads   %6.1f",
                off[kReps / 2], off.front(), off.back(), kBoundOffNs, on[kReps / 2], on.front(),
                on.back(), kBoundOnNs, clock_ns);
  MESSAGE(line);
  // The best repetition is the cost; the others include whatever else ran.
  CHECK(off.front() < kBoundOffNs);
  CHECK(on.front() < kBoundOnNs);
}

TEST_CASE("trace: summarize --from-step keeps only the warm part of the run") {
  // compute: step 0 busy 0..1000 us (the fill), steps 1 and 2 busy 1000..1500
  // and 1500..2000, then waits to be stopped 2000..3000 (the wind-down);
  // copier: busy 0..1000 (fill), starved 1000..3000.
  const std::string path = temp_path("warm.json");
  std::ofstream(path) << R"({"traceEvents": [
{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"copier","stage":2}},
{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"compute","stage":4}},
{"ph":"X","name":"copy","cat":"busy","pid":1,"tid":1,"ts":0,"dur":1000,"args":{"kind":"busy","layer":0,"step":0,"bytes":10}},
{"ph":"X","name":"wait layer","cat":"starved","pid":1,"tid":1,"ts":1000,"dur":2000,"args":{"kind":"starved","layer":-1,"step":-1,"bytes":0}},
{"ph":"X","name":"layer","cat":"busy","pid":1,"tid":2,"ts":0,"dur":1000,"args":{"kind":"busy","layer":0,"step":0,"bytes":0}},
{"ph":"X","name":"layer","cat":"busy","pid":1,"tid":2,"ts":1000,"dur":500,"args":{"kind":"busy","layer":0,"step":1,"bytes":0}},
{"ph":"X","name":"layer","cat":"busy","pid":1,"tid":2,"ts":1500,"dur":500,"args":{"kind":"busy","layer":0,"step":2,"bytes":0}},
{"ph":"X","name":"wait batch","cat":"starved","pid":1,"tid":2,"ts":2000,"dur":1000,"args":{"kind":"starved","layer":-1,"step":3,"bytes":0}}
]})";
  auto all = summarize_chrome_trace(path);
  REQUIRE(all);
  CHECK(all->wall_s == doctest::Approx(3e-3));
  auto warm = summarize_chrome_trace(path, 1);
  REQUIRE(warm);
  CHECK(warm->wall_s == doctest::Approx(1e-3));
  for (const StallRow& r : warm->rows) {
    CAPTURE(r.actor);
    if (r.actor == "copier") {
      CHECK(r.busy_pct == doctest::Approx(0.0));  // its fill-time work is cut off
      CHECK(r.starved_pct == doctest::Approx(100.0));
    }
    if (r.actor == "compute") CHECK(r.busy_pct == doctest::Approx(100.0));
  }
  CHECK(warm->bound == "compute");
  auto beyond = summarize_chrome_trace(path, 3);
  REQUIRE_FALSE(beyond);
  CHECK(beyond.error().message.find("step 3") != std::string::npos);
  std::filesystem::remove(path);
}
