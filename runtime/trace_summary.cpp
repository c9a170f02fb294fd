// summarize_chrome_trace: Chrome trace JSON -> per-track totals -> stall table.
// Accepts both the object form {"traceEvents": [...]} and the bare array form.
// Complete events ("ph":"X") whose kind is busy / starved / blocked count;
// everything else (flows, metadata, other tools' events) is skipped.
// defines: chrome_trace_track_stats, summarize_chrome_trace
#include "runtime/trace_summary.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <utility>

namespace ls {
namespace {

using nlohmann::json;

// ts / dur are microseconds (possibly fractional) -> ns.
uint64_t us_to_ns(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() * 1000;
  if (v.is_number()) {
    const double d = v.get<double>();
    return d > 0 ? uint64_t(std::llround(d * 1000.0)) : 0;
  }
  return 0;
}

bool kind_of(const json& ev, SpanKind* kind) {
  std::string k;
  if (auto c = ev.find("cat"); c != ev.end() && c->is_string()) k = c->get<std::string>();
  if (k != "busy" && k != "starved" && k != "blocked") {
    auto a = ev.find("args");
    if (a == ev.end() || !a->is_object()) return false;
    auto ka = a->find("kind");
    if (ka == a->end() || !ka->is_string()) return false;
    k = ka->get<std::string>();
  }
  if (k == "busy")
    *kind = SpanKind::Busy;
  else if (k == "starved")
    *kind = SpanKind::Starved;
  else if (k == "blocked")
    *kind = SpanKind::Blocked;
  else
    return false;
  return true;
}

int64_t int_field(const json& ev, const char* key, int64_t dflt) {
  auto it = ev.find(key);
  if (it == ev.end()) return dflt;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {  // some producers write pid/tid as strings
    const std::string& s = it->get_ref<const std::string&>();
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end && *end == '\0' && !s.empty()) return v;
  }
  return dflt;
}

}  // namespace

Expected<std::vector<TrackStats>> chrome_trace_track_stats(const std::string& path,
                                                           int64_t from_step) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error("trace summarize: cannot open %s: %s", path.c_str(), std::strerror(errno));
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    return make_error("trace summarize: %s is not JSON: %s", path.c_str(), e.what());
  }

  const json* events = nullptr;
  if (doc.is_array())
    events = &doc;
  else if (doc.is_object()) {
    auto it = doc.find("traceEvents");
    if (it != doc.end() && it->is_array()) events = &*it;
  }
  if (!events)
    return make_error("trace summarize: %s has no \"traceEvents\" array (not a Chrome trace)",
                      path.c_str());

  // The warm window: from the first busy span of step from_step on the
  // compute track to the end of its last busy span (the last step's end:
  // what follows is the run winding down, each actor waiting to be stopped).
  uint64_t warm_ns = 0, cool_ns = UINT64_MAX;
  if (from_step > 0) {
    std::set<std::pair<int64_t, int64_t>> compute;  // (pid, tid) of the "compute" track
    for (const json& ev : *events)
      if (ev.is_object() && ev.value("ph", "") == "M" && ev.value("name", "") == "thread_name" &&
          ev.contains("args") && ev["args"].is_object() &&
          ev["args"].value("name", "") == "compute")
        compute.insert({int_field(ev, "pid", 0), int_field(ev, "tid", 0)});
    uint64_t best = UINT64_MAX, last = UINT64_MAX;
    for (const json& ev : *events) {
      if (!ev.is_object() || ev.value("ph", "") != "X" || !ev.contains("ts") ||
          !ev["ts"].is_number())
        continue;
      if (!compute.count({int_field(ev, "pid", 0), int_field(ev, "tid", 0)})) continue;
      auto args = ev.find("args");
      if (args == ev.end() || !args->is_object() || args->value("kind", "") != "busy") continue;
      auto st = args->find("step");
      if (st == args->end() || !st->is_number_integer() || st->get<int64_t>() < from_step) continue;
      best = std::min(best, us_to_ns(ev["ts"]));
      const uint64_t end = us_to_ns(ev["ts"]) + (ev.contains("dur") ? us_to_ns(ev["dur"]) : 0);
      last = last == UINT64_MAX ? end : std::max(last, end);
    }
    if (best == UINT64_MAX)
      return make_error(
          "trace summarize: %s: no busy span of step %lld or later on the compute "
          "track (--from-step beyond the run?)",
          path.c_str(), static_cast<long long>(from_step));
    warm_ns = best;
    cool_ns = last;
  }

  std::vector<TrackStats> tracks;
  std::map<std::pair<int64_t, int64_t>, size_t> by_thread;  // (pid, tid) -> tracks index
  auto track_of = [&](int64_t pid, int64_t tid) -> TrackStats& {
    auto [it, fresh] = by_thread.try_emplace({pid, tid}, tracks.size());
    if (fresh) {
      TrackStats s;
      s.name = "tid " + std::to_string(tid);
      tracks.push_back(std::move(s));
    }
    return tracks[it->second];
  };

  try {
    size_t index = 0;
    for (const json& ev : *events) {
      ++index;
      if (!ev.is_object()) continue;
      auto ph = ev.find("ph");
      if (ph == ev.end() || !ph->is_string()) continue;
      const std::string& phase = ph->get_ref<const std::string&>();
      const int64_t pid = int_field(ev, "pid", 0), tid = int_field(ev, "tid", 0);

      if (phase == "M") {
        auto nm = ev.find("name");
        auto args = ev.find("args");
        if (nm == ev.end() || *nm != "thread_name" || args == ev.end() || !args->is_object())
          continue;
        TrackStats& t = track_of(pid, tid);
        if (auto n = args->find("name"); n != args->end() && n->is_string())
          t.name = n->get<std::string>();
        if (auto s = args->find("stage"); s != args->end() && s->is_number_integer())
          t.stage = s->get<int>();
        else
          t.stage = pipeline_stage(t.name);
        continue;
      }
      if (phase != "X") continue;
      SpanKind kind;
      if (!kind_of(ev, &kind)) continue;
      auto ts = ev.find("ts");
      if (ts == ev.end() || !ts->is_number())
        return make_error("trace summarize: %s: event %zu (\"ph\":\"X\") has no numeric \"ts\"",
                          path.c_str(), index);
      uint64_t t0 = us_to_ns(*ts);
      uint64_t d = ev.contains("dur") ? us_to_ns(ev["dur"]) : 0;
      if (t0 + d <= warm_ns && warm_ns > 0) continue;  // before the warm window
      if (t0 >= cool_ns) continue;                     // after it
      if (t0 < warm_ns) {                              // straddles its start: keep the warm part
        d = t0 + d - warm_ns;
        t0 = warm_ns;
      }
      if (t0 + d > cool_ns) d = cool_ns - t0;  // straddles its end
      TrackStats& t = track_of(pid, tid);
      switch (kind) {
        case SpanKind::Busy: {
          t.busy_ns += d;
          auto args = ev.find("args");
          if (args != ev.end() && args->is_object())
            if (auto b = args->find("bytes"); b != args->end() && b->is_number_unsigned())
              t.bytes += b->get<uint64_t>();
          break;
        }
        case SpanKind::Starved:
          t.starved_ns += d;
          break;
        case SpanKind::Blocked:
          t.blocked_ns += d;
          break;
      }
      ++t.spans;
      t.first_ns = std::min(t.first_ns, t0);
      t.last_ns = std::max(t.last_ns, t0 + d);
    }
  } catch (const json::exception& e) {  // a field of an unexpected type
    return make_error("trace summarize: %s: %s", path.c_str(), e.what());
  }
  return tracks;
}

Expected<StallTable> summarize_chrome_trace(const std::string& path, int64_t from_step) {
  auto tracks = chrome_trace_track_stats(path, from_step);
  if (!tracks) return tracks.error();
  return make_stall_table(*tracks);
}

}  // namespace ls
