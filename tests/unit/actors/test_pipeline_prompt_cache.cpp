// Prompt caching through the pipeline (SeqRequest::reuse_prefix,
// actors/sampler.h), on the CPU backend with f32 activations and cache:
//   - a request whose prompt starts with a finished request's tokens (its
//     prompt and what it generated: a chat resent whole) takes that slot,
//     computes only the rest, and gives the bits of the same request on a
//     fresh pipeline;
//   - of several kept caches, the one sharing the most is taken; a prompt
//     sharing nothing computes everything;
//   - a prompt cache is given up, least recently kept first, when another
//     sequence needs its blocks, where a chat's kept cache is not.
#include <doctest/doctest.h>

#include <cstring>
#include <future>
#include <memory>
#include <vector>

#include "actors/pipeline.h"
#include "model/cpu_backend.h"
#include "model/model.h"
#include "tests/unit/test_models.h"

using namespace ls;

namespace {

const Model& model() {
  return test::tiny_model("ls_test_pipeline_prompt_cache");
}

using test::argmax;

// A plan of the tiny model's 4 layers: A resident, B streamed from RAM, H
// computed by the CPU tier (a backend of its own).
TierPlan plan_of(const Model& m, const std::string& tiers) {
  std::vector<Tier> t;
  for (char c : tiers) t.push_back(c == 'A' ? Tier::Resident : c == 'B' ? Tier::Ram : Tier::Cpu);
  return plan_forced(m.map, t, 2, 2, 4096);
}

struct Out {
  std::vector<int32_t> tokens;  // greedy, as sampled
  std::vector<float> rows;      // the last logits row of each step
  SeqEnd end;
};

// A pipeline of n_seq slots over n_ctx positions (kv_blocks: the pool).
struct Rig {
  CpuBackend be, tier;
  Tracer tracer{false};
  RunControl rc;
  std::unique_ptr<Pipeline> pl;
  Rig(uint32_t n_seq, uint32_t kv_blocks, const std::string& tiers = "AAAA")
      : be(model().config(), model().globals(), 64, n_seq, KvType::F32, 2, CpuAct::F32, {},
           kv_blocks),
        tier(model().config(), model().globals(), 64, n_seq, KvType::F32, 2, CpuAct::F32, {},
             kv_blocks) {
    PipelineOptions opt;
    opt.n_ctx = 64;
    opt.n_seq = n_seq;
    opt.kv_blocks = kv_blocks;
    opt.source.log = false;
    if (tiers.find('H') != std::string::npos) {
      opt.cpu_backend = &tier;
      opt.cpu_max_batch = 4;  // wider steps (the prompts) send the CPU tier's layers to slots
    }
    auto p = Pipeline::start(model(), be, plan_of(model(), tiers), opt, tracer, rc);
    REQUIRE_MESSAGE(p.has_value(), (p ? "" : p.error().message));
    pl = std::move(*p);
  }
  ~Rig() { pl->stop(); }
  // n greedy tokens after prompt; reuse: SeqRequest::reuse_prefix (and
  // keep_cache, as the serving core asks).
  Out run(const std::vector<int32_t>& prompt, int n, bool reuse = true, bool keep = true) {
    const int V = static_cast<int>(model().config().n_vocab);
    auto out = std::make_shared<Out>();
    SeqRequest r;
    r.prompt = prompt;
    r.reuse_prefix = reuse;
    r.keep_cache = keep;
    r.cb = [out, n, V](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
      const float* row = l + static_cast<size_t>(rows - 1) * V;
      out->rows.insert(out->rows.end(), row, row + V);
      out->tokens.push_back(argmax(row, V));
      if (static_cast<int>(out->tokens.size()) >= n) return std::nullopt;
      return out->tokens.back();
    };
    std::promise<SeqEnd> d;
    auto f = d.get_future();
    REQUIRE(pl->submit(std::move(r), std::move(d)).has_value());
    auto e = pl->wait(f);
    REQUIRE(e.has_value());
    out->end = *e;
    return *out;
  }
};

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("prompt cache: a resent conversation computes only what is new, with the same bits") {
  const std::vector<int32_t> p1 = {11, 22, 33, 44, 55, 66, 77, 88, 99, 12, 13, 14};
  const std::vector<int32_t> more = {101, 102, 103, 104, 105};
  // Resident, streamed and hybrid plans: in a hybrid one the prompts (wider
  // than one token) send the CPU tier's layers through the device slots and
  // the decoding tokens compute them on the CPU, so the cached rows a
  // request reuses were written on both sides.
  for (const char* tiers : {"AAAA", "AHBH", "HBHB"}) {
    CAPTURE(tiers);
    // Turn 1, then turn 2 = turn 1's prompt, its answer and new tokens.
    Rig cached(2, 0, tiers);
    const Out a = cached.run(p1, 6);
    CHECK(a.end.reused == 0);
    // The cache holds turn 1's prompt and the answer's tokens that were fed
    // (all but the last, which ended the sequence).
    const std::vector<int32_t> turn2 = cat(cat(p1, a.tokens), more);
    const Out b = cached.run(turn2, 5);
    CHECK(b.end.reused == p1.size() + a.tokens.size() - 1);
    CHECK(b.end.pos == turn2.size() + 4);
    // Its slot keeps the 27 positions (2 blocks of 16) for the next turn: a
    // prompt cache, not counted as held by sequences.
    KvUsage u = cached.pl->kv_usage();
    CHECK(u.used == 0);
    CHECK(u.cached == 2);
    // The same turn 2 alone on a fresh pipeline, computing everything.
    Rig fresh(2, 0, tiers);
    const Out ref = fresh.run(turn2, 5, false, false);
    CHECK(ref.end.reused == 0);
    CHECK(b.tokens == ref.tokens);
    REQUIRE(b.rows.size() == ref.rows.size());
    CHECK(std::memcmp(b.rows.data(), ref.rows.data(), ref.rows.size() * sizeof(float)) == 0);
  }
}

TEST_CASE(
    "prompt cache: the slot sharing the most is taken; the same prompt again recomputes "
    "only its last token") {
  const std::vector<int32_t> x = {5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<int32_t> y = {5, 6, 7, 40, 41, 42, 43};
  Rig r(3, 0);
  const Out ax = r.run(x, 3);
  const Out ay = r.run(y, 3);  // shares 3 tokens with x's cache: takes that slot
  CHECK(ay.end.reused == 3);
  // x's slot was taken by y: a prompt starting as x now shares 3 with y's
  // cache (the only one that starts with 5, 6, 7).
  const Out ax2 = r.run(cat(x, {1, 2}), 2);
  CHECK(ax2.end.reused == 3);
  // The same prompt as the last request: all but its last token reused, and
  // the first token sampled is the one that request sampled.
  const std::vector<int32_t> again = cat(x, {1, 2});
  const Out ax3 = r.run(again, 2);
  CHECK(ax3.end.reused == again.size() - 1);
  CHECK(ax3.tokens == ax2.tokens);
  // Nothing shared: computed whole.
  const Out z = r.run({70, 71, 72}, 2);
  CHECK(z.end.reused == 0);
  // Without reuse_prefix nothing is taken, even where it could be.
  const Out w = r.run(again, 2, false);
  CHECK(w.end.reused == 0);
  CHECK(w.tokens == ax2.tokens);
  (void)ax;
}

TEST_CASE(
    "prompt cache: given up, least recently kept first, for a sequence that needs its "
    "blocks; a chat's kept cache is not") {
  // A pool of 4 blocks (16 positions each) for 3 slots.
  Rig r(3, 4);
  std::vector<int32_t> p20(20), q20(20), s20(20);
  for (int i = 0; i < 20; ++i) p20[i] = 100 + i, q20[i] = 200 + i, s20[i] = 300 + i;
  r.run(p20, 3);  // slot 0: 22 positions kept, 2 blocks
  r.run(q20, 3);  // slot 1: 2 blocks; the pool is full
  KvUsage u = r.pl->kv_usage();
  CHECK(u.used == 0);
  CHECK(u.cached == 4);
  // A third prompt needs 2 blocks: the least recently kept cache (p20's)
  // goes, q20's stays.
  const Out s = r.run(s20, 3);
  CHECK(s.end.error.empty());
  CHECK(s.end.reused == 0);
  const Out q2 = r.run(cat(q20, {1}), 2);
  CHECK(q2.end.reused == 20);
  const Out p2 = r.run(cat(p20, {1}), 2);
  CHECK(p2.end.reused == 0);
  // A chat's kept cache (keep_cache without reuse_prefix) holds its blocks:
  // a request they alone block ends, saying so.
  Rig c(2, 3);
  c.run(p20, 12, false, true);  // 31 positions kept in slot 0: 2 blocks, pinned
  const Out blocked = c.run(q20, 3);
  MESSAGE(blocked.end.error);
  CHECK(blocked.end.error.find("kv cache full") != std::string::npos);
}

TEST_CASE(
    "prompt cache: a decoding sequence that needs a block takes one from a prompt cache, "
    "and does not end") {
  // 3 blocks of 16 positions for 2 slots.
  Rig r(2, 3);
  std::vector<int32_t> p20(20), q10(10);
  for (int i = 0; i < 20; ++i) p20[i] = 100 + i;
  for (int i = 0; i < 10; ++i) q10[i] = 200 + i;
  r.run(p20, 3);  // slot 0 keeps 22 positions: 2 blocks; 1 free
  CHECK(r.pl->kv_usage().cached == 2);
  // 10 prompt tokens and 30 more: positions up to 40, 3 blocks. The second
  // block (position 16) comes from the prompt cache.
  const Out b = r.run(q10, 31, true, false);
  CHECK(b.end.error.empty());
  CHECK(b.end.pos == 40);
  CHECK(b.tokens.size() == 31);
  // The cache that gave its blocks is gone.
  const Out again = r.run(cat(p20, {1}), 2);
  CHECK(again.end.reused == 0);
}
