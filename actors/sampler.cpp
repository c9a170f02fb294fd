#include "actors/sampler.h"

namespace ls {

SamplerActor::SamplerActor(Mailbox<StepOutput>& in, Mailbox<StepInput>& to_compute,
                           StepWidths& widths, RunControl& rc, Tracer& tracer)
    : in_(in), to_compute_(to_compute), widths_(widths), rc_(rc), tracer_(tracer) {}

void SamplerActor::begin_request(StepCallback cb, int32_t seq, uint32_t pos, uint32_t n_ctx,
                                 std::promise<uint32_t> done) {
  std::lock_guard<std::mutex> lock(mu_);
  cb_ = std::move(cb);
  seq_ = seq;
  pos_ = pos;
  n_ctx_ = n_ctx;
  done_ = std::move(done);
}

void SamplerActor::run() {
  const int track = tracer_.register_track("sampler");
  while (!rc_.stopped()) {
    std::optional<StepOutput> out;
    {
      TraceScope wait(tracer_, track, "wait logits", SpanKind::Starved, -1, -1);
      out = in_.pop(rc_);
    }
    if (!out) return;
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<int32_t> tok;
    {
      TraceScope span(tracer_, track, "sample", SpanKind::Busy, -1, out->step);
      rc_.chaos();
      if (cb_) tok = cb_(out->step, out->logits, out->n_rows);
    }
    // The request ends when the callback says so or the context is full.
    if (!tok || pos_ >= n_ctx_) {
      if (done_) {
        done_->set_value(pos_);
        done_.reset();
      }
      cb_ = nullptr;
      continue;
    }
    StepInput next;
    next.step = out->step + 1;
    next.batch.add(*tok, static_cast<int32_t>(pos_), seq_, true);
    ++pos_;
    widths_.fed_step.store(next.step);  // one token: narrow
    if (!to_compute_.push(std::move(next), rc_)) return;
  }
}

}  // namespace ls
