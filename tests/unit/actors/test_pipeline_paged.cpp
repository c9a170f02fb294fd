// The paged key/value cache through the pipeline (actors/sampler.h,
// model/kv_blocks.h), on the CPU backend with f32 activations and cache:
//   - a pool smaller than slots × context, its blocks shuffled: every
//     sequence gives the same bits as run alone on the default pool, in
//     resident, streamed and hybrid plans (rows moving between the backends
//     through both tables), and the pool is empty once they have ended
//     (a cancelled one too);
//   - more slots than the pool can hold at once: sequences wait for blocks
//     and all finish, never more at once than the pool holds;
//   - the pool running dry mid-generation: the sequence that needs a block
//     ends with "kv cache full", the other goes on to its end (its tokens
//     those it gives alone), and the run goes on;
//   - refusals at submit (a prompt past the context, or past the pool) and
//     a request that could only wait for ever ends with the message at once;
//   - a chat's kept cache (run_request) holds its blocks between turns.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "actors/pipeline.h"
#include "model/cpu_backend.h"
#include "model/model.h"
#include "tests/unit/actors/seq_specs.h"
#include "tests/unit/test_models.h"

using namespace ls;

namespace {

const Model& model() {
  return test::tiny_model("ls_test_pipeline_paged");
}

using test::argmax;
using test::SeqSeen;
using test::SeqSpec;

struct RunSetup {
  uint32_t n_seq = 1;
  uint32_t kv_blocks = 0;  // 0: n_ctx positions a slot
  uint64_t kv_seed = 0;
  std::string tiers = "AAAA";
  int32_t chunk = 512;
  uint32_t n_ctx = 64;
};

struct RunResult {
  std::vector<SeqSeen> seen;
  KvUsage after;        // the pool once every sequence has ended
  int max_at_once = 0;  // sequences with rows in one step, at most
};

TierPlan plan_of(const Model& m, const std::string& tiers) {
  std::vector<Tier> t;
  for (char c : tiers)
    t.push_back(c == 'A'   ? Tier::Resident
                : c == 'B' ? Tier::Ram
                : c == 'H' ? Tier::Cpu
                           : Tier::Storage);
  return plan_forced(m.map, t, 2, 2, 4096);
}

// Runs the sequences, all submitted at once (n_seq 1: each alone, in turn).
RunResult run(const std::vector<SeqSpec>& sp, const RunSetup& su) {
  const Model& m = model();
  const int V = static_cast<int>(m.config().n_vocab);
  CpuBackend be(m.config(), m.globals(), su.n_ctx, su.n_seq, KvType::F32, 2, CpuAct::F32, {},
                su.kv_blocks);
  CpuBackend tier_be(m.config(), m.globals(), su.n_ctx, su.n_seq, KvType::F32, 2, CpuAct::F32, {},
                     su.kv_blocks);
  Tracer tracer(false);
  RunControl rc;
  PipelineOptions opt;
  opt.depth = 3;
  opt.n_ctx = su.n_ctx;
  opt.n_seq = su.n_seq;
  opt.chunk = su.chunk;
  opt.kv_seed = su.kv_seed;
  opt.source.log = false;
  if (su.tiers.find('H') != std::string::npos) opt.cpu_backend = &tier_be;
  auto p = Pipeline::start(m, be, plan_of(m, su.tiers), opt, tracer, rc);
  REQUIRE_MESSAGE(p.has_value(), (p ? "" : p.error().message));
  Pipeline& pl = **p;
  CHECK(pl.kv_blocks() == be.kv_pool_blocks());
  RunResult res;
  res.seen.resize(sp.size());
  std::vector<std::future<SeqEnd>> futs(sp.size());
  // Written after submit returns, read by the sampler's thread in the
  // callback, which may run first: -1 until then.
  std::vector<std::atomic<int64_t>> ids(sp.size());
  for (auto& id : ids) id.store(-1);
  std::map<int64_t, int> per_step;  // callbacks run on the sampler thread, one at a time
  auto submit = [&](size_t i) {
    SeqRequest r;
    r.prompt = sp[i].prompt;
    r.cb = [&, i, V](int64_t step, const float* l, int32_t rows) -> std::optional<int32_t> {
      res.max_at_once = std::max(res.max_at_once, ++per_step[step]);
      const float* last = l + static_cast<size_t>(rows - 1) * V;
      SeqSeen& s = res.seen[i];
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
    REQUIRE_MESSAGE(id.has_value(), (id ? "" : id.error().message));
    ids[i].store(static_cast<int64_t>(*id));
  };
  if (su.n_seq == 1) {
    for (size_t i = 0; i < sp.size(); ++i) {
      submit(i);
      auto e = pl.wait(futs[i]);
      REQUIRE_MESSAGE(e.has_value(), (e ? "" : e.error().message));
      res.seen[i].end = *e;
    }
  } else {
    for (size_t i = 0; i < sp.size(); ++i) submit(i);
    for (size_t i = 0; i < sp.size(); ++i) {
      auto e = pl.wait(futs[i]);
      REQUIRE_MESSAGE(e.has_value(), (e ? "" : e.error().message));
      res.seen[i].end = *e;
    }
  }
  res.after = pl.kv_usage();
  pl.stop();
  return res;
}


void check_same(const std::vector<SeqSpec>& sp, const RunResult& got, const RunResult& alone,
                const std::string& what) {
  for (size_t i = 0; i < sp.size(); ++i) {
    INFO(what << ", sequence " << i);
    CHECK(got.seen[i].end.error.empty());
    CHECK(got.seen[i].tokens == alone.seen[i].tokens);
    REQUIRE(got.seen[i].rows.size() == alone.seen[i].rows.size());
    CHECK(std::memcmp(got.seen[i].rows.data(), alone.seen[i].rows.data(),
                      alone.seen[i].rows.size() * sizeof(float)) == 0);
    CHECK(got.seen[i].end.pos == alone.seen[i].end.pos);
    CHECK(got.seen[i].end.cancelled == (sp[i].cancel_after > 0));
  }
  CHECK_MESSAGE(got.after.used == 0, what << ": " << got.after.used << " blocks still held");
}

}  // namespace

TEST_CASE(
    "pipeline paged: a small shuffled pool gives each sequence its bits alone, then empties") {
  const auto sp = test::seq_specs();
  const RunResult alone = run(sp, RunSetup{});
  CHECK(alone.after.total == 4);  // 64 positions: 4 blocks of 16, the default for one slot
  for (auto [n_seq, blocks, tiers, chunk] :
       {std::tuple{4u, 6u, "AAAA", 512}, std::tuple{4u, 6u, "ABCA", 8},
        std::tuple{3u, 5u, "AHBH", 6}, std::tuple{3u, 5u, "HCHA", 512}}) {
    RunSetup su;
    su.n_seq = n_seq;
    su.kv_blocks = blocks;
    su.kv_seed = 1234 + blocks;
    su.tiers = tiers;
    su.chunk = chunk;
    const RunResult got = run(sp, su);
    CHECK(got.after.total == blocks);
    check_same(sp, got, alone,
               std::to_string(n_seq) + " slots, " + std::to_string(blocks) + " blocks, tiers " +
                   tiers + ", chunk " + std::to_string(chunk));
  }
}

TEST_CASE("pipeline paged: more slots than the pool holds: sequences wait for blocks, all finish") {
  // 10-token prompts and 5 tokens each: 15 positions, one block over a
  // sequence's life. 8 slots, a pool of 3 blocks: 3 at once, the rest wait.
  std::vector<SeqSpec> sp;
  for (int i = 0; i < 8; ++i) {
    SeqSpec s{{1}, 5};
    for (int k = 1; k < 10; ++k) s.prompt.push_back(20 + 13 * i + k);
    sp.push_back(s);
  }
  const RunResult alone = run(sp, RunSetup{});
  RunSetup su;
  su.n_seq = 8;
  su.kv_blocks = 3;
  su.kv_seed = 5;
  const RunResult got = run(sp, su);
  check_same(sp, got, alone, "8 slots, 3 blocks");
  CHECK(got.max_at_once <= 3);
  CHECK(got.max_at_once >= 2);  // they did share steps
  MESSAGE("at most " << got.max_at_once << " sequences in a step");
}

TEST_CASE(
    "pipeline paged: the pool running dry ends the sequence that needs a block, not the run") {
  // Two sequences of 5-token prompts that want 40 tokens each (45 positions,
  // 3 blocks), a pool of 4 blocks: both get their second block; at position
  // 32 the first to need a third finds none and ends; its blocks let the
  // other go on to its end.
  std::vector<SeqSpec> sp = {{{1, 9, 8, 7, 6}, 40}, {{1, 30, 31, 32, 33}, 40}};
  const RunResult alone = run(sp, RunSetup{});
  RunSetup su;
  su.n_seq = 2;
  su.kv_blocks = 4;
  const RunResult got = run(sp, su);
  int ended = 0;
  for (size_t i = 0; i < sp.size(); ++i) {
    const SeqSeen& s = got.seen[i];
    const std::vector<int32_t>& a = alone.seen[i].tokens;
    INFO("sequence " << i << ": " << s.end.error);
    if (!s.end.error.empty()) {
      ++ended;
      CHECK(s.end.error.find("kv cache full: 4 blocks of 4 in use") != std::string::npos);
      CHECK(s.end.error.find("position 32") != std::string::npos);
      CHECK(s.end.pos == 32);
      CHECK_FALSE(s.end.cancelled);
      // What it gave before it ended is what it gives alone.
      REQUIRE(s.tokens.size() < a.size());
      CHECK(std::equal(s.tokens.begin(), s.tokens.end(), a.begin()));
    } else {
      CHECK(s.tokens == a);
      CHECK(s.end.pos == alone.seen[i].end.pos);
    }
  }
  CHECK(ended == 1);
  CHECK(got.after.used == 0);
}

TEST_CASE("pipeline paged: requests the pool or the context cannot hold are refused, never hang") {
  const Model& m = model();
  const int V = static_cast<int>(m.config().n_vocab);
  // A pool of 2 blocks (32 positions) for 2 slots of 64.
  CpuBackend be(m.config(), m.globals(), 64, 2, KvType::F32, 2, CpuAct::F32, {}, 2);
  Tracer tracer(false);
  RunControl rc;
  PipelineOptions opt;
  opt.n_ctx = 64;
  opt.n_seq = 2;
  opt.source.log = false;
  auto p = Pipeline::start(m, be, plan_of(m, "AAAA"), opt, tracer, rc);
  REQUIRE(p.has_value());
  Pipeline& pl = **p;
  CHECK(pl.kv_blocks() == 2);
  auto refused = [&](size_t n_prompt, const std::string& needle) {
    SeqRequest r;
    r.prompt.assign(n_prompt, 1);
    std::promise<SeqEnd> d;
    auto id = pl.submit(std::move(r), std::move(d));
    REQUIRE_FALSE(id.has_value());
    MESSAGE(id.error().message);
    CHECK(id.error().message.find(needle) != std::string::npos);
  };
  refused(65, "do not fit in the context");
  refused(40, "need 3 key/value blocks of 16 positions; the pool has 2");
  // 31 tokens fit (32 positions with the first token's); the next position
  // needs a third block: the sequence ends, saying so.
  auto go = [&](size_t n_prompt, int32_t slot = -1, uint32_t pos0 = 0) {
    SeqRequest r;
    r.prompt.assign(n_prompt, 3);
    r.slot = slot;
    r.pos0 = pos0;
    r.cb = [V](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
      return argmax(l + static_cast<size_t>(rows - 1) * V, V);
    };
    std::promise<SeqEnd> d;
    auto f = d.get_future();
    REQUIRE(pl.submit(std::move(r), std::move(d)).has_value());
    auto e = pl.wait(f);
    REQUIRE(e.has_value());
    return *e;
  };
  SeqEnd e = go(31);
  MESSAGE(e.error);
  CHECK(e.pos == 32);
  CHECK(e.error.find("kv cache full: 2 blocks of 2 in use") != std::string::npos);
  CHECK(pl.kv_usage().used == 0);
  // A request continuing positions its slot has not kept.
  e = go(3, 1, 10);
  CHECK(e.error.find("slot 1 keeps the keys and values of 0 positions") != std::string::npos);
  // The run goes on: a short one runs to the end of the pool again.
  e = go(4);
  CHECK(e.pos == 32);
  CHECK(pl.kv_usage().used == 0);
  CHECK_FALSE(rc.stopped());
  pl.stop();
}

TEST_CASE("pipeline paged: a chat's kept cache holds its blocks; a request only they block ends") {
  const Model& m = model();
  const int V = static_cast<int>(m.config().n_vocab);
  CpuBackend be(m.config(), m.globals(), 64, 2, KvType::F32, 2, CpuAct::F32, {}, 4);
  Tracer tracer(false);
  RunControl rc;
  PipelineOptions opt;
  opt.n_ctx = 64;
  opt.n_seq = 2;
  opt.source.log = false;
  auto p = Pipeline::start(m, be, plan_of(m, "AAAA"), opt, tracer, rc);
  REQUIRE(p.has_value());
  Pipeline& pl = **p;
  auto turn = [&](std::vector<int32_t> prompt, int n) {
    int steps = 0;
    return pl.run_request(prompt,
                          [&](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
                            if (++steps == n) return std::nullopt;
                            return argmax(l + static_cast<size_t>(rows - 1) * V, V);
                          });
  };
  // 40 prompt tokens and 5 more: 44 positions cached in slot 0, 3 blocks kept.
  REQUIRE(turn(std::vector<int32_t>(40, 7), 5).ok());
  CHECK(pl.n_past() == 44);
  CHECK(pl.kv_usage().used == 3);
  // Another sequence needs 2 blocks (20 tokens and the first token's
  // position): 1 is free and nothing runs that could free more.
  SeqRequest r;
  r.prompt.assign(20, 5);
  std::promise<SeqEnd> d;
  auto f = d.get_future();
  REQUIRE(pl.submit(std::move(r), std::move(d)).has_value());
  auto e = pl.wait(f);
  REQUIRE(e.has_value());
  MESSAGE(e->error);
  CHECK(e->error.find("kv cache full") != std::string::npos);
  CHECK(e->error.find("no sequence runs") != std::string::npos);
  CHECK(pl.kv_usage().used == 3);
  // The chat goes on from its kept cache: 3 tokens at 44 and one more (48
  // positions, still 3 blocks).
  REQUIRE(turn({5, 6, 7}, 2).ok());
  CHECK(pl.n_past() == 48);
  CHECK(pl.kv_usage().used == 3);
  // Slot 1 keeps a cache of its own (7 positions: the last free block).
  SeqRequest k;
  k.prompt = {1, 2, 3, 4, 5};
  k.slot = 1;
  k.keep_cache = true;
  int k_steps = 0;
  k.cb = [&](int64_t, const float*, int32_t) -> std::optional<int32_t> {
    if (++k_steps == 3) return std::nullopt;
    return 9;
  };
  std::promise<SeqEnd> kd;
  auto kf = kd.get_future();
  REQUIRE(pl.submit(std::move(k), std::move(kd)).has_value());
  auto ke = pl.wait(kf);
  REQUIRE(ke.has_value());
  CHECK(ke->pos == 7);
  CHECK(pl.kv_usage().used == 4);
  // The chat's next turn needs a 4th block: none is free, nothing runs to
  // free one: run_request says so at once.
  Status st = turn({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 30);
  REQUIRE_FALSE(st.ok());
  MESSAGE(st.error().message);
  CHECK(st.error().message.find("kv cache full") != std::string::npos);
  CHECK(pl.n_past() == 48);
  // Back to position 0: the slot's blocks go back as it starts over.
  pl.rewind();
  REQUIRE(turn({1, 2, 3}, 3).ok());
  CHECK(pl.n_past() == 5);
  CHECK(pl.kv_usage().used == 2);  // slot 1's kept block and the chat's one
  pl.stop();
}
