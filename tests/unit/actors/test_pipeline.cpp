// The streaming pipeline against the resident path: every tier mix and every
// depth / staging / slot setting must give bit-identical logits; random
// delays in every actor must not change results or deadlock; faults stop the
// run quickly with an error naming the actor and the layer.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>

#include "actors/engine.h"
#include "actors/pipeline.h"
#include "io/faulty_source.h"
#include "model/cpu_backend.h"
#include "model/model.h"
#include "model/session.h"
#include "model/synth.h"
#include "tests/unit/sanitizer_subset.h"
#include "tests/unit/test_models.h"

using namespace ls;
namespace fs = std::filesystem;

namespace {

constexpr int kGenerated = 4;

const std::string& model_path() {
  return test::tiny_model_path("ls_test_pipeline");
}

const Model& model() {
  static std::unique_ptr<Model> m = [] {
    auto r = open_model(model_path());
    REQUIRE(r.has_value());
    return std::move(*r);
  }();
  return *m;
}

std::vector<int32_t> prompt() {
  return {1, 17, 42, 99, 7, 300, 5};
}

using test::argmax;

// Logits rows of the prompt and of each greedy step, the resident way.
std::vector<float> reference_logits() {
  const Model& m = model();
  const int V = static_cast<int>(m.config().n_vocab);
  CpuBackend be(m.config(), m.globals(), 64, 1, KvType::F32, 2);
  Session s(m, be, 64);
  std::vector<float> out;
  auto p = prompt();
  const float* l = *s.feed(p);
  for (int i = 0; i < kGenerated; ++i) {
    out.insert(out.end(), l, l + V);
    int32_t t = argmax(l, V);
    l = *s.feed(std::span<const int32_t>(&t, 1));
  }
  return out;
}

struct RunResult {
  Status status;
  std::vector<float> logits;
};

RunResult run_pipeline(const TierPlan& plan, int depth, PipelineOptions opt = {},
                       uint32_t chaos_us = 0, Backend* backend = nullptr) {
  const Model& m = model();
  const int V = static_cast<int>(m.config().n_vocab);
  CpuBackend cpu(m.config(), m.globals(), 64, 1, KvType::F32, 2);
  Backend& be = backend ? *backend : cpu;
  Tracer tracer(false);
  RunControl rc;
  rc.set_chaos(chaos_us, 12345);
  opt.depth = depth;
  opt.n_ctx = 64;
  opt.source.log = false;
  auto p = Pipeline::start(m, be, plan, opt, tracer, rc);
  RunResult r;
  if (!p) {
    r.status = p.error();
    return r;
  }
  int steps = 0;
  auto pr = prompt();
  r.status =
      (*p)->run_request(pr, [&](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
        const float* last = l + static_cast<size_t>(rows - 1) * V;
        r.logits.insert(r.logits.end(), last, last + V);
        if (++steps == kGenerated) return std::nullopt;
        return argmax(last, V);
      });
  (*p)->stop();
  return r;
}

std::vector<Tier> mix(const std::string& s) {
  std::vector<Tier> t;
  for (char c : s)
    t.push_back(c == 'A'   ? Tier::Resident
                : c == 'B' ? Tier::Ram
                : c == 'H' ? Tier::Cpu
                           : Tier::Storage);
  return t;
}

}  // namespace

TEST_CASE(
    "pipeline: every tier mix and depth/staging/slot setting matches the resident path bit for "
    "bit") {
  const std::vector<float> ref = reference_logits();
  REQUIRE(ref.size() == static_cast<size_t>(kGenerated) * model().config().n_vocab);
  // Sanitizer builds (tests/unit/sanitizer_subset.h): per tier mix, the 16
  // of the 64 settings with slots = (depth + staging) % 4 + 1, a Latin
  // square: every value of each setting, and every pair of values of any two.
  const bool subset = test::sanitizer_subset();
  int runs = 0;
  for (const char* tiers : {"AAAA", "BBBB", "CCCC", "ACBC"}) {
    for (int depth = 1; depth <= 4; ++depth)
      for (int staging = 1; staging <= 4; ++staging)
        for (int slots = 1; slots <= 4; ++slots) {
          if (subset && slots != (depth + staging) % 4 + 1) continue;
          CAPTURE(tiers);
          CAPTURE(depth);
          CAPTURE(staging);
          CAPTURE(slots);
          const TierPlan plan = plan_forced(model().map, mix(tiers), slots, staging, 4096);
          RunResult r = run_pipeline(plan, depth);
          REQUIRE_MESSAGE(r.status.ok(), (r.status.ok() ? "" : r.status.error().message));
          REQUIRE(r.logits.size() == ref.size());
          CHECK(std::memcmp(r.logits.data(), ref.data(), ref.size() * sizeof(float)) == 0);
          ++runs;
        }
  }
  CHECK(runs == (subset ? 64 : 256));
  MESSAGE(runs << " pipeline runs" << std::string(subset ? " (the sanitizer subset)" : "")
               << ", each bit-identical to the resident path");
}

TEST_CASE("pipeline: CPU-tier layers (hybrid plans) match the resident path bit for bit") {
  // The CPU tier's backend is a second CpuBackend: the hidden state leaves
  // the main backend, crosses to the cpu-compute actor and comes back.
  const std::vector<float> ref = reference_logits();
  const Model& m = model();
  int runs = 0;
  for (const char* tiers : {"HHHH", "AHBH", "HCAH", "BHCH"}) {
    // 0: the engine's default, hybrid_depth (more than a step ahead here).
    for (int depth : {1, 2, 4, 0}) {
      const TierPlan plan = plan_forced(m.map, mix(tiers), 2, 2, 4096);
      if (depth == 0) depth = hybrid_depth(plan);
      CAPTURE(tiers);
      CAPTURE(depth);
      CpuBackend cpu_tier(m.config(), m.globals(), 64, 1, KvType::F32, 2);
      PipelineOptions opt;
      opt.cpu_backend = &cpu_tier;
      CHECK(plan.n_cpu == static_cast<int32_t>(std::count(tiers, tiers + 4, 'H')));
      RunResult r = run_pipeline(plan, depth, opt, depth == 4 ? 200 : 0);
      REQUIRE_MESSAGE(r.status.ok(), (r.status.ok() ? "" : r.status.error().message));
      REQUIRE(r.logits.size() == ref.size());
      CHECK(std::memcmp(r.logits.data(), ref.data(), ref.size() * sizeof(float)) == 0);
      ++runs;
    }
  }
  MESSAGE(runs << " hybrid runs, each bit-identical to the resident path");
}

namespace {

// Forwards to a backend and counts what it is asked to do.
class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(Backend& inner) : in_(inner) {}
  const char* name() const override { return "counting"; }
  Status begin(const Batch& b) override { return in_.begin(b); }
  Status layer(uint32_t i, const LayerView& w) override { return in_.layer(i, w); }
  Status finish(float* l) override { return in_.finish(l); }
  void clear_seq(int32_t s, int32_t from) override { in_.clear_seq(s, from); }
  Status export_hidden(float* h) override { return in_.export_hidden(h); }
  Status import_hidden(const Batch& b, const float* h) override {
    widest_import = std::max(widest_import, b.size());
    return in_.import_hidden(b, h);
  }
  Status read_kv(uint32_t l, int32_t s, uint32_t p0, uint32_t p1, float* k, float* v) override {
    rows_read += p1 - p0;
    return in_.read_kv(l, s, p0, p1, k, v);
  }
  Status write_kv(uint32_t l, int32_t s, uint32_t p0, uint32_t p1, const float* k,
                  const float* v) override {
    rows_written += p1 - p0;
    return in_.write_kv(l, s, p0, p1, k, v);
  }
  size_t widest_import = 0;
  uint32_t rows_read = 0, rows_written = 0;

 private:
  Backend& in_;
};

// Three requests: a prompt and 4 tokens; a second prompt continuing the same
// sequence (a chat turn) and 4 tokens; then from position 0 again. Returns
// the logits of every step.
Expected<std::vector<float>> run_turns(const Model& m, const TierPlan& plan, int depth, Backend& be,
                                       Backend* cpu_tier, int cpu_max_batch,
                                       int generated = kGenerated, int explore_every = 0,
                                       size_t* moves = nullptr) {
  const int V = static_cast<int>(m.config().n_vocab);
  Tracer tracer(false);
  RunControl rc;
  PipelineOptions opt;
  opt.depth = depth;
  opt.n_ctx = 64;
  opt.source.log = false;
  opt.cpu_backend = cpu_tier;
  opt.cpu_max_batch = cpu_max_batch;
  // These tests pin the rule by the prompt's width alone: every CPU-tier
  // layer on the CPU up to cpu_max_batch tokens (routing by the measured
  // width has its own test, test_pipeline_batch.cpp).
  opt.route_by_width = false;
  opt.balance.explore_every = explore_every;
  auto p = Pipeline::start(m, be, plan, opt, tracer, rc);
  if (!p) return p.error();
  std::vector<float> out;
  auto turn = [&](std::vector<int32_t> prompt) -> Status {
    int steps = 0;
    return (*p)->run_request(prompt,
                             [&](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
                               const float* last = l + static_cast<size_t>(rows - 1) * V;
                               out.insert(out.end(), last, last + V);
                               if (++steps == generated) return std::nullopt;
                               return argmax(last, V);
                             });
  };
  LS_TRY(turn(prompt()));
  LS_TRY(turn({5, 250, 3, 77, 12, 9}));
  (*p)->rewind();
  LS_TRY(turn(prompt()));
  (*p)->stop();
  if (moves) *moves = (*p)->balancer() ? (*p)->balancer()->moves().size() : 0;
  return out;
}

}  // namespace

TEST_CASE(
    "pipeline: a wide prompt sends CPU-tier layers through the device slots, and their key/value "
    "rows follow them between backends") {
  // Q8_0 (every layer the same size) and Q4_K_M (some layers carry Q6_K
  // tensors, so a CPU-tier layer can be larger than every streamed one).
  for (const char* quant : {"q8_0", "q4_k_m"}) {
    CAPTURE(quant);
    auto mr = open_model(test::tiny_model_path("ls_test_pipeline", quant));
    REQUIRE(mr.has_value());
    const Model& m = **mr;
    CpuBackend ref_be(m.config(), m.globals(), 64, 1, KvType::F32, 2);
    auto ref = run_turns(m, plan_forced(m.map, mix("AAAA"), 2, 2, 4096), 2, ref_be, nullptr, 4);
    REQUIRE(ref.has_value());
    int runs = 0;
    for (const char* tiers : {"AHBH", "HCAH", "BHCH", "HHBB"}) {
      for (int depth : {1, 2, 4, 0}) {  // 0: hybrid_depth, more than a step ahead
        const TierPlan plan = plan_forced(m.map, mix(tiers), 2, 2, 4096);
        if (depth == 0) depth = hybrid_depth(plan);
        CAPTURE(tiers);
        CAPTURE(depth);
        CpuBackend main_cpu(m.config(), m.globals(), 64, 1, KvType::F32, 2);
        CpuBackend tier_cpu(m.config(), m.globals(), 64, 1, KvType::F32, 2);
        CountingBackend main_be(main_cpu), tier_be(tier_cpu);
        auto got = run_turns(m, plan, depth, main_be, &tier_be, 4);
        REQUIRE_MESSAGE(got.has_value(), (got ? "" : got.error().message));
        REQUIRE(got->size() == ref->size());
        CHECK(std::memcmp(got->data(), ref->data(), ref->size() * sizeof(float)) == 0);
        // The prompts (7 and 6 tokens) never reached the CPU tier; single tokens did.
        CHECK(tier_be.widest_import == 1);
        // After each prompt the CPU tier was given the rows the prompt wrote:
        // turn 1: 7 rows per CPU layer; turn 2: 6; turn 3 (from 0): 7.
        const uint32_t n_cpu = static_cast<uint32_t>(plan.n_cpu);
        CHECK(tier_be.rows_written == n_cpu * (7 + 6 + 7));
        // Before the second prompt the main backend took the 3 rows (positions
        // 7..9) that the CPU wrote while decoding turn 1's tokens.
        CHECK(main_be.rows_written == n_cpu * 3);
        ++runs;
      }
    }
    MESSAGE(runs << " multi-turn hybrid runs with wide prompts through the slots, bit-identical");
    // Narrow prompts keep the CPU tier: cpu_max_batch above the prompt length.
    CpuBackend main_cpu(m.config(), m.globals(), 64, 1, KvType::F32, 2);
    CpuBackend tier_cpu(m.config(), m.globals(), 64, 1, KvType::F32, 2);
    CountingBackend main_be(main_cpu), tier_be(tier_cpu);
    auto got = run_turns(m, plan_forced(m.map, mix("AHBH"), 2, 2, 4096), 2, main_be, &tier_be, 8);
    REQUIRE(got.has_value());
    CHECK(std::memcmp(got->data(), ref->data(), ref->size() * sizeof(float)) == 0);
    CHECK(tier_be.widest_import == 7);
    CHECK(tier_be.rows_written + main_be.rows_written == 0);
  }
}

TEST_CASE(
    "pipeline: a plan re-planned online moves layers between the CPU tier and PCIe between steps, "
    "outputs bit-identical") {
  auto mr = open_model(test::tiny_model_path("ls_test_pipeline", "q4_k_m"));
  REQUIRE(mr.has_value());
  const Model& m = **mr;
  constexpr int kSteps = 12;
  CpuBackend ref_be(m.config(), m.globals(), 64, 1, KvType::F32, 2);
  auto ref =
      run_turns(m, plan_forced(m.map, mix("AAAA"), 2, 2, 4096), 2, ref_be, nullptr, 4, kSteps);
  REQUIRE(ref.has_value());
  for (const char* tiers : {"ABBB", "AHBH", "HBHB", "BBBB"}) {
    for (int every : {1, 3}) {
      CAPTURE(tiers);
      CAPTURE(every);
      CpuBackend main_cpu(m.config(), m.globals(), 64, 1, KvType::F32, 2);
      CpuBackend tier_cpu(m.config(), m.globals(), 64, 1, KvType::F32, 2);
      CountingBackend main_be(main_cpu), tier_be(tier_cpu);
      TierPlan plan = plan_forced(m.map, mix(tiers), 2, 2, 4096);
      plan.rebalance = true;
      size_t moves = 0;
      auto got = run_turns(m, plan, 4, main_be, &tier_be, 4, kSteps, every, &moves);
      REQUIRE_MESSAGE(got.has_value(), (got ? "" : got.error().message));
      REQUIRE(got->size() == ref->size());
      CHECK(std::memcmp(got->data(), ref->data(), ref->size() * sizeof(float)) == 0);
      // Layers did change sides, both ways, with their key/value rows.
      CHECK(moves >= 4);
      CHECK(tier_be.rows_written > 0);
      CHECK(main_be.rows_written > 0);
    }
  }
}

namespace {

// A backend that takes runs of up to `group` layers (Backend::layers, as the
// CUDA backend's one graph), recording each call (a layer alone as a run of
// 1), and computes them with the CPU backend one by one.
class GroupingBackend final : public Backend {
 public:
  GroupingBackend(Backend& inner, uint32_t group) : in_(inner), group_(group) {}
  const char* name() const override { return "grouping"; }
  Status begin(const Batch& b) override { return in_.begin(b); }
  Status layer(uint32_t i, const LayerView& w) override {
    runs.push_back({i, 1});
    return in_.layer(i, w);
  }
  Status layers(uint32_t first, const LayerView* w, uint32_t count) override {
    runs.push_back({first, count});
    for (uint32_t i = 0; i < count; ++i) LS_TRY(in_.layer(first + i, w[i]));
    return ok();
  }
  uint32_t layer_group() const override { return group_; }
  Status finish(float* l) override { return in_.finish(l); }
  void clear_seq(int32_t s, int32_t from) override { in_.clear_seq(s, from); }
  Status export_hidden(float* h) override { return in_.export_hidden(h); }
  Status import_hidden(const Batch& b, const float* h) override { return in_.import_hidden(b, h); }
  std::vector<std::pair<uint32_t, uint32_t>> runs;  // (first layer, count), as called

 private:
  Backend& in_;
  uint32_t group_;
};

}  // namespace

TEST_CASE("pipeline: runs of resident layers reach the backend as one call, bit for bit") {
  const std::vector<float> ref = reference_logits();
  const Model& m = model();
  struct Case {
    const char* tiers;
    uint32_t group;
    std::vector<std::pair<uint32_t, uint32_t>> step;  // the calls of one step
  };
  const Case cases[] = {
      {"AAAA", 8, {{0, 4}}},
      {"AAAA", 3, {{0, 3}, {3, 1}}},
      {"AABA", 8, {{0, 2}, {2, 1}, {3, 1}}},
      {"CAAB", 8, {{0, 1}, {1, 2}, {3, 1}}},
      // A plan with a CPU tier (H: the CPU tier's backend) keeps a job a layer.
      {"AHAA", 8, {{0, 1}, {2, 1}, {3, 1}}},
      {"AAAA", 1, {{0, 1}, {1, 1}, {2, 1}, {3, 1}}},
  };
  for (const Case& c : cases)
    for (int depth : {1, 3}) {
      CAPTURE(c.tiers);
      CAPTURE(c.group);
      CAPTURE(depth);
      CpuBackend cpu(m.config(), m.globals(), 64, 1, KvType::F32, 2);
      CpuBackend cpu_tier(m.config(), m.globals(), 64, 1, KvType::F32, 2);
      GroupingBackend be(cpu, c.group);
      PipelineOptions opt;
      opt.cpu_backend = &cpu_tier;
      const TierPlan plan = plan_forced(m.map, mix(c.tiers), 2, 2, 4096);
      RunResult r = run_pipeline(plan, depth, opt, 0, &be);
      REQUIRE_MESSAGE(r.status.ok(), (r.status.ok() ? "" : r.status.error().message));
      REQUIRE(r.logits.size() == ref.size());
      CHECK(std::memcmp(r.logits.data(), ref.data(), ref.size() * sizeof(float)) == 0);
      // Every step (the prompt's and each token's) the same calls.
      REQUIRE(be.runs.size() == c.step.size() * kGenerated);
      for (size_t i = 0; i < be.runs.size(); ++i) CHECK(be.runs[i] == c.step[i % c.step.size()]);
    }
}

TEST_CASE("pipeline: a CPU-tier plan without a CPU backend is an error, not a hang") {
  const TierPlan plan = plan_forced(model().map, mix("AHAH"), 2, 2, 4096);
  RunResult r = run_pipeline(plan, 2);
  REQUIRE_FALSE(r.status.ok());
  CHECK(r.status.error().message.find("CPU backend") != std::string::npos);
  // A plan re-planned online may put layers on the CPU later: it needs one too.
  TierPlan online = plan_forced(model().map, mix("ABBB"), 2, 2, 4096);
  online.rebalance = true;
  RunResult r2 = run_pipeline(online, 2);
  REQUIRE_FALSE(r2.status.ok());
  CHECK(r2.status.error().message.find("re-planned online") != std::string::npos);
}

TEST_CASE("pipeline: random delays in every actor over thousands of layer passes") {
  const std::vector<float> ref = reference_logits();
  int layer_passes = 0;
  for (int round = 0; round < 60; ++round) {
    CAPTURE(round);
    const char* tiers = round % 3 == 0 ? "CCCC" : round % 3 == 1 ? "BCAC" : "CBBC";
    const TierPlan plan = plan_forced(model().map, mix(tiers), 1 + round % 3, 1 + round % 4, 4096);
    PipelineOptions opt;
    opt.wrap_source = [round](std::unique_ptr<BlockSource> s) -> std::unique_ptr<BlockSource> {
      FaultOptions f;
      f.seed = round;
      f.max_delay_us = 300;
      return std::make_unique<FaultySource>(std::move(s), model_path(), f);
    };
    RunResult r = run_pipeline(plan, 1 + round % 4, opt, 200);
    REQUIRE_MESSAGE(r.status.ok(), (r.status.ok() ? "" : r.status.error().message));
    CHECK(std::memcmp(r.logits.data(), ref.data(), ref.size() * sizeof(float)) == 0);
    layer_passes += kGenerated * 4;
  }
  MESSAGE(layer_passes << " layer passes under random delays, all correct");
}

namespace {

// Checks that a failing run ends within a second with an error that names
// the actor and the layer.
void expect_failure(const RunResult& r, double seconds, const std::string& actor) {
  REQUIRE_FALSE(r.status.ok());
  MESSAGE(r.status.error().message);
  CHECK(seconds < 1.0);
  CHECK(r.status.error().message.find(actor) != std::string::npos);
  CHECK(r.status.error().message.find("layer") != std::string::npos);
}

class FailingBackend final : public Backend {
 public:
  FailingBackend(Backend& inner, uint32_t fail_layer) : inner_(inner), fail_layer_(fail_layer) {}
  const char* name() const override { return "failing"; }
  Status begin(const Batch& b) override { return inner_.begin(b); }
  Status layer(uint32_t i, const LayerView& w) override {
    if (i == fail_layer_ && ++calls_ > 1) return make_error("injected kernel failure");
    return inner_.layer(i, w);
  }
  Status finish(float* l) override { return inner_.finish(l); }
  void clear_seq(int32_t s, int32_t f) override { inner_.clear_seq(s, f); }

 private:
  Backend& inner_;
  uint32_t fail_layer_;
  int calls_ = 0;
};

double time_it(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("pipeline: a read error (EIO) stops the run, naming the reader and the layer") {
  const TierPlan plan = plan_forced(model().map, mix("CCCC"), 2, 2, 4096);
  PipelineOptions opt;
  opt.wrap_source = [](std::unique_ptr<BlockSource> s) -> std::unique_ptr<BlockSource> {
    FaultOptions f;
    f.fail_request = 5;
    return std::make_unique<FaultySource>(std::move(s), model_path(), f);
  };
  RunResult r;
  const double s = time_it([&] { r = run_pipeline(plan, 3, opt); });
  expect_failure(r, s, "reader");
  CHECK(r.status.error().message.find("Input/output error") != std::string::npos);
}

TEST_CASE("pipeline: a short read stops the run, naming the reader and the layer") {
  const TierPlan plan = plan_forced(model().map, mix("CCCC"), 2, 2, 4096);
  PipelineOptions opt;
  opt.wrap_source = [](std::unique_ptr<BlockSource> s) -> std::unique_ptr<BlockSource> {
    FaultOptions f;
    f.short_request = 3;
    return std::make_unique<FaultySource>(std::move(s), model_path(), f);
  };
  RunResult r;
  const double s = time_it([&] { r = run_pipeline(plan, 3, opt); });
  expect_failure(r, s, "reader");
  CHECK(r.status.error().message.find("short read") != std::string::npos);
}

TEST_CASE("pipeline: an error inside compute stops the run, naming compute and the layer") {
  const Model& m = model();
  CpuBackend cpu(m.config(), m.globals(), 64, 1, KvType::F32, 2);
  FailingBackend failing(cpu, 2);
  const TierPlan plan = plan_forced(m.map, mix("ACBC"), 2, 2, 4096);
  RunResult r;
  const double s = time_it([&] { r = run_pipeline(plan, 4, {}, 0, &failing); });
  expect_failure(r, s, "compute");
  CHECK(r.status.error().message.find("layer 2") != std::string::npos);
  CHECK(r.status.error().message.find("injected kernel failure") != std::string::npos);
}

TEST_CASE("pipeline: the model file truncated while the run is going") {
  // A private copy, cut down under the running pipeline.
  const std::string copy = model_path() + ".trunc." + std::to_string(getpid());
  fs::copy_file(model_path(), copy, fs::copy_options::overwrite_existing);
  auto mr = open_model(copy);
  REQUIRE(mr.has_value());
  const Model& m = **mr;
  CpuBackend be(m.config(), m.globals(), 64, 1, KvType::F32, 2);
  const TierPlan plan = plan_forced(m.map, mix("CCCC"), 2, 2, 4096);
  Tracer tracer(false);
  RunControl rc;
  PipelineOptions opt;
  opt.n_ctx = 64;
  opt.source.log = false;
  // Depth 1: layer 1 of the next step is read only after the callback below
  // has cut the file, so the reader must see it. With read-ahead the whole
  // next step could be read before the cut, and compute would then read the
  // output norm from the cut-off end of the mmap: SIGBUS (seen under TSan).
  opt.depth = 1;
  auto p = Pipeline::start(m, be, plan, opt, tracer, rc);
  REQUIRE(p.has_value());
  const int V = static_cast<int>(m.config().n_vocab);
  int steps = 0;
  Status st;
  const double s = time_it([&] {
    auto pr = prompt();
    st =
        (*p)->run_request(pr, [&](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
          if (++steps == 2) REQUIRE(truncate(copy.c_str(), m.map.layers[1].ranges[0].offset) == 0);
          if (steps > 50) return std::nullopt;  // would run forever if truncation went unnoticed
          return argmax(l + static_cast<size_t>(rows - 1) * V, V);
        });
  });
  (*p)->stop();
  REQUIRE_FALSE(st.ok());
  MESSAGE(st.error().message);
  CHECK(st.error().message.find("reader") != std::string::npos);
  CHECK(st.error().message.find("layer") != std::string::npos);
  CHECK(s < 2.0);
  fs::remove(copy);
}
