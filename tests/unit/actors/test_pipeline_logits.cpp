// Pipeline::run_request's logits_from: a prompt's rows from that index on
// reach the callback in prompt order, bit-identical to the resident path's
// rows for the same batch, on every tier mix; without it only the last row
// comes (what decode samples from). Perplexity scores windows this way.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "actors/pipeline.h"
#include "model/cpu_backend.h"
#include "model/model.h"
#include "tests/unit/test_models.h"

using namespace ls;

namespace {

std::vector<Tier> tiers_of(const std::string& s) {
  std::vector<Tier> t;
  for (char c : s)
    t.push_back(c == 'A'   ? Tier::Resident
                : c == 'B' ? Tier::Ram
                : c == 'H' ? Tier::Cpu
                           : Tier::Storage);
  return t;
}

}  // namespace

TEST_CASE("pipeline: logits_from returns a prompt's rows from there on, as the resident path") {
  auto mr = open_model(test::tiny_model_path("ls_test_pipeline_logits"));
  REQUIRE(mr.has_value());
  const Model& m = **mr;
  const size_t V = m.config().n_vocab;
  const std::vector<int32_t> prompt = {1, 17, 42, 99, 7, 300, 5, 64, 3, 250, 11, 12};
  const size_t from = 5;

  // The resident path: rows from..end of the same batch.
  std::vector<float> want((prompt.size() - from) * V);
  {
    CpuBackend be(m.config(), m.globals(), 64, 1, KvType::F32, 2);
    Batch b;
    for (size_t i = 0; i < prompt.size(); ++i)
      b.add(prompt[i], static_cast<int32_t>(i), 0, i >= from);
    REQUIRE(forward_resident(m, be, b, want.data()).ok());
  }
  std::vector<float> want_last(V);  // and the last row alone
  {
    CpuBackend be(m.config(), m.globals(), 64, 1, KvType::F32, 2);
    Batch b;
    for (size_t i = 0; i < prompt.size(); ++i)
      b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
    REQUIRE(forward_resident(m, be, b, want_last.data()).ok());
  }

  for (const std::string tiers : {"AAAA", "BCHA", "CCCC"}) {
    CAPTURE(tiers);
    CpuBackend be(m.config(), m.globals(), 64, 1, KvType::F32, 2);
    CpuBackend cpu_tier(m.config(), m.globals(), 64, 1, KvType::F32, 2);
    PipelineOptions opt;
    opt.cpu_backend = &cpu_tier;
    opt.n_ctx = 64;
    opt.source.log = false;
    Tracer tracer(false);
    RunControl rc;
    // The plan a temporary: the pipeline keeps its own copy.
    auto p =
        Pipeline::start(m, be, plan_forced(m.map, tiers_of(tiers), 2, 2, 4096), opt, tracer, rc);
    REQUIRE_MESSAGE(p.has_value(), (p ? "" : p.error().message));
    std::vector<float> got;
    int32_t rows = 0;
    Status st = (*p)->run_request(
        prompt,
        [&](int64_t, const float* l, int32_t n) -> std::optional<int32_t> {
          rows = n;
          got.assign(l, l + static_cast<size_t>(n) * V);
          return std::nullopt;
        },
        from);
    REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().message));
    CHECK(rows == static_cast<int32_t>(prompt.size() - from));
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    CHECK((*p)->n_past() == prompt.size());

    // The same window again from position 0, without logits_from: the last row alone.
    (*p)->rewind();
    st = (*p)->run_request(prompt,
                           [&](int64_t, const float* l, int32_t n) -> std::optional<int32_t> {
                             rows = n;
                             got.assign(l, l + static_cast<size_t>(n) * V);
                             return std::nullopt;
                           });
    REQUIRE(st.ok());
    CHECK(rows == 1);
    REQUIRE(got.size() == V);
    CHECK(std::memcmp(got.data(), want_last.data(), V * sizeof(float)) == 0);
    (*p)->stop();
  }
}
