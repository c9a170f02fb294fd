// The sampler actor: the end of each step and the start of the next. It
// hands each sequence the logits rows of its entries (the sequence's
// callback samples, streams text and decides when to stop) and forms the
// next step's batch from every running sequence's next token plus the
// prompts of sequences joining (continuous batching): sequences join and
// leave between steps, each in its own key/value slot. A prompt that
// arrives while others decode fills what their tokens leave of a step of
// `chunk` tokens (chunked prefill); alone, it goes in steps of `chunk`.
// When a sequence ends (its callback says so, its context is full, or it
// was cancelled) its slot is free for the next one and its client is told
// the final position.
//
// The key/value cache is paged (model/kv_blocks.h): the sampler owns the
// block table and sends it with every step. A sequence is admitted when the
// pool has blocks for its prompt's positions and its first token's (the
// positions pos0 .. pos0 + prompt); until then it waits in the queue, and
// those behind it too (first come, first served). Decoding, it takes a block
// each time its next position enters a new one; when none is free, that
// sequence ends, its SeqEnd saying "kv cache full" (the others go on), and
// its blocks go back. A sequence's blocks go back when it ends, however it
// ends, unless it asked to keep them (keep_cache: run_request's chat turns,
// which continue the slot's cache at pos0). The sampler also knows the
// tokens a slot's positions hold, so a request with reuse_prefix takes the
// free slot whose kept cache starts as its prompt does and skips what they
// share (prompt caching, the serving core's default); those caches give
// their blocks up, least recently kept first, to a sequence joining or
// decoding into a new block, where a chat's kept cache does not. A request
// the pool could never hold is refused at submit (Pipeline::submit); one
// that waits while nothing runs, so that nothing will free blocks, ends at
// once with the message rather than wait for ever.
// defines: StepCallback, ArgmaxCallback, SeqFeed, FeedCallback, SeqRequest, SeqEnd, KvUsage,
// SamplerActor
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/messages.h"
#include "model/kv_blocks.h"
#include "runtime/credit_pool.h"
#include "runtime/trace.h"

namespace ls {

// Called with a sequence's logits rows of a step (n_rows x n_vocab, in the
// order of its entries: the last row is the one to sample from); returns the
// next token, or nullopt to end the sequence. While its prompt is still being
// fed (a chunk that is not the last), what it returns is not used.
using StepCallback =
    std::function<std::optional<int32_t>(int64_t step, const float* logits, int32_t n_rows)>;

// A greedy sequence's callback beside StepCallback: the greedy token
// (greedy_argmax, model/sampler.h) of its step's row instead of the row.
// The sampler actor uses it when every sequence of a step has one and wants
// one row (Batch::argmax_only), so the backend takes the argmax where the
// logits are; otherwise StepCallback gets the rows as usual. The two must
// agree: on_argmax(step, greedy_argmax(row)) == cb(step, row, 1).
using ArgmaxCallback = std::function<std::optional<int32_t>(int64_t step, int32_t token)>;

// What a sequence feeds next in place of one token (speculative decoding's
// verify steps, model/speculative.h): tokens, each with a logits row, at
// positions pos, pos + 1, ...; pos is at most the sequence's next position
// and at least its first: below it, the positions from pos on are given up
// (rejected drafts: their cache entries are overwritten before anything
// reads them, since a token attends to positions up to its own only).
struct SeqFeed {
  std::vector<int32_t> tokens;
  uint32_t pos = 0;
};
// The callback of such a sequence: the step's rows as StepCallback's, and
// the sequence's next position. nullopt ends the sequence there; a feed of
// no tokens ends it at the feed's pos (its cache, and SeqEnd::pos, hold the
// positions before it: the accepted ones).
using FeedCallback = std::function<std::optional<SeqFeed>(int64_t step, const float* logits,
                                                          int32_t n_rows, uint32_t next_pos)>;

// A sequence to run (Pipeline::submit).
struct SeqRequest {
  std::vector<int32_t> prompt;  // at least one token
  StepCallback cb;
  ArgmaxCallback on_argmax;  // optional beside cb: a greedy sequence (see ArgmaxCallback)
  FeedCallback feed;         // instead of cb: tokens to feed (and where) after each step
  int32_t slot = -1;         // key/value slot; -1: the first free one
  uint32_t pos0 = 0;         // the prompt's first position (a slot's kept cache: a chat)
  uint32_t max_pos = 0;      // the sequence ends when its next position reaches this (the context)
  // Prompt entries from this index on get logits rows too (perplexity); the
  // last prompt entry always does.
  size_t logits_from = SIZE_MAX;
  // At its end the slot keeps the sequence's key/value blocks, for a next
  // request in the same slot that continues at pos0 = its end (a chat); a
  // request at a pos0 the slot has not kept ends with an error.
  bool keep_cache = false;
  // Prompt caching (a request with slot -1 and pos0 0 and no feed): the
  // free slot whose kept cache shares the longest start with the prompt
  // takes it, and the shared tokens are not computed again (all but the
  // prompt's last, whose logits row the request needs). A client that
  // resends a whole conversation each turn (OpenAI's API) computes only
  // what is new. With keep_cache too, the cache this sequence leaves is
  // such a cache: given up, least recently kept first, when another
  // request needs its blocks (a chat's kept cache, without reuse_prefix,
  // never is).
  bool reuse_prefix = false;
  // Called once when the sequence joins, with the prompt tokens it takes
  // from a kept cache (sampler actor, under its lock: store, do not wait).
  std::function<void(uint32_t reused)> on_admit;
};

// How a sequence ended: the position after its last cached token, whether
// it was cancelled, and why the engine ended it when its callback and its
// context did not (empty otherwise), e.g. "kv cache full: 64 blocks of 64
// in use; ...".
struct SeqEnd {
  uint32_t pos = 0;
  bool cancelled = false;
  std::string error;
  uint32_t reused = 0;  // prompt tokens taken from a kept cache (SeqRequest::reuse_prefix)
};

// The paged key/value cache's pool: blocks held by sequences (and chats'
// kept caches), blocks held by prompt caches (SeqRequest::reuse_prefix:
// given up when a sequence needs them), of all.
struct KvUsage {
  uint32_t used = 0, total = 0;
  uint32_t cached = 0;
};

class SamplerActor {
 public:
  // n_slots: key/value slots (the backends' sequences); chunk: the most
  // tokens a step holds (step_tokens_max): prompt tokens fill what the
  // decoding sequences' tokens leave of it. Each step's width goes to
  // StepWidths before the step is sent. n_ctx: positions a slot may reach
  // (0: no paging: no table is sent, the backends keep theirs); kv_blocks:
  // the pool (0: n_ctx positions for every slot); kv_seed: not 0, the free
  // blocks in a shuffled order (tests).
  SamplerActor(Mailbox<StepOutput>& in, Mailbox<StepInput>& to_compute, StepWidths& widths,
               RunControl& rc, Tracer& tracer, int32_t n_slots, int32_t chunk, uint32_t n_ctx = 0,
               uint32_t kv_blocks = 0, uint64_t kv_seed = 0);
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
  // The key/value pool's blocks in use (any thread).
  KvUsage kv_usage() const;

 private:
  // How long the last step took from this actor's push to its output: when
  // to start polling for the next (Mailbox::pop_expecting).
  std::chrono::nanoseconds last_step_{0};
  struct Seq {
    uint64_t id = 0;
    SeqRequest req;
    std::promise<SeqEnd> done;
    uint32_t pos = 0;           // the next position to write
    size_t fed = 0;             // prompt tokens sent so far
    std::vector<int32_t> next;  // the tokens to send next (once the prompt is done)
    int32_t rows = 0;           // its logits rows in the step in flight
    bool cancelled = false;
    uint32_t reused = 0;  // prompt tokens taken from the slot's kept cache
    // The token at each position [0, pos) of its slot (paged): what a kept
    // cache holds, for prompt caching; shorter when not known.
    std::vector<int32_t> tokens;
  };
  // The step's batch from the running sequences and the queue (under mu_).
  void form_batch(Batch& b);
  // Queued sequences join while slots and blocks allow (under mu_).
  void admit();
  // Ends running_[i]: its promise, its blocks (kept with keep_cache).
  void finish(size_t i, bool cancelled, std::string error = {});
  bool slot_free(int32_t s) const;
  void note_token(Seq& s, int32_t t) const;
  std::string kv_full(uint32_t pos) const;

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
  // The paged cache (mu_): the block table, and per slot the positions it
  // keeps from a keep_cache sequence that ended (0: none).
  const bool paged_;
  KvBlockTable kv_;
  std::vector<uint32_t> kept_;
  // Per slot: the tokens of its kept positions (empty when not known), and
  // when the cache was kept (the least recently kept is given up first).
  std::vector<std::vector<int32_t>> kept_tokens_;
  std::vector<uint64_t> kept_at_;
  std::vector<uint8_t> kept_spare_;  // a prompt cache: may be given up for blocks
  uint64_t kept_clock_ = 0;
  // The free slot whose kept cache shares the most tokens with the prompt,
  // and how many may be reused (0: none).
  int32_t best_prefix_slot(const std::vector<int32_t>& prompt, uint32_t* reuse) const;
  // Give up other free slots' prompt caches (kept_spare_), least recently
  // kept first, until slot us can hold want positions; false if it still
  // cannot.
  bool reserve_evicting(uint32_t us, uint32_t want);
  // Cancelled ids, taken at the next step (their own lock: a callback runs
  // under mu_ and may cancel).
  std::mutex cancel_mu_;
  std::vector<uint64_t> cancels_;
};

}  // namespace ls
