// The serving core: text generation requests over an engine's pipeline,
// each its own sequence (continuous batching: it joins the running batch
// between steps, actors/sampler.h), with its own sampler, a token budget,
// stop strings and its text streamed as it is made. The HTTP server
// (tools/serve/) and the C API (tools/capi/) both stand on it, so every
// client of the engine sees the same requests, limits and counters.
//
// Threads: a request's tokens are sampled in its step callback on the
// sampler actor, which also calls the sink's on_token; the end of a
// sequence that the engine decided (the context full, the key/value pool
// dry, a cancel) is seen by the generator's own reaper thread, which waits
// on the sequences' futures. Sinks must not block: a slow consumer would
// hold up every sequence of the batch.
// defines: GenParams, FinishReason, GenEnd, GenSink, GenRefusal, GenStart, GenStats, Generator
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "actors/engine.h"
#include "model/json_constraint.h"
#include "model/logprobs.h"
#include "model/sampler.h"

namespace ls {

struct GenParams {
  SamplerParams sampling;
  int32_t max_tokens = -1;        // tokens to sample at most; -1: until the context is full
  std::vector<std::string> stop;  // the text ends before the first of these (not included)
  // An end-of-generation token is a token like any other (its text, if any,
  // is streamed): benchmarks run a fixed count of tokens (llama-server's ignore_eos).
  bool ignore_eos = false;
  // Prompt caching (llama-server's cache_prompt): the request may start
  // from a finished request's cached keys and values where its prompt
  // begins with that request's tokens (SeqRequest::reuse_prefix), and
  // leaves its own for the next. The output is the same either way on the
  // CPU; on CUDA within the rounding of prefill against decode arithmetic.
  bool cache_prompt = true;
  // JSON mode (OpenAI's response_format "json_object"): the output is one
  // JSON object, then the end (model/json_constraint.h).
  bool json = false;
  // Structured outputs (response_format "json_schema"): the output is one
  // document this compiled schema accepts, then the end (model/json_schema.h);
  // implies json.
  std::shared_ptr<const JsonSchema> json_schema;
  // OpenAI's logprobs: -1 none; n >= 0: each token's log probability and
  // the n most likely at its step (model/logprobs.h), to GenSink::on_logprobs.
  int32_t logprobs = -1;
};

enum class FinishReason { Stop, Length, Cancelled, Error };
// OpenAI's names: "stop" (an end-of-generation token or a stop string),
// "length" (max_tokens or the context), "cancelled", "error".
const char* finish_reason_name(FinishReason r);

// How a request ended.
struct GenEnd {
  FinishReason reason = FinishReason::Stop;
  size_t prompt_tokens = 0, completion_tokens = 0;
  // Text held back until the end (the start of a stop string that never
  // came, an incomplete UTF-8 character): the consumer appends it.
  std::string tail;
  std::string error;         // FinishReason::Error: the engine's message
  size_t cached_tokens = 0;  // of prompt_tokens, taken from a cache (not computed)
};

struct GenSink {
  // Each sampled token but an end-of-generation one, and the text it
  // releases: possibly empty while text is held back (an incomplete UTF-8
  // character, or what may be the start of a stop string). Sampler actor.
  // Returns false to end the request there (FinishReason::Cancelled).
  std::function<bool(int32_t token, std::string_view text)> on_token;
  // With GenParams::logprobs: just before each token's on_token, its log
  // probabilities. Sampler actor.
  std::function<void(const TokenLogprobs&)> on_logprobs;
  // Exactly once, after the last on_token: the sampler actor, the reaper,
  // or the thread that stopped the generator.
  std::function<void(const GenEnd&)> on_end;
};

// Why a request was not started: the HTTP status it maps to is the
// server's business (tools/serve/errors.h).
enum class GenRefusal { None, Busy, TooLong, Invalid, Stopped };

struct GenStart {
  uint64_t id = 0;  // 0: refused
  GenRefusal refusal = GenRefusal::None;
  std::string message;  // names the lengths, the limit, the field
  bool ok() const { return refusal == GenRefusal::None; }
};

// Counters since start (Prometheus counters), and gauges of now.
struct GenStats {
  uint64_t requests = 0;                // started
  uint64_t finished[4] = {0, 0, 0, 0};  // by FinishReason
  uint64_t refused_busy = 0;
  uint64_t prompt_tokens = 0, completion_tokens = 0;
  uint64_t prompt_tokens_cached = 0;  // of prompt_tokens, taken from a cache
  uint32_t in_flight = 0;             // started, not ended (queued, prefilling or decoding)
  uint32_t waiting = 0;               // of those, without a token yet (queued or prefilling)
  double tokens_per_second = 0;       // sampled tokens over the last few seconds
  KvUsage kv;
  uint32_t n_seq = 0, n_ctx = 0;
};

class Generator {
 public:
  struct Options {
    // Requests that may wait beyond the --parallel that run: one more is
    // refused (GenRefusal::Busy, the server's 429).
    uint32_t max_queued = 64;
  };
  Generator(Engine& e, Options o);
  ~Generator();  // cancels what still runs and waits for the ends (bounded)
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // Start a request. Refused: Busy (the queue is full), TooLong (the prompt
  // and max_tokens past the context; the message names the lengths),
  // Invalid (an empty prompt, a token outside the vocabulary, what the
  // pipeline refuses), Stopped (the run has stopped).
  GenStart start(std::vector<int32_t> prompt, const GenParams& p, GenSink sink);
  // End a request at the next step (FinishReason::Cancelled): its slot and
  // key/value blocks are free then. Unknown or ended ids are ignored.
  void cancel(uint64_t id);
  // Cancel every request.
  void cancel_all();
  // Wait until no request is in flight, at most `ms`; true if none is.
  bool wait_idle(int ms);
  uint32_t in_flight() const { return in_flight_.load(); }
  GenStats stats() const;
  const Model& model() const { return engine_.model(); }
  uint32_t n_ctx() const { return engine_.pipeline().n_ctx(); }
  // Requests it takes at once: running (--parallel) and queued.
  uint32_t capacity() const { return engine_.pipeline().n_seq() + opt_.max_queued; }

 private:
  struct Req;
  void reap();  // the reaper thread
  void count_token();

  Engine& engine_;
  const Options opt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;              // a request started, or stop
  std::vector<std::shared_ptr<Req>> live_;  // in flight (mu_)
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::atomic<uint32_t> in_flight_{0}, first_tokens_{0};
  std::atomic<uint64_t> requests_{0}, refused_busy_{0}, prompt_tokens_{0}, completion_tokens_{0};
  std::atomic<uint64_t> prompt_tokens_cached_{0};
  std::atomic<uint64_t> finished_[4] = {0, 0, 0, 0};
  // Sampled tokens per second of the last kRateSeconds (written by the
  // sampler actor only; read by stats()).
  static constexpr int kRateSeconds = 8;
  std::atomic<int64_t> rate_sec_[kRateSeconds] = {};
  std::atomic<uint64_t> rate_count_[kRateSeconds] = {};
  std::thread reaper_;
  // The vocabulary's bytes for JSON mode, made at the first such request.
  std::once_flag json_vocab_once_;
  std::shared_ptr<const JsonVocab> json_vocab_;
};

}  // namespace ls
