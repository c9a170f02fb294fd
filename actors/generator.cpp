#include "actors/generator.h"

#include <algorithm>
#include <chrono>
#include <future>

#include "model/stop_strings.h"
#include "model/tokenizer.h"

namespace ls {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Cancelled:
      return "cancelled";
    case FinishReason::Error:
      return "error";
  }
  return "error";
}

// One request: its sampler and text state live on the sampler actor (its
// step callback); `ended` makes on_end happen once whoever sees the end first.
struct Generator::Req {
  uint64_t id = 0;
  std::atomic<uint64_t> seq{0};  // the pipeline's id, once submitted
  std::atomic<bool> cancel_asked{false};
  size_t prompt_tokens = 0;
  std::atomic<uint32_t> cached{0};  // prompt tokens taken from a cache (set as it joins)
  int32_t max_tokens = -1;
  bool ignore_eos = false;
  int32_t logprobs = -1;  // GenParams::logprobs
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<Detokenizer> detok;
  std::unique_ptr<StopScanner> stops;
  GenSink sink;
  size_t completion = 0;  // sampled tokens (the sampler actor's)
  std::future<SeqEnd> done;
  std::atomic<bool> ended{false};
  std::atomic<bool> first{false};  // a token was sampled
  std::atomic<int> reason{-1};     // the FinishReason on_end was given

  // A cancel before the pipeline's id is known is applied by start().
  void cancel(Pipeline& p) {
    cancel_asked.store(true);
    if (const uint64_t s = seq.load()) p.cancel(s);
  }

  // Calls on_end unless it was called; returns whether this call did.
  bool end(GenEnd e) {
    if (ended.exchange(true)) return false;
    reason.store(static_cast<int>(e.reason));
    e.prompt_tokens = prompt_tokens;
    e.completion_tokens = completion;
    e.cached_tokens = cached.load();
    if (sink.on_end) sink.on_end(e);
    return true;
  }
  // The text still held back: the detokenizer's partial character, then the
  // stop scanner's tail.
  std::string tail() {
    bool stopped = false;
    std::string t = stops->push(detok->flush(), &stopped);
    return stopped ? t : t + stops->flush();
  }
};

Generator::Generator(Engine& e, Options o) : engine_(e), opt_(o) {
  reaper_ = std::thread([this] { reap(); });
}

Generator::~Generator() {
  cancel_all();
  (void)wait_idle(2000);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  reaper_.join();
}

void Generator::count_token() {
  completion_tokens_.fetch_add(1, std::memory_order_relaxed);
  const int64_t sec = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  const int i = static_cast<int>(sec % kRateSeconds);
  if (rate_sec_[i].load(std::memory_order_relaxed) != sec) {
    rate_count_[i].store(0, std::memory_order_relaxed);
    rate_sec_[i].store(sec, std::memory_order_relaxed);
  }
  rate_count_[i].fetch_add(1, std::memory_order_relaxed);
}

GenStart Generator::start(std::vector<int32_t> prompt, const GenParams& p, GenSink sink) {
  GenStart r;
  const Model& m = engine_.model();
  const uint32_t n_ctx = engine_.pipeline().n_ctx();
  const int32_t n_vocab = static_cast<int32_t>(m.config().n_vocab);
  auto refuse = [&r](GenRefusal why, std::string msg) {
    r.refusal = why;
    r.message = std::move(msg);
    return r;
  };
  if (prompt.empty()) return refuse(GenRefusal::Invalid, "the prompt is empty (no tokens)");
  for (int32_t t : prompt)
    if (t < 0 || t >= n_vocab)
      return refuse(GenRefusal::Invalid, "token id " + std::to_string(t) +
                                             " is outside the vocabulary (0.." +
                                             std::to_string(n_vocab - 1) + ")");
  if (p.max_tokens == 0 || p.max_tokens < -1)
    return refuse(GenRefusal::Invalid,
                  "max_tokens must be at least 1 (got " + std::to_string(p.max_tokens) + ")");
  // The first sampled token needs no position of its own, so a prompt may
  // fill the context and still get one; each later one takes a position.
  if (prompt.size() > n_ctx)
    return refuse(GenRefusal::TooLong, "this model's context is " + std::to_string(n_ctx) +
                                           " tokens, but the prompt is " +
                                           std::to_string(prompt.size()) + " tokens");
  if (p.max_tokens > 0 && prompt.size() + static_cast<size_t>(p.max_tokens) > n_ctx + 1u)
    return refuse(GenRefusal::TooLong,
                  "this model's context is " + std::to_string(n_ctx) + " tokens, but " +
                      std::to_string(prompt.size() + p.max_tokens) + " were requested (" +
                      std::to_string(prompt.size()) + " in the prompt, max_tokens " +
                      std::to_string(p.max_tokens) + ")");
  if (engine_.control().stopped()) return refuse(GenRefusal::Stopped, "the engine has stopped");

  auto q = std::make_shared<Req>();
  q->prompt_tokens = prompt.size();
  q->max_tokens = p.max_tokens;
  q->ignore_eos = p.ignore_eos;
  q->logprobs = std::min(p.logprobs, kMaxTopLogprobs);
  q->sampler = std::make_unique<Sampler>(p.sampling, n_vocab);
  for (int32_t t : prompt) q->sampler->accept(t);
  const bool constrained = p.json || p.json_schema;
  if (constrained) {  // after the prompt: the constraint follows the output only
    std::call_once(json_vocab_once_, [&] { json_vocab_ = json_vocab(*m.tokenizer); });
    q->sampler->set_constraint(std::make_unique<JsonConstraint>(json_vocab_, p.json_schema));
  }
  // A continuation: the prompt's tokens are not re-rendered, so the first
  // piece keeps its leading space (Detokenizer drops it only after a BOS).
  q->detok = std::make_unique<Detokenizer>(*m.tokenizer);
  q->stops = std::make_unique<StopScanner>(p.stop);
  q->sink = std::move(sink);

  const Tokenizer& tok = *m.tokenizer;
  const size_t vocab = static_cast<size_t>(n_vocab);
  Req* raw = q.get();
  SeqRequest sr;
  sr.prompt = std::move(prompt);
  sr.keep_cache = p.cache_prompt;
  sr.reuse_prefix = p.cache_prompt;
  sr.on_admit = [this, raw](uint32_t reused) {
    raw->cached.store(reused);
    prompt_tokens_cached_.fetch_add(reused, std::memory_order_relaxed);
  };
  // The token chosen (by the sampler from the rows, or the argmax on the
  // device for a greedy request): what follows is the same.
  auto emit = [this, raw, &tok](int32_t t) -> std::optional<int32_t> {
    Req& q = *raw;
    q.sampler->accept(t);
    ++q.completion;
    count_token();
    if (!q.first.exchange(true)) first_tokens_.fetch_add(1);
    if (!q.ignore_eos && tok.is_eog(t)) {
      q.end(GenEnd{FinishReason::Stop, 0, 0, q.tail(), {}});
      return std::nullopt;
    }
    bool stopped = false;
    const std::string text = q.stops->push(q.detok->push(t), &stopped);
    if (q.sink.on_token && !q.sink.on_token(t, text)) {
      q.end(GenEnd{FinishReason::Cancelled, 0, 0, {}, {}});
      return std::nullopt;
    }
    if (stopped) {
      q.end(GenEnd{FinishReason::Stop, 0, 0, {}, {}});
      return std::nullopt;
    }
    if (q.max_tokens > 0 && q.completion >= static_cast<size_t>(q.max_tokens)) {
      q.end(GenEnd{FinishReason::Length, 0, 0, q.tail(), {}});
      return std::nullopt;  // the last token need not be fed
    }
    return t;
  };
  sr.cb = [raw, emit, vocab, &tok](int64_t, const float* logits,
                                   int32_t rows) -> std::optional<int32_t> {
    if (raw->ended.load()) return std::nullopt;
    const float* row = logits + static_cast<size_t>(rows - 1) * vocab;
    const int32_t t = raw->sampler->sample(row);
    // An end-of-generation token writes nothing: no entry for it.
    if (raw->logprobs >= 0 && raw->sink.on_logprobs && (raw->ignore_eos || !tok.is_eog(t)))
      raw->sink.on_logprobs(token_logprobs(row, static_cast<int32_t>(vocab), t, raw->logprobs));
    return emit(t);
  };
  if (greedy_plain(p.sampling) && !constrained && p.logprobs < 0)
    sr.on_argmax = [raw, emit](int64_t, int32_t t) -> std::optional<int32_t> {
      if (raw->ended.load()) return std::nullopt;
      return emit(t);
    };
  std::promise<SeqEnd> done;
  q->done = done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const uint32_t limit = engine_.pipeline().n_seq() + opt_.max_queued;
    if (live_.size() >= limit) {
      refused_busy_.fetch_add(1, std::memory_order_relaxed);
      return refuse(GenRefusal::Busy, "the server is busy: " + std::to_string(live_.size()) +
                                          " requests in flight (--parallel " +
                                          std::to_string(engine_.pipeline().n_seq()) +
                                          " + --max-queue " + std::to_string(opt_.max_queued) +
                                          "); try again later");
    }
    q->id = next_id_++;
    // Live before it is submitted: its callback may run before submit returns.
    live_.push_back(q);
    in_flight_.fetch_add(1);
  }
  // Not under mu_: submit waits for the sampler actor's lock, which a step
  // callback holds while it may call into us (a C API callback cancels).
  auto id = engine_.pipeline().submit(std::move(sr), std::move(done));
  if (!id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (std::erase(live_, q)) in_flight_.fetch_sub(1);
    }
    return refuse(engine_.control().stopped() ? GenRefusal::Stopped : GenRefusal::Invalid,
                  id.error().message);
  }
  q->seq.store(*id);
  if (q->cancel_asked.load()) engine_.pipeline().cancel(*id);  // a cancel came first
  requests_.fetch_add(1, std::memory_order_relaxed);
  prompt_tokens_.fetch_add(q->prompt_tokens, std::memory_order_relaxed);
  cv_.notify_all();
  r.id = q->id;
  return r;
}

void Generator::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& q : live_)
    if (q->id == id) q->cancel(engine_.pipeline());
}

void Generator::cancel_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& q : live_) q->cancel(engine_.pipeline());
}

bool Generator::wait_idle(int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (in_flight_.load() > 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Sequences end on the sampler actor; their futures say so. The reaper
// looks every few milliseconds while any is live (a condition variable
// while none is), ends what the callbacks did not (the context full, the
// pool dry, a cancel) and retires them: only then is a slot free again, so
// in_flight counts what the engine holds. A run that stopped (an actor
// failed, the engine finished) ends them all with its error.
void Generator::reap() {
  std::vector<std::pair<std::shared_ptr<Req>, GenEnd>> ends;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_ || !live_.empty()) {
    if (live_.empty()) {
      cv_.wait(lock, [this] { return stopping_ || !live_.empty(); });
      continue;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(3));
    const bool stopped = engine_.control().stopped();
    for (size_t i = 0; i < live_.size();) {
      std::shared_ptr<Req> q = live_[i];
      const bool ready = q->done.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      // Not submitted yet (seq 0): start() is at it, and ends it if submit fails.
      if (!ready && (!stopped || q->seq.load() == 0)) {
        ++i;
        continue;
      }
      GenEnd e;
      if (ready) {
        const SeqEnd se = q->done.get();
        e.reason = se.cancelled        ? FinishReason::Cancelled
                   : !se.error.empty() ? FinishReason::Error
                                       : FinishReason::Length;  // the context is full
        e.error = se.error;
        // Its callback will not run again: the held text is ours to take.
        if (e.reason == FinishReason::Length && !q->ended.load()) e.tail = q->tail();
      } else {
        e.reason = FinishReason::Error;
        const auto err = engine_.control().error();
        e.error = err ? err->message : "the engine stopped";
      }
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
      ends.emplace_back(std::move(q), std::move(e));
    }
    // Sinks are called without the lock: one may cancel another request.
    lock.unlock();
    for (auto& [q, e] : ends) {
      q->end(std::move(e));
      const int why = q->reason.load();
      if (why >= 0 && why < 4) finished_[why].fetch_add(1, std::memory_order_relaxed);
      if (q->first.load()) first_tokens_.fetch_sub(1);
      in_flight_.fetch_sub(1);
    }
    ends.clear();
    lock.lock();
  }
}

GenStats Generator::stats() const {
  GenStats s;
  s.requests = requests_.load();
  for (int i = 0; i < 4; ++i) s.finished[i] = finished_[i].load();
  s.refused_busy = refused_busy_.load();
  s.prompt_tokens = prompt_tokens_.load();
  s.prompt_tokens_cached = prompt_tokens_cached_.load();
  s.completion_tokens = completion_tokens_.load();
  s.in_flight = in_flight_.load();
  const uint32_t first = first_tokens_.load();
  s.waiting = s.in_flight > first ? s.in_flight - first : 0;
  // Whole seconds before this one (the current one is still filling).
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  uint64_t n = 0;
  for (int i = 0; i < kRateSeconds; ++i) {
    const int64_t sec = rate_sec_[i].load();
    if (sec < now && sec >= now - (kRateSeconds - 1)) n += rate_count_[i].load();
  }
  s.tokens_per_second = static_cast<double>(n) / (kRateSeconds - 1);
  s.kv = engine_.pipeline().kv_usage();
  s.n_seq = engine_.pipeline().n_seq();
  s.n_ctx = engine_.pipeline().n_ctx();
  return s;
}

}  // namespace ls
