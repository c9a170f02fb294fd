#include "actors/reader.h"

#include <deque>
#include <optional>

namespace ls {
namespace {

struct InFlight {
  LayerJob job;
  size_t pending;  // ranges not yet read (0 for a RAM-tier job passing through)
};

// Tags carry the staging buffer and the range: (buffer << 32) | range.
uint64_t tag_of(int32_t buf, size_t range) { return (uint64_t(uint32_t(buf)) << 32) | range; }
int32_t buf_of(uint64_t tag) { return static_cast<int32_t>(tag >> 32); }

}  // namespace

Reader::Reader(const LayerMap& map, const LayerMemory& mem, BlockSource* src, CreditPool& staging,
               Mailbox<LayerJob>& in, Mailbox<LayerJob>& to_copier, RunControl& rc, Tracer& tracer)
    : map_(map),
      mem_(mem),
      src_(src),
      staging_(staging),
      in_(in),
      to_copier_(to_copier),
      rc_(rc),
      tracer_(tracer) {}

void Reader::run() {
  const int track = tracer_.register_track("reader");
  if (src_) {
    std::vector<std::span<uint8_t>> bufs;
    for (int32_t i = 0; i < mem_.n_staging(); ++i)
      bufs.emplace_back(mem_.staging(i), mem_.staging_bytes());
    if (Status st = src_->register_buffers(bufs); !st.ok()) {
      rc_.fail("reader", -1, -1, st.error().message);
      return;
    }
  }
  std::deque<InFlight> flight;     // in planned order
  std::optional<LayerJob> waiting;  // taken, but no staging buffer was free yet
  std::vector<ReadCompletion> done;
  std::vector<ReadRequest> reqs;
  size_t reads = 0;  // storage layers in flight
  while (!rc_.stopped()) {
    // Take the next job: wait for one only when nothing is in flight.
    if (!waiting) {
      if (flight.empty()) {
        TraceScope wait(tracer_, track, "wait job", SpanKind::Starved, -1, -1);
        waiting = in_.pop(rc_);
        if (!waiting) return;
      } else {
        waiting = in_.try_pop();
      }
    }
    if (waiting && waiting->tier == Tier::Ram) {
      flight.push_back({*waiting, 0});  // keeps its place in the order; nothing to read
      waiting.reset();
    } else if (waiting) {
      // A staging buffer: wait for one only when nothing is in flight, since
      // the layers in flight are what will free one.
      std::optional<int32_t> buf;
      if (flight.empty()) {
        TraceScope wait(tracer_, track, "wait staging", SpanKind::Blocked, waiting->layer,
                        waiting->step);
        buf = staging_.acquire(rc_);
        if (!buf) return;
      } else {
        buf = staging_.try_acquire();
      }
      if (buf) {
        LayerJob job = *waiting;
        waiting.reset();
        rc_.chaos();
        job.staging = *buf;
        const LayerExtent& e = map_.layers[job.layer];
        const LayerLayout& lay = mem_.layout(job.layer);
        reqs.clear();
        for (size_t k = 0; k < e.ranges.size(); ++k)
          reqs.push_back({e.ranges[k].offset, e.ranges[k].bytes, mem_.staging(*buf) + lay.staged[k],
                          tag_of(*buf, k)});
        if (Status st = src_->submit(reqs); !st.ok()) {
          rc_.fail("reader", job.layer, job.step, st.error().message);
          return;
        }
        flight.push_back({job, e.ranges.size()});
        ++reads;
        continue;  // queue more before waiting
      }
    }
    // Reap completions. Time spent waiting on the device is the reader's work
    // (Busy); the span carries the bytes of the layer it finished.
    // A span carries one flow id, so each storage layer forwarded gets a span
    // of its own (the wait is in the first; the others are the forwarding).
    std::optional<TraceScope> span;
    LayerJob span_job = flight.front().job;
    span.emplace(tracer_, track, "read", SpanKind::Busy, span_job.layer, span_job.step);
    if (reads > 0) {
      done.clear();
      if (Status st = src_->wait(1, static_cast<int>(kPollInterval.count()), done); !st.ok()) {
        rc_.fail("reader", flight.front().job.layer, flight.front().job.step, st.error().message);
        return;
      }
      for (const ReadCompletion& c : done) {
        for (InFlight& f : flight) {
          if (f.job.tier != Tier::Storage || f.job.staging != buf_of(c.tag)) continue;
          if (!c.status.ok()) {
            rc_.fail("reader", f.job.layer, f.job.step, c.status.error().message);
            return;
          }
          --f.pending;
          break;
        }
      }
    }
    // Forward finished layers in planned order.
    bool carried = false;  // the span already carries a layer
    while (!flight.empty() && flight.front().pending == 0) {
      const InFlight f = flight.front();
      flight.pop_front();
      if (f.job.tier == Tier::Storage) {
        --reads;
        if (carried || f.job.layer != span_job.layer || f.job.step != span_job.step) {
          span_job = f.job;
          span.emplace(tracer_, track, "read", SpanKind::Busy, f.job.layer, f.job.step);
        }
        span->set_flow(trace_flow_id(f.job.step, f.job.layer), kFlowStep);
        span->set_buffer(f.job.staging);
        span->set_bytes(map_.layers[f.job.layer].range_bytes);
        carried = true;
      }
      rc_.pulse();
      if (!to_copier_.push(f.job, rc_)) return;
    }
  }
}

}  // namespace ls
