#include "actors/sampler.h"

#include <algorithm>

namespace ls {

SamplerActor::SamplerActor(Mailbox<StepOutput>& in, Mailbox<StepInput>& to_compute,
                           StepWidths& widths, RunControl& rc, Tracer& tracer, int32_t n_slots,
                           int32_t chunk)
    : in_(in),
      to_compute_(to_compute),
      widths_(widths),
      rc_(rc),
      tracer_(tracer),
      n_slots_(std::max(1, n_slots)),
      chunk_(std::max(1, chunk)) {}

uint64_t SamplerActor::submit(SeqRequest r, std::promise<SeqEnd> done) {
  std::lock_guard<std::mutex> lock(mu_);
  Seq s;
  s.id = next_id_++;
  s.req = std::move(r);
  s.done = std::move(done);
  queue_.push_back(std::move(s));
  cv_.notify_one();
  return queue_.back().id;
}

void SamplerActor::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  cancels_.push_back(id);
}

int32_t SamplerActor::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int32_t>(queue_.size() + running_.size());
}

bool SamplerActor::slot_free(int32_t s) const {
  for (const Seq& r : running_)
    if (r.req.slot == s) return false;
  return true;
}

void SamplerActor::finish(size_t i, bool cancelled) {
  Seq& s = running_[i];
  s.done.set_value(SeqEnd{s.pos, cancelled});
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
}

// Decoding sequences first (one entry each), then prompts in the order their
// sequences joined: each sequence's entries are contiguous, so its logits
// rows are too. Rows go back in batch order (order_).
void SamplerActor::form_batch(Batch& b) {
  {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    for (uint64_t id : cancels_) {
      for (Seq& s : queue_)
        if (s.id == id) s.cancelled = true;
      for (Seq& s : running_)
        if (s.id == id) s.cancelled = true;
    }
    cancels_.clear();
  }
  for (size_t i = running_.size(); i-- > 0;)
    if (running_[i].cancelled) finish(i, true);
  // Queued sequences take free slots in the order they came; the first that
  // cannot (its slot is busy, or none is free) holds the rest back.
  while (!queue_.empty()) {
    Seq& q = queue_.front();
    if (q.cancelled) {
      q.done.set_value(SeqEnd{q.req.pos0, true});
      queue_.pop_front();
      continue;
    }
    int32_t slot = -1;
    if (q.req.slot >= 0) {
      if (q.req.slot < n_slots_ && slot_free(q.req.slot)) slot = q.req.slot;
    } else {
      for (int32_t s = 0; s < n_slots_ && slot < 0; ++s)
        if (slot_free(s)) slot = s;
    }
    if (slot < 0) break;
    q.req.slot = slot;
    q.pos = q.req.pos0;
    running_.push_back(std::move(q));
    queue_.pop_front();
  }
  order_.clear();
  for (size_t i = 0; i < running_.size(); ++i) {
    Seq& s = running_[i];
    if (s.token < 0) continue;
    b.add(s.token, static_cast<int32_t>(s.pos), s.req.slot, true);
    ++s.pos;
    s.token = -1;
    s.rows = 1;
    order_.push_back(i);
  }
  // Alone, a prompt goes whole; beside decoding sequences, chunk_ tokens a step.
  size_t budget = b.size() > 0 ? static_cast<size_t>(chunk_) : SIZE_MAX;
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Seq& s = running_[i];
    const size_t n_prompt = s.req.prompt.size();
    if (s.fed >= n_prompt) continue;
    const size_t n = std::min(n_prompt - s.fed, budget);
    s.rows = 0;
    for (size_t k = s.fed; k < s.fed + n; ++k) {
      const bool want = k + 1 == n_prompt || k >= s.req.logits_from;
      b.add(s.req.prompt[k], static_cast<int32_t>(s.pos), s.req.slot, want);
      ++s.pos;
      s.rows += want ? 1 : 0;
    }
    s.fed += n;
    budget -= n;
    order_.push_back(i);
  }
}

void SamplerActor::run() {
  const int track = tracer_.register_track("sampler");
  while (!rc_.stopped()) {
    StepInput next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      form_batch(next.batch);
      if (next.batch.size() == 0) {
        TraceScope idle(tracer_, track, "wait request", SpanKind::Starved, -1, -1);
        cv_.wait_for(lock, kPollInterval, [&] { return !queue_.empty(); });
        continue;
      }
    }
    // Compute has published the step it runs next (StepWidths).
    next.step = widths_.next_step.load();
    widths_.width[next.step % StepWidths::kRing].store(static_cast<int64_t>(next.batch.size()));
    widths_.fed_step.store(next.step);
    const int64_t step = next.step;
    if (!to_compute_.push(std::move(next), rc_)) return;
    std::optional<StepOutput> out;
    {
      TraceScope wait(tracer_, track, "wait logits", SpanKind::Starved, -1, step);
      out = in_.pop(rc_);
    }
    if (!out) return;
    std::lock_guard<std::mutex> lock(mu_);
    TraceScope span(tracer_, track, "sample", SpanKind::Busy, -1, out->step);
    rc_.chaos();
    const float* row = out->logits;
    std::vector<size_t> ended;
    for (size_t i : order_) {
      Seq& s = running_[i];
      if (s.rows == 0) continue;
      const std::optional<int32_t> tok = s.req.cb ? s.req.cb(out->step, row, s.rows) : std::nullopt;
      row += static_cast<int64_t>(s.rows) * out->n_vocab;
      s.rows = 0;
      if (s.fed < s.req.prompt.size()) continue;  // a prompt chunk that is not the last
      // The sequence ends when its callback says so or its context is full.
      if (!tok || s.pos >= s.req.max_pos)
        ended.push_back(i);
      else
        s.token = *tok;
    }
    std::sort(ended.begin(), ended.end());
    for (size_t k = ended.size(); k-- > 0;) finish(ended[k], false);
  }
}

}  // namespace ls
