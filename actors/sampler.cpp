#include "actors/sampler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ls {

SamplerActor::SamplerActor(Mailbox<StepOutput>& in, Mailbox<StepInput>& to_compute,
                           StepWidths& widths, RunControl& rc, Tracer& tracer, int32_t n_slots,
                           int32_t chunk, uint32_t n_ctx, uint32_t kv_blocks, uint64_t kv_seed)
    : in_(in),
      to_compute_(to_compute),
      widths_(widths),
      rc_(rc),
      tracer_(tracer),
      n_slots_(std::max(1, n_slots)),
      chunk_(std::max(1, chunk)),
      paged_(n_ctx > 0),
      kv_(paged_ ? KvBlockTable(static_cast<uint32_t>(n_slots_), n_ctx, kv_blocks, kv_seed)
                 : KvBlockTable()),
      kept_(static_cast<size_t>(n_slots_), 0),
      kept_tokens_(static_cast<size_t>(n_slots_)),
      kept_at_(static_cast<size_t>(n_slots_), 0),
      kept_spare_(static_cast<size_t>(n_slots_), 0) {}

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

KvUsage SamplerActor::kv_usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t cached = 0;
  for (int32_t s = 0; s < n_slots_; ++s)
    if (kept_spare_[static_cast<size_t>(s)] && slot_free(s))
      cached += kv_.held(static_cast<uint32_t>(s));
  return {kv_.n_used() - cached, kv_.n_blocks(), cached};
}

std::string SamplerActor::kv_full(uint32_t pos) const {
  char msg[240];
  std::snprintf(msg, sizeof msg,
                "kv cache full: %u blocks of %u in use (%u positions each); no block for "
                "position %u (a larger --kv-blocks, or fewer sequences at once)",
                kv_.n_used(), kv_.n_blocks(), kKvBlockLen, pos);
  return msg;
}

bool SamplerActor::slot_free(int32_t s) const {
  for (const Seq& r : running_)
    if (r.req.slot == s) return false;
  return true;
}

void SamplerActor::finish(size_t i, bool cancelled, std::string error) {
  Seq& s = running_[i];
  if (paged_) {
    // Its blocks go back (no kernel reads them now: the step that used them
    // has ended), but those of its positions when the slot keeps them.
    const uint32_t slot = static_cast<uint32_t>(s.req.slot);
    kept_[slot] = s.req.keep_cache ? s.pos : 0;
    kv_.trim(slot, kept_[slot]);
    std::vector<int32_t>& kt = kept_tokens_[slot];
    kt.clear();
    if (kept_[slot] > 0 && s.tokens.size() >= kept_[slot])
      kt.assign(s.tokens.begin(), s.tokens.begin() + kept_[slot]);
    kept_at_[slot] = ++kept_clock_;
    kept_spare_[slot] = s.req.reuse_prefix ? 1 : 0;
  }
  SeqEnd e{s.pos, cancelled, std::move(error)};
  e.reused = s.reused;
  s.done.set_value(std::move(e));
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
}

int32_t SamplerActor::best_prefix_slot(const std::vector<int32_t>& prompt, uint32_t* reuse) const {
  int32_t best = -1;
  uint32_t most = 0;
  for (int32_t s = 0; s < n_slots_; ++s) {
    const std::vector<int32_t>& kt = kept_tokens_[static_cast<size_t>(s)];
    if (kt.empty() || !slot_free(s)) continue;
    // The prompt's last token is computed whatever is kept: its row is the
    // first to sample from.
    const size_t n =
        std::min({kt.size(), size_t{kept_[static_cast<size_t>(s)]}, prompt.size() - 1});
    uint32_t l = 0;
    while (l < n && kt[l] == prompt[l]) ++l;
    if (l > most) best = s, most = l;
  }
  *reuse = most;
  return best;
}

bool SamplerActor::reserve_evicting(uint32_t us, uint32_t want) {
  while (!kv_.reserve(us, want)) {
    int32_t victim = -1;
    for (int32_t s = 0; s < n_slots_; ++s) {
      const size_t i = static_cast<size_t>(s);
      if (static_cast<uint32_t>(s) == us || kept_[i] == 0 || !kept_spare_[i] || !slot_free(s))
        continue;
      if (victim < 0 || kept_at_[i] < kept_at_[static_cast<size_t>(victim)]) victim = s;
    }
    if (victim < 0) return false;
    const size_t v = static_cast<size_t>(victim);
    kept_[v] = 0;
    kept_tokens_[v].clear();
    kv_.trim(static_cast<uint32_t>(victim), 0);
  }
  return true;
}

// Queued sequences take free slots in the order they came; the first that
// cannot (its slot is busy, none is free, or the pool lacks its blocks)
// holds the rest back.
void SamplerActor::admit() {
  while (!queue_.empty()) {
    Seq& q = queue_.front();
    auto refuse = [&](std::string why) {
      q.done.set_value(SeqEnd{q.req.pos0, false, std::move(why)});
      queue_.pop_front();
    };
    if (q.cancelled) {
      q.done.set_value(SeqEnd{q.req.pos0, true, {}});
      queue_.pop_front();
      continue;
    }
    int32_t slot = -1;
    uint32_t reuse = 0;
    if (q.req.slot >= 0) {
      if (q.req.slot < n_slots_ && slot_free(q.req.slot)) slot = q.req.slot;
    } else if (paged_ && q.req.reuse_prefix && q.req.pos0 == 0 && !q.req.feed &&
               (slot = best_prefix_slot(q.req.prompt, &reuse)) >= 0) {
      // The slot whose kept cache starts as the prompt does.
    } else {
      // A slot that keeps no chat's cache first (paged: a kept cache is
      // given up only when no other slot is free).
      for (int32_t s = 0; s < n_slots_ && slot < 0; ++s)
        if (slot_free(s) && kept_[static_cast<size_t>(s)] == 0) slot = s;
      for (int32_t s = 0; s < n_slots_ && slot < 0; ++s)
        if (slot_free(s)) slot = s;
    }
    if (slot < 0) break;
    if (paged_) {
      const uint32_t us = static_cast<uint32_t>(slot), pos0 = q.req.pos0 + reuse;
      if (pos0 > kept_[us]) {
        char msg[200];
        std::snprintf(msg, sizeof msg,
                      "slot %d keeps the keys and values of %u positions; the request continues "
                      "at position %u",
                      slot, kept_[us], pos0);
        refuse(msg);
        continue;
      }
      // The slot keeps positions [0, pos0) for this request; the prompt and
      // the first token's position need blocks now.
      kept_[us] = pos0;
      kv_.trim(us, pos0);
      // Its known tokens with it (the request may yet wait for blocks, and
      // then take another slot).
      std::vector<int32_t>& kt = kept_tokens_[us];
      if (kt.size() > pos0) kt.resize(pos0);
      const uint32_t want = static_cast<uint32_t>(
          std::min<uint64_t>(uint64_t{pos0} + q.req.prompt.size() - reuse + 1, q.req.max_pos));
      if (!reserve_evicting(us, want)) {
        if (!running_.empty()) break;  // blocks come back as they end
        char msg[300];
        std::snprintf(msg, sizeof msg,
                      "kv cache full: the prompt needs %u more blocks of %u positions, %u of "
                      "%u are free and no sequence runs to free more (the rest are kept caches)",
                      kv_.lacking(us, want), kKvBlockLen, kv_.n_free(), kv_.n_blocks());
        refuse(msg);
        continue;
      }
    }
    q.req.slot = slot;
    q.pos = q.req.pos0 + reuse;
    q.fed = reuse;  // the kept positions [0, reuse) hold the prompt's first tokens
    q.reused = reuse;
    if (paged_) {
      // What the slot's positions hold: the kept tokens up to pos0, when known.
      const std::vector<int32_t>& kt = kept_tokens_[static_cast<size_t>(slot)];
      if (kt.size() >= q.pos) q.tokens.assign(kt.begin(), kt.begin() + q.pos);
      kept_tokens_[static_cast<size_t>(slot)].clear();
    }
    if (q.req.on_admit) q.req.on_admit(reuse);
    running_.push_back(std::move(q));
    queue_.pop_front();
  }
}

// The token s is about to write at s.pos, into what its slot holds (a
// rewound feed overwrites from there; an unknown start stays unknown).
void SamplerActor::note_token(Seq& s, int32_t t) const {
  if (!paged_ || s.tokens.size() < s.pos) return;
  s.tokens.resize(s.pos);
  s.tokens.push_back(t);
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
  // A decoding sequence whose next position enters a new block takes one
  // now, before any queued one joins (running sequences first), giving up a
  // prompt cache for it if it must; when the pool has none, that sequence
  // ends (in the order they joined, so the blocks of one that ends can
  // serve those after it).
  if (paged_)
    for (size_t i = 0; i < running_.size();) {
      Seq& s = running_[i];
      if (!s.next.empty() && !reserve_evicting(static_cast<uint32_t>(s.req.slot),
                                               s.pos + static_cast<uint32_t>(s.next.size()))) {
        finish(i, false, kv_full(s.pos));
        continue;
      }
      ++i;
    }
  admit();
  order_.clear();
  for (size_t i = 0; i < running_.size(); ++i) {
    Seq& s = running_[i];
    if (s.next.empty()) continue;
    for (int32_t t : s.next) {
      note_token(s, t);
      b.add(t, static_cast<int32_t>(s.pos++), s.req.slot, true);
    }
    s.rows = static_cast<int32_t>(s.next.size());
    s.next.clear();
    order_.push_back(i);
  }
  // Prompt tokens fill what the decoding rows leave of chunk_ (a step past it
  // would grow the device's activations beyond the plan: step_tokens_max).
  size_t budget = b.size() < static_cast<size_t>(chunk_) ? chunk_ - b.size() : 0;
  // A step whose width was announced (Pipeline::announce_width) keeps to it:
  // the planner may have routed its layers by it already.
  if (const int64_t step = widths_.next_step.load(); widths_.bound_step.load() == step) {
    const size_t bound = static_cast<size_t>(widths_.bound[step % StepWidths::kRing].load());
    budget = std::min(budget, bound > b.size() ? bound - b.size() : 0);
  }
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Seq& s = running_[i];
    const size_t n_prompt = s.req.prompt.size();
    if (s.fed >= n_prompt) continue;
    const size_t n = std::min(n_prompt - s.fed, budget);
    s.rows = 0;
    for (size_t k = s.fed; k < s.fed + n; ++k) {
      const bool want = k + 1 == n_prompt || k >= s.req.logits_from;
      note_token(s, s.req.prompt[k]);
      b.add(s.req.prompt[k], static_cast<int32_t>(s.pos), s.req.slot, want);
      ++s.pos;
      s.rows += want ? 1 : 0;
    }
    s.fed += n;
    budget -= n;
    order_.push_back(i);
  }
  if (paged_ && b.size() > 0) b.kv_table = kv_.table();
  // A step whose every row is one greedy sequence's only row ends with the
  // argmaxes alone (Backend::finish_argmax): no logits rows cross.
  // LS_ARGMAX_ONLY=0 sends the rows anyway (A/B runs).
  static const bool allowed = [] {
    const char* e = std::getenv("LS_ARGMAX_ONLY");
    return !(e && std::string(e) == "0");
  }();
  b.argmax_only = allowed && b.n_logits() > 0;
  for (size_t i : order_) {
    const Seq& s = running_[i];
    if (s.rows > 0 && (!s.req.on_argmax || s.req.feed || s.rows != 1)) b.argmax_only = false;
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
      // The step takes about as long as the last one (Mailbox::pop_expecting).
      const auto t0 = std::chrono::steady_clock::now();
      out = in_.pop_expecting(rc_, last_step_);
      last_step_ = std::chrono::steady_clock::now() - t0;
    }
    if (!out) return;
    std::lock_guard<std::mutex> lock(mu_);
    TraceScope span(tracer_, track, "sample", SpanKind::Busy, -1, out->step);
    rc_.chaos();
    const float* row = out->logits;
    const int32_t* id = out->ids;  // an argmax_only step's tokens, one a sequence
    std::vector<size_t> ended;
    for (size_t i : order_) {
      Seq& s = running_[i];
      if (s.rows == 0) continue;
      const int32_t rows = s.rows;
      s.rows = 0;
      const bool mid_prompt = s.fed < s.req.prompt.size();  // a chunk that is not the last
      if (s.req.feed) {
        std::optional<SeqFeed> f = s.req.feed(out->step, row, rows, s.pos);
        row += static_cast<int64_t>(rows) * out->n_vocab;
        if (mid_prompt) continue;
        // Rewound to f->pos (never before the request's start nor past the
        // next position); what does not fit the context is not fed.
        if (f) {
          s.pos = std::clamp(f->pos, s.req.pos0, s.pos);
          const uint32_t room = s.req.max_pos > s.pos ? s.req.max_pos - s.pos : 0;
          if (f->tokens.size() > room) f->tokens.resize(room);
        }
        if (!f || f->tokens.empty())
          ended.push_back(i);
        else
          s.next = std::move(f->tokens);
        continue;
      }
      std::optional<int32_t> tok;
      if (id) {
        tok = s.req.on_argmax(out->step, *id);
        id += rows;
      } else {
        tok = s.req.cb ? s.req.cb(out->step, row, rows) : std::nullopt;
        row += static_cast<int64_t>(rows) * out->n_vocab;
      }
      if (mid_prompt) continue;
      // The sequence ends when its callback says so or its context is full.
      if (!tok || s.pos >= s.req.max_pos)
        ended.push_back(i);
      else
        s.next.assign(1, *tok);
    }
    std::sort(ended.begin(), ended.end());
    for (size_t k = ended.size(); k-- > 0;) finish(ended[k], false);
  }
}

}  // namespace ls
