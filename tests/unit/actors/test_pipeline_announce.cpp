// Pipeline::announce_width: a feed that knows its next step's width before
// it makes the tokens (speculative decoding's K + 1, before the draft runs)
// lets the planner route that step's CPU-tier layers at once. On the CPU
// backend (main and CPU tier alike) the routing changes no bit, so a hybrid
// run with announcements equals one without; the planner did route by
// them; and a prompt that joins a step announced for fewer tokens is fed
// over more steps, with the same bits.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "actors/pipeline.h"
#include "model/cpu_backend.h"
#include "model/model.h"
#include "tests/unit/test_models.h"

using namespace ls;

namespace {

const Model& model() {
  return test::tiny_model("ls_test_pipeline_announce");
}

using test::argmax;

struct Result {
  std::vector<float> rows;  // every row the feed saw
  int64_t routed = 0;
  int prompt_steps = 0;  // the steps the second request's prompt took
};

// A hybrid plan (CPU tier on layers 1 and 3, layer 2 streamed): a feed of
// three tokens a step (the greedy token and two fixed ones, as a draft
// would), 8 steps; announce: its width announced before each.
Result run(bool announce) {
  const Model& m = model();
  const int V = static_cast<int>(m.config().n_vocab);
  CpuBackend be(m.config(), m.globals(), 64, 1, KvType::F32, 2, CpuAct::F32);
  CpuBackend tier(m.config(), m.globals(), 64, 1, KvType::F32, 2, CpuAct::F32);
  Tracer tracer(false);
  RunControl rc;
  PipelineOptions opt;
  opt.n_ctx = 64;
  opt.source.log = false;
  opt.cpu_backend = &tier;
  opt.depth = 16;
  const TierPlan plan =
      plan_forced(m.map, {Tier::Resident, Tier::Cpu, Tier::Ram, Tier::Cpu}, 2, 2, 4096);
  auto p = Pipeline::start(m, be, plan, opt, tracer, rc);
  REQUIRE_MESSAGE(p.has_value(), (p ? "" : p.error().message));
  Pipeline& pl = **p;
  Result res;
  int steps = 0;
  const std::vector<int32_t> prompt = {3, 14, 15, 92, 65};
  Status st = pl.run_request(
      prompt,
      [&](int64_t, const float* rows, int32_t n_rows, uint32_t next_pos) -> std::optional<SeqFeed> {
        res.rows.insert(res.rows.end(), rows, rows + static_cast<size_t>(n_rows) * V);
        if (++steps > 8) return SeqFeed{{}, next_pos};
        if (announce) pl.announce_width(3);
        // What a draft takes: the planner routes the next step meanwhile.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const int32_t t = argmax(rows + static_cast<size_t>(n_rows - 1) * V, V);
        return SeqFeed{{t, 7, 8}, next_pos};
      });
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
  // A prompt after an announced step that never came (the feed above ended
  // in the step after its last announcement: none is pending), then one
  // after an announcement of 2 that the sequence did not use.
  if (announce) pl.announce_width(2);
  std::vector<float> tail;
  // Every prompt row's logits (logits_from 0), so each chunk comes back.
  st = pl.run_request(
      std::vector<int32_t>{5, 6, 7, 8, 9, 10},
      [&](int64_t, const float* l, int32_t n) -> std::optional<int32_t> {
        ++res.prompt_steps;  // once a chunk: only the last one's answer counts
        tail.insert(tail.end(), l, l + static_cast<size_t>(n) * V);
        return std::nullopt;
      },
      0);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
  res.rows.insert(res.rows.end(), tail.begin(), tail.end());
  res.routed = pl.routed_by_announce();
  pl.stop();
  return res;
}

}  // namespace

TEST_CASE(
    "pipeline: a width announced before the batch routes the step early, with the same "
    "bits") {
  const Result plain = run(false);
  const Result early = run(true);
  CHECK(plain.routed == 0);
  MESSAGE(early.routed << " steps routed by an announced width");
  CHECK(early.routed > 0);
  // The 6-token prompt in a step announced for 2: 2 tokens, then the rest.
  CHECK(plain.prompt_steps == 1);
  CHECK(early.prompt_steps == 2);
  REQUIRE(early.rows.size() == plain.rows.size());
  CHECK(std::memcmp(early.rows.data(), plain.rows.data(), plain.rows.size() * sizeof(float)) == 0);
}
