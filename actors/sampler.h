// The sampler actor: the end of each step and the start of the next. It
// hands each sequence the logits rows of its entries (the sequence's
// callback samples, streams text and decides when to stop) and forms the
// next step's batch from every running sequence's next token plus the
// prompts of sequences joining (continuous batching): sequences join and
// leave between steps, each in its own key/value slot. A prompt that
// arrives while others decode is fed in chunks of at most `chunk` tokens a
// step beside their tokens (chunked prefill); alone, it goes in one step.
// When a sequence ends (its callback says so, its context is full, or it
// was cancelled) its slot is free for the next one and its client is told
// the final position.
// defines: StepCallback, SeqRequest, SeqEnd, SamplerActor
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <vector>

#include "actors/messages.h"
#include "runtime/credit_pool.h"
#include "runtime/trace.h"

namespace ls {

// Called with a sequence's logits rows of a step (n_rows x n_vocab, in the
// order of its entries: the last row is the one to sample from); returns the
// next token, or nullopt to end the sequence. While its prompt is still being
// fed (a chunk that is not the last), what it returns is not used.
using StepCallback =
    std::function<std::optional<int32_t>(int64_t step, const float* logits, int32_t n_rows)>;

// A sequence to run (Pipeline::submit).
struct SeqRequest {
  std::vector<int32_t> prompt;  // at least one token
  StepCallback cb;
  int32_t slot = -1;    // key/value slot; -1: the first free one
  uint32_t pos0 = 0;    // the prompt's first position (a slot's kept cache: a chat)
  uint32_t max_pos = 0; // the sequence ends when its next position reaches this (the context)
  // Prompt entries from this index on get logits rows too (perplexity); the
  // last prompt entry always does.
  size_t logits_from = SIZE_MAX;
};

// How a sequence ended: the position after its last cached token, and
// whether it was cancelled.
struct SeqEnd {
  uint32_t pos = 0;
  bool cancelled = false;
};

class SamplerActor {
 public:
  // n_slots: key/value slots (the backends' sequences); chunk: prompt tokens
  // a step takes beside decoding sequences. Each step's width goes to
  // StepWidths before the step is sent.
  SamplerActor(Mailbox<StepOutput>& in, Mailbox<StepInput>& to_compute, StepWidths& widths,
               RunControl& rc, Tracer& tracer, int32_t n_slots, int32_t chunk);
  void run();  // the actor's thread

  // Queue a sequence; it joins at the next step that has a free slot for it
  // (waiting requests join in the order they came). Returns its id.
  uint64_t submit(SeqRequest r, std::promise<SeqEnd> done);
  // End a sequence at the next step (its promise says cancelled); a queued
  // one never starts. Unknown or finished ids are ignored. Any thread, a
  // sequence's callback included.
  void cancel(uint64_t id);
  // Sequences queued or running.
  int32_t active() const;

 private:
  struct Seq {
    uint64_t id = 0;
    SeqRequest req;
    std::promise<SeqEnd> done;
    uint32_t pos = 0;     // the next position to write
    size_t fed = 0;       // prompt tokens sent so far
    int32_t token = -1;   // the sampled token to send next (>= 0 once the prompt is done)
    int32_t rows = 0;     // its logits rows in the step in flight
    bool cancelled = false;
  };
  // The step's batch from the running sequences and the queue (under mu_).
  void form_batch(Batch& b);
  void finish(size_t i, bool cancelled);
  bool slot_free(int32_t s) const;

  Mailbox<StepOutput>& in_;
  Mailbox<StepInput>& to_compute_;
  StepWidths& widths_;
  RunControl& rc_;
  Tracer& tracer_;
  const int32_t n_slots_, chunk_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a submission, for an idle actor
  std::deque<Seq> queue_;       // waiting for a slot (mu_)
  std::vector<Seq> running_;    // in slots, in the order they joined (mu_)
  std::vector<size_t> order_;   // running_ indices in the order of the step in flight's entries
  uint64_t next_id_ = 1;
  // Cancelled ids, taken at the next step (their own lock: a callback runs
  // under mu_ and may cancel).
  std::mutex cancel_mu_;
  std::vector<uint64_t> cancels_;
};

}  // namespace ls
