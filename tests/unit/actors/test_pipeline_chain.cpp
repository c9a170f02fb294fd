// Chained greedy steps through the compute actor (Backend::can_chain,
// begin_chained, adopt_chained; actors/compute.cpp): a backend that chains
// begins each greedy step's successor behind its head, and the sampler's
// batch either is that step (adopted) or is not (the step is dropped and the
// batch begins as usual: a sequence joining, a chat's next request). The
// CUDA backend chains on the device (tests/gpu/test_cuda_backend.cpp); here
// a CPU backend behind a wrapper that chains on the host runs the actor's
// protocol in CI: every sequence's tokens equal a plain backend's, and the
// wrapper counts what the actor did.
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "actors/pipeline.h"
#include "kernels/kv_pages.h"
#include "model/cpu_backend.h"
#include "model/model.h"
#include "tests/unit/test_models.h"

using namespace ls;

namespace {

const Model& model() {
  return test::tiny_model("ls_test_pipeline_chain");
}

// A CPU backend that chains: the argmax is known when its head is issued,
// so begin_chained begins the next batch at once; adopt_chained compares.
class HostChain final : public Backend {
 public:
  HostChain(CpuBackend& be, uint32_t n_ctx, uint32_t n_seq)
      : be_(be), n_ctx_(n_ctx), n_seq_(n_seq) {}
  const char* name() const override { return "host-chain"; }
  Status begin(const Batch& b) override {
    chained_ = false;
    batch_ = b;
    return be_.begin(b);
  }
  Status layer(uint32_t i, const LayerView& w) override { return be_.layer(i, w); }
  Status finish(float* logits) override { return be_.finish(logits); }
  void clear_seq(int32_t seq, int32_t from) override { be_.clear_seq(seq, from); }
  uint32_t kv_pool_blocks() const override { return be_.kv_pool_blocks(); }

  bool can_chain() const override {
    if (batch_.size() != 1 || !batch_.argmax_only || batch_.n_logits() != 1) return false;
    const int32_t next = batch_.pos[0] + 1;
    if (static_cast<uint32_t>(next) >= n_ctx_) return false;
    if (batch_.kv_table.empty()) return true;
    const size_t per = batch_.kv_table.size() / n_seq_;  // the slot's block of the next position
    return batch_.kv_table[static_cast<size_t>(batch_.seq[0]) * per + (next >> kKvBlockShift)] >= 0;
  }
  Status finish_argmax_issue(int32_t n_rows, int32_t n_vocab) override {
    ids_.assign(static_cast<size_t>(n_rows), -1);
    return Backend::finish_argmax(ids_.data(), n_rows, n_vocab);
  }
  Status finish_argmax_wait(int32_t* ids) override {
    std::copy(ids_.begin(), ids_.end(), ids);
    return ok();
  }
  Status begin_chained() override {
    if (!can_chain()) return make_error("host-chain: cannot chain");
    Batch n = batch_;
    n.pos[0] += 1;
    n.token[0] = ids_[0];
    LS_TRY(be_.begin(n));
    batch_ = n;
    chained_ = true;
    ++begun;
    return ok();
  }
  bool adopt_chained(const Batch& b) override {
    if (!chained_) return false;
    chained_ = false;
    const bool same = b.size() == 1 && b.seq == batch_.seq && b.pos == batch_.pos &&
                      b.token == batch_.token && b.argmax_only &&
                      (b.kv_table.empty() || b.kv_table == batch_.kv_table);
    ++(same ? adopted : dropped);
    return same;
  }

  std::atomic<int> begun{0}, adopted{0}, dropped{0};

 private:
  CpuBackend& be_;
  uint32_t n_ctx_, n_seq_;
  Batch batch_;
  std::vector<int32_t> ids_;
  bool chained_ = false;
};

struct Run {
  std::vector<std::vector<int32_t>> tokens;
  int begun = 0, adopted = 0, dropped = 0;
};

// Greedy sequences of n_out tokens each; sequence i > 0 is submitted once
// sequence 0 has given join_after tokens (0: all at once). chain: through
// HostChain.
Run run(const std::vector<std::vector<int32_t>>& prompts, int n_out, int join_after, bool chain) {
  const Model& m = model();
  const uint32_t n_seq = static_cast<uint32_t>(prompts.size()), n_ctx = 64;
  CpuBackend cpu(m.config(), m.globals(), n_ctx, n_seq, KvType::F32, 2, CpuAct::F32);
  HostChain hc(cpu, n_ctx, n_seq);
  Backend& be = chain ? static_cast<Backend&>(hc) : cpu;
  Tracer tracer(false);
  RunControl rc;
  PipelineOptions opt;
  opt.depth = 2;
  opt.n_ctx = n_ctx;
  opt.n_seq = n_seq;
  opt.source.log = false;
  std::vector<Tier> t(m.config().n_layer, Tier::Resident);
  auto p = Pipeline::start(m, be, plan_forced(m.map, t, 2, 2, 4096), opt, tracer, rc);
  REQUIRE(p.has_value());
  Run res;
  res.tokens.resize(prompts.size());
  std::promise<void> joined;
  std::future<void> join = joined.get_future();
  std::vector<std::future<SeqEnd>> futs;
  auto submit = [&](size_t i) {
    SeqRequest r;
    r.prompt = prompts[i];
    r.slot = static_cast<int32_t>(i);
    r.cb = [](int64_t, const float*, int32_t) -> std::optional<int32_t> {
      FAIL("a greedy step gave rows");
      return std::nullopt;
    };
    r.on_argmax = [&res, &joined, i, n_out, join_after](int64_t,
                                                        int32_t tok) -> std::optional<int32_t> {
      res.tokens[i].push_back(tok);
      const int n = static_cast<int>(res.tokens[i].size());
      if (i == 0 && n == join_after) joined.set_value();
      if (n >= n_out) return std::nullopt;
      return tok;
    };
    std::promise<SeqEnd> done;
    futs.push_back(done.get_future());
    REQUIRE((*p)->submit(std::move(r), std::move(done)).has_value());
  };
  submit(0);
  if (prompts.size() > 1) {
    if (join_after > 0) join.wait();
    for (size_t i = 1; i < prompts.size(); ++i) submit(i);
  }
  for (auto& f : futs) REQUIRE((*p)->wait(f).has_value());
  (*p)->stop();
  res.begun = hc.begun.load();
  res.adopted = hc.adopted.load();
  res.dropped = hc.dropped.load();
  return res;
}

}  // namespace

TEST_CASE("pipeline chain: chained greedy steps give every sequence the tokens of plain steps") {
  SUBCASE("one sequence") {
    const std::vector<std::vector<int32_t>> pr = {{1, 17, 42, 99}};
    const Run plain = run(pr, 20, 0, false), chained = run(pr, 20, 0, true);
    CHECK(chained.tokens == plain.tokens);
    // The prompt's step cannot chain, nor a step whose next position is in
    // a block the sequence does not hold yet (position 16); every other
    // decode step begins its successor, and the sampler's batch is that step
    // every time but after the last token, whose successor stays begun.
    CHECK(chained.begun == 18);
    CHECK(chained.adopted == chained.begun - 1);
    CHECK(chained.dropped == 0);
  }
  SUBCASE("a sequence joins one that is decoding: the chained step is dropped, then chains again") {
    const std::vector<std::vector<int32_t>> pr = {{1, 17, 42, 99}, {1, 3, 250}};
    const Run plain = run(pr, 24, 6, false), chained = run(pr, 24, 6, true);
    CHECK(chained.tokens == plain.tokens);
    CHECK(chained.dropped >= 1);  // the step the second prompt joined
    CHECK(chained.adopted >= 4);  // sequence 0 alone before it
    MESSAGE("begun " << chained.begun << ", adopted " << chained.adopted << ", dropped "
                     << chained.dropped);
  }
}

TEST_CASE("pipeline chain: a chat's requests on one slot, each after a chained run") {
  const Model& m = model();
  auto turns = [&](bool chain) {
    CpuBackend cpu(m.config(), m.globals(), 64, 1, KvType::F32, 2, CpuAct::F32);
    HostChain hc(cpu, 64, 1);
    Backend& be = chain ? static_cast<Backend&>(hc) : cpu;
    Tracer tracer(false);
    RunControl rc;
    PipelineOptions opt;
    opt.depth = 2;
    opt.n_ctx = 64;
    opt.source.log = false;
    std::vector<Tier> t(m.config().n_layer, Tier::Resident);
    auto p = Pipeline::start(m, be, plan_forced(m.map, t, 2, 2, 4096), opt, tracer, rc);
    REQUIRE(p.has_value());
    std::vector<int32_t> out;
    for (const std::vector<int32_t>& prompt :
         std::vector<std::vector<int32_t>>{{1, 5, 9}, {7, 8}, {300, 301, 302, 303}}) {
      int n = 0;
      auto on_argmax = [&](int64_t, int32_t tok) -> std::optional<int32_t> {
        out.push_back(tok);
        return ++n < 7 ? std::optional<int32_t>(tok) : std::nullopt;
      };
      auto rows = [](int64_t, const float*, int32_t) -> std::optional<int32_t> {
        return std::nullopt;
      };
      REQUIRE((*p)->run_request(prompt, rows, SIZE_MAX, on_argmax).ok());
    }
    (*p)->stop();
    return std::make_tuple(out, hc.adopted.load(), hc.dropped.load());
  };
  const auto [plain, none, none_dropped] = turns(false);
  const auto [chained, adopted, dropped] = turns(true);
  CHECK(none + none_dropped == 0);
  CHECK(chained == plain);
  // Each turn: 7 tokens, 6 decode steps that chain but the last (at a block's
  // edge, position 15, none); the last one's successor is dropped by the next
  // turn's prompt.
  CHECK(adopted >= 12);
  CHECK(dropped == 2);
}
