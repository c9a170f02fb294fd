// Many sequences through one pipeline (continuous batching, actors/sampler.h):
// each greedy sequence gives the same logits, bit for bit, as the same
// sequence run alone — with more sequences than slots (the rest wait and
// join as others leave), different prompt lengths and lengths of output,
// a prompt fed in chunks beside decoding sequences, a cancelled sequence,
// streamed tiers, and CPU-tier layers whose key/value rows move between the
// backends per sequence. The CPU backend with f32 activations (the oracle) and
// with 8-bit ones: both compute each row independently of its batch; and on
// a Q4_K_M model the 8-bit ones in either form of kernels/cpu/q8_chunks.h.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "actors/pipeline.h"
#include "kernels/cpu/q8_chunks.h"
#include "model/cpu_backend.h"
#include "model/model.h"
#include "tests/unit/actors/seq_specs.h"
#include "tests/unit/test_models.h"

using namespace ls;

namespace {

const Model& model(const std::string& quant = "q8_0") {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto& m = models[quant];
  if (!m) {
    auto r = open_model(test::tiny_model_path("ls_test_pipeline_batch", quant));
    REQUIRE(r.has_value());
    m = std::move(*r);
  }
  return *m;
}

using test::argmax;
using test::SeqSeen;
using test::SeqSpec;

// Runs the sequences on a pipeline of n_seq slots (1: each alone, in turn).
// width_cpu_layers: CPU-tier layers a step of 2+ tokens keeps on the CPU
// (-1: as the routing by width measures, PipelineOptions).
std::vector<SeqSeen> run(const std::vector<SeqSpec>& sp, uint32_t n_seq, const std::string& tiers,
                         CpuAct act, int32_t chunk, int32_t width_cpu_layers = -1,
                         const std::string& quant = "q8_0") {
  const Model& m = model(quant);
  const int V = static_cast<int>(m.config().n_vocab);
  CpuBackend be(m.config(), m.globals(), 64, n_seq, KvType::F32, 2, act);
  // The CPU tier's own backend (tiers with H): its cache holds those layers'
  // rows, which follow a layer sent through the slots in a wide step.
  CpuBackend tier_be(m.config(), m.globals(), 64, n_seq, KvType::F32, 2, act);
  Tracer tracer(false);
  RunControl rc;
  PipelineOptions opt;
  opt.depth = 3;
  opt.n_ctx = 64;
  opt.n_seq = n_seq;
  opt.chunk = chunk;
  opt.width_cpu_layers = width_cpu_layers;
  opt.source.log = false;
  std::vector<Tier> t;
  for (char c : tiers)
    t.push_back(c == 'A'   ? Tier::Resident
                : c == 'B' ? Tier::Ram
                : c == 'H' ? Tier::Cpu
                           : Tier::Storage);
  if (tiers.find('H') != std::string::npos) opt.cpu_backend = &tier_be;
  auto p = Pipeline::start(m, be, plan_forced(m.map, t, 2, 2, 4096), opt, tracer, rc);
  REQUIRE(p.has_value());
  Pipeline& pl = **p;
  std::vector<SeqSeen> seen(sp.size());
  std::vector<std::future<SeqEnd>> futs(sp.size());
  // Written after submit returns, read by the sampler's thread in the
  // callback, which may run first: -1 until then.
  std::vector<std::atomic<int64_t>> ids(sp.size());
  for (auto& id : ids) id.store(-1);
  auto submit = [&](size_t i) {
    SeqRequest r;
    r.prompt = sp[i].prompt;
    r.cb = [&, i, V](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
      const float* last = l + static_cast<size_t>(rows - 1) * V;
      SeqSeen& s = seen[i];
      s.rows.insert(s.rows.end(), last, last + V);
      s.tokens.push_back(argmax(last, V));
      if (static_cast<int>(s.tokens.size()) == sp[i].cancel_after) {
        int64_t id;
        while ((id = ids[i].load()) < 0) std::this_thread::yield();
        pl.cancel(static_cast<uint64_t>(id));
      }
      if (static_cast<int>(s.tokens.size()) >= sp[i].n_out) return std::nullopt;
      return s.tokens.back();
    };
    std::promise<SeqEnd> done;
    futs[i] = done.get_future();
    auto id = pl.submit(std::move(r), std::move(done));
    REQUIRE(id.has_value());
    ids[i].store(static_cast<int64_t>(*id));
  };
  if (n_seq == 1) {
    for (size_t i = 0; i < sp.size(); ++i) {
      submit(i);
      auto e = pl.wait(futs[i]);
      REQUIRE(e.has_value());
      seen[i].end = *e;
    }
  } else {
    // The first half now, the rest once the first sequence has ended: they
    // join a running batch.
    const size_t half = sp.size() / 2;
    for (size_t i = 0; i < half; ++i) submit(i);
    auto e0 = pl.wait(futs[0]);
    REQUIRE(e0.has_value());
    seen[0].end = *e0;
    for (size_t i = half; i < sp.size(); ++i) submit(i);
    for (size_t i = 1; i < sp.size(); ++i) {
      auto e = pl.wait(futs[i]);
      REQUIRE(e.has_value());
      seen[i].end = *e;
    }
  }
  pl.stop();
  return seen;
}

}  // namespace

TEST_CASE("pipeline batch: each sequence in a batch equals the sequence run alone, bit for bit") {
  const auto sp = test::seq_specs();
  for (CpuAct act : {CpuAct::F32, CpuAct::Q8}) {
    const char* an = act == CpuAct::F32 ? "f32" : "q8";
    // Cancelling from the callback ends the sequence at the next step in
    // both runs, so each sees the same rows.
    const auto alone = run(sp, 1, "AAAA", act, 512);
    // Hybrid plans (H): a step keeps as many CPU-tier layers on the CPU as
    // its width pays for (measured, or forced to 1 or 2 of 3 here) and sends
    // the others through the slots, each sequence's rows following them;
    // prompts over 64 tokens send all of them. A chunk is the step's cap
    // (decoding rows and prompt tokens beside them); 2 below 3 slots: prompts
    // wait for a step with room.
    struct Case {
      unsigned n_seq;
      const char* tiers;
      int chunk, keep;
    };
    for (const Case& c :
         {Case{3u, "AAAA", 512, -1}, Case{3u, "ABCA", 7, -1}, Case{8u, "AAAA", 10, -1},
          Case{4u, "AHBH", 7, -1}, Case{3u, "HCHA", 512, -1}, Case{4u, "HHBH", 7, 1},
          Case{5u, "HHBH", 512, 2}, Case{3u, "AHBH", 2, -1}}) {
      const auto batch = run(sp, c.n_seq, c.tiers, act, c.chunk, c.keep);
      for (size_t i = 0; i < sp.size(); ++i) {
        INFO(std::string(an) << " activations, " << c.n_seq << " slots, tiers " << c.tiers
                             << ", chunk " << c.chunk << ", CPU layers kept " << c.keep
                             << ", sequence " << i);
        CHECK(batch[i].tokens == alone[i].tokens);
        REQUIRE(batch[i].rows.size() == alone[i].rows.size());
        CHECK(std::memcmp(batch[i].rows.data(), alone[i].rows.data(),
                          alone[i].rows.size() * sizeof(float)) == 0);
        CHECK(batch[i].end.cancelled == (sp[i].cancel_after > 0));
        CHECK(batch[i].end.pos == alone[i].end.pos);
      }
    }
    // The cancelled sequence stopped at its cancel, not at its n_out.
    CHECK(alone[3].tokens.size() == 3);
  }
}

TEST_CASE("pipeline batch: bad requests are refused with a message, and the run goes on") {
  const Model& m = model();
  CpuBackend be(m.config(), m.globals(), 16, 2, KvType::F32, 2);
  Tracer tracer(false);
  RunControl rc;
  PipelineOptions opt;
  opt.n_ctx = 16;
  opt.n_seq = 2;
  opt.source.log = false;
  auto p = Pipeline::start(
      m, be, plan_forced(m.map, std::vector<Tier>(m.config().n_layer, Tier::Resident), 2, 2, 4096),
      opt, tracer, rc);
  REQUIRE(p.has_value());
  Pipeline& pl = **p;
  auto refused = [&](SeqRequest r, const std::string& needle) {
    std::promise<SeqEnd> d;
    auto id = pl.submit(std::move(r), std::move(d));
    REQUIRE_FALSE(id.has_value());
    CHECK_MESSAGE(id.error().message.find(needle) != std::string::npos, id.error().message);
  };
  refused(SeqRequest{}, "empty");
  SeqRequest long_one;
  long_one.prompt.assign(17, 1);
  refused(long_one, "do not fit in the context");
  SeqRequest bad_slot;
  bad_slot.prompt = {1};
  bad_slot.slot = 2;
  refused(bad_slot, "sequence slot 2");
  // A good one still runs, and its context's end ends it.
  SeqRequest ok_one;
  ok_one.prompt = {1, 2, 3};
  ok_one.cb = [](int64_t, const float*, int32_t) -> std::optional<int32_t> { return 5; };
  std::promise<SeqEnd> d;
  auto f = d.get_future();
  REQUIRE(pl.submit(std::move(ok_one), std::move(d)).has_value());
  auto e = pl.wait(f);
  REQUIRE(e.has_value());
  CHECK(e->pos == 16);
  CHECK_FALSE(e->cancelled);
  pl.stop();
}

TEST_CASE("pipeline batch: the chunk form on a Q4_K_M model, batch equal to alone") {
  const auto sp = test::seq_specs();
  const auto lanes = run(sp, 1, "AAAA", CpuAct::Q8, 512, -1, "q4_k_m");
  struct Chunks {  // the form for this case only, whatever fails in it
    Chunks() { cpu_q8_chunks_override(true); }
    ~Chunks() { cpu_q8_chunks_override(std::nullopt); }
  } chunks_on;
  const auto alone = run(sp, 1, "AAAA", CpuAct::Q8, 512, -1, "q4_k_m");
  // The form took effect: its logits are not the lane form's.
  REQUIRE(alone[0].rows.size() == lanes[0].rows.size());
  CHECK(std::memcmp(alone[0].rows.data(), lanes[0].rows.data(),
                    lanes[0].rows.size() * sizeof(float)) != 0);
  struct Case {
    unsigned n_seq;
    const char* tiers;
    int chunk;
  };
  for (const Case& c : {Case{8u, "AAAA", 2}, Case{4u, "AHBH", 3}, Case{5u, "HHBH", 512}}) {
    const auto batch = run(sp, c.n_seq, c.tiers, CpuAct::Q8, c.chunk, -1, "q4_k_m");
    for (size_t i = 0; i < sp.size(); ++i) {
      INFO(c.n_seq << " slots, tiers " << c.tiers << ", chunk " << c.chunk << ", sequence " << i);
      CHECK(batch[i].tokens == alone[i].tokens);
      REQUIRE(batch[i].rows.size() == alone[i].rows.size());
      CHECK(std::memcmp(batch[i].rows.data(), alone[i].rows.data(),
                        alone[i].rows.size() * sizeof(float)) == 0);
    }
  }
}

namespace {
// Forwards to a backend and keeps the width of every step it begins.
class WidthBackend final : public Backend {
 public:
  explicit WidthBackend(Backend& inner) : in_(inner) {}
  const char* name() const override { return "widths"; }
  Status begin(const Batch& b) override {
    widths.push_back(b.size());
    return in_.begin(b);
  }
  Status layer(uint32_t i, const LayerView& w) override { return in_.layer(i, w); }
  Status finish(float* l) override { return in_.finish(l); }
  void clear_seq(int32_t s, int32_t from) override { in_.clear_seq(s, from); }
  std::vector<size_t> widths;  // written by the compute actor, read after stop

 private:
  Backend& in_;
};
}  // namespace

TEST_CASE("pipeline batch: no step holds more than the step cap; a long prompt goes in steps") {
  // The cap is what the device's activations are sized for (step_tokens_max):
  // a step past it grew them beyond the tier plan (session 44). Prompts of 17,
  // 9 and 2 tokens at once, and then alone, each with 3 new tokens.
  const Model& m = model();
  const int V = static_cast<int>(m.config().n_vocab);
  for (int32_t cap : {5, 3}) {
    for (uint32_t together : {3u, 1u}) {
      CpuBackend cpu(m.config(), m.globals(), 64, 3, KvType::F32, 2);
      WidthBackend be(cpu);
      Tracer tracer(false);
      RunControl rc;
      PipelineOptions opt;
      opt.n_ctx = 64;
      opt.n_seq = 3;
      opt.chunk = cap;
      opt.source.log = false;
      auto p = Pipeline::start(
          m, be,
          plan_forced(m.map, std::vector<Tier>(m.config().n_layer, Tier::Resident), 2, 2, 4096),
          opt, tracer, rc);
      REQUIRE(p.has_value());
      const std::vector<std::vector<int32_t>> prompts = {
          {1, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35},
          {1, 40, 41, 42, 43, 44, 45, 46, 47},
          {1, 60}};
      std::vector<std::future<SeqEnd>> futs;
      std::vector<int> made(prompts.size(), 0);
      for (size_t i = 0; i < prompts.size(); ++i) {
        SeqRequest r;
        r.prompt = prompts[i];
        r.cb = [&made, i, V](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
          if (++made[i] > 3) return std::nullopt;
          return argmax(l + static_cast<size_t>(rows - 1) * V, V);
        };
        std::promise<SeqEnd> done;
        futs.push_back(done.get_future());
        REQUIRE((*p)->submit(std::move(r), std::move(done)).has_value());
        if (together == 1) REQUIRE((*p)->wait(futs.back()).has_value());
      }
      for (auto& f : futs)
        if (f.valid() && together != 1) REQUIRE((*p)->wait(f).has_value());
      (*p)->stop();
      INFO("cap " << cap << ", " << together << " submitted together");
      size_t widest = 0, total = 0;
      for (size_t w : be.widths) widest = std::max(widest, w), total += w;
      CHECK(widest == static_cast<size_t>(cap));  // full steps, none past it
      CHECK(total == 17 + 9 + 2 + 3 * 3);         // every prompt token and new token, once
    }
  }
}
