// The sampler actor: turns a step's logits into the next token through the
// request's callback (which samples, streams text, and decides when to stop)
// and feeds that token back to compute as the next step's batch. When the
// callback ends the request, the waiting client is told the final position.
// defines: StepCallback, SamplerActor
#pragma once

#include <functional>
#include <future>
#include <mutex>
#include <optional>

#include "actors/messages.h"
#include "runtime/credit_pool.h"
#include "runtime/trace.h"

namespace ls {

// Called with each step's logits (n_rows x n_vocab; the last row is the one to
// sample from); returns the next token, or nullopt to end the request.
using StepCallback =
    std::function<std::optional<int32_t>(int64_t step, const float* logits, int32_t n_rows)>;

class SamplerActor {
 public:
  SamplerActor(Mailbox<StepOutput>& in, Mailbox<StepInput>& to_compute, StepWidths& widths,
               RunControl& rc, Tracer& tracer);
  void run();  // the actor's thread
  // Install the request whose prompt is about to be sent; `pos` is the position
  // the first sampled token will take. `done` receives the final position.
  void begin_request(StepCallback cb, int32_t seq, uint32_t pos, uint32_t n_ctx,
                     std::promise<uint32_t> done);

 private:
  Mailbox<StepOutput>& in_;
  Mailbox<StepInput>& to_compute_;
  StepWidths& widths_;
  RunControl& rc_;
  Tracer& tracer_;
  std::mutex mu_;
  StepCallback cb_;
  int32_t seq_ = 0;
  uint32_t pos_ = 0, n_ctx_ = 0;
  std::optional<std::promise<uint32_t>> done_;
};

}  // namespace ls
