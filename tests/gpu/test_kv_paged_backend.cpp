// GPU tests of the paged key/value cache end to end (model/cuda_kv_pool.cuh,
// actors/sampler.h):
//   backend    a small shuffled pool gives the default pool's logits bit for
//              bit (prefill on the tensor cores and CUDA-graph decode, f16 and
//              f32); read_kv and write_kv go through the table; a position
//              without a block is an error.
//   pipeline   sequences in a small pool give the tokens they give alone (more
//              slots than the pool holds: they wait); the pool running dry
//              ends the sequence that needs a block, with the message, and the
//              other runs to its end.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "actors/pipeline.h"
#include "kernels/half.h"
#include "model/cuda_backend.h"
#include "model/kv_blocks.h"
#include "model/model.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/unit/test_models.h"

using namespace ls;
using namespace ls::gpu_test;

namespace {

int32_t argmax_row(const float* x, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

std::unique_ptr<Model> tiny(const std::string& quant) {
  auto m = open_model(test::tiny_model_path("ls_gpu_test_kv_paged", quant));
  REQUIRE(m.has_value());
  return std::move(*m);
}

// Two sequences through a backend: slot 1 a 100-token prompt, slot 0 a
// 20-token one, in one batch (f16: the tensor-core prefill), then 24 greedy
// steps of both (CUDA graphs). table: the sampler's bookkeeping for a paged
// run (null: no table sent, the backend's default pool). Returns every
// logits row.
std::vector<float> two_sequences(const Model& m, Backend& be, KvBlockTable* table) {
  const int V = static_cast<int>(m.config().n_vocab);
  Batch b;
  for (int i = 0; i < 100; ++i) b.add((i * 37 + 11) % V, i, 1, i == 99);
  for (int i = 0; i < 20; ++i) b.add((i * 53 + 5) % V, i, 0, i == 19);
  if (table) {
    REQUIRE(table->reserve(1, 101));
    REQUIRE(table->reserve(0, 21));
    b.kv_table = table->table();
  }
  std::vector<float> all, row(2 * V);
  REQUIRE(forward_resident(m, be, b, row.data()).ok());
  for (int step = 0; step < 24; ++step) {
    all.insert(all.end(), row.begin(), row.end());
    Batch d;  // rows: slot 1's, then slot 0's, as in the prompt's batch
    d.add(argmax_row(row.data(), V), 100 + step, 1, true);
    d.add(argmax_row(row.data() + V, V), 20 + step, 0, true);
    if (table) {
      REQUIRE(table->reserve(0, 21 + step));
      REQUIRE(table->reserve(1, 101 + step));
      d.kv_table = table->table();
    }
    REQUIRE(forward_resident(m, be, d, row.data()).ok());
  }
  return all;
}

}  // namespace

TEST_CASE(
    "cuda backend paged: a small shuffled pool gives the default pool's logits, bit for bit") {
  LS_GPU_TEST_GUARD();
  auto m = tiny("q8_0");
  const LlamaConfig& c = m->config();
  for (KvType type : {KvType::F16, KvType::F32}) {
    CAPTURE(type == KvType::F16);
    CudaBackendOptions co;
    co.n_ctx = 256;
    co.n_seq = 3;
    co.kv_type = type;
    auto dflt = CudaBackend::create(*m, co);
    REQUIRE_MESSAGE(dflt.has_value(), (dflt ? "" : dflt.error().message));
    CHECK((*dflt)->kv_pool_blocks() == 3 * 16);
    co.kv_blocks = 13;  // 124 + 44 positions: 8 + 3 blocks, and 2 spare
    auto paged = CudaBackend::create(*m, co);
    REQUIRE_MESSAGE(paged.has_value(), (paged ? "" : paged.error().message));
    CHECK((*paged)->kv_pool_blocks() == 13);
    KvBlockTable table(3, 256, 13, 4321);
    const auto want = two_sequences(*m, **dflt, nullptr);
    const auto got = two_sequences(*m, **paged, &table);
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);

    // read_kv through the table: the same rows as the default pool's.
    const uint32_t E = c.n_embd_kv();
    std::vector<float> k1(124 * E), v1(124 * E), k2(124 * E), v2(124 * E);
    for (uint32_t l : {0u, c.n_layer - 1}) {
      REQUIRE((*dflt)->read_kv(l, 1, 0, 124, k1.data(), v1.data()).ok());
      REQUIRE((*paged)->read_kv(l, 1, 0, 124, k2.data(), v2.data()).ok());
      CHECK(std::memcmp(k1.data(), k2.data(), k1.size() * 4) == 0);
      CHECK(std::memcmp(v1.data(), v2.data(), v1.size() * 4) == 0);
    }
    // write_kv then read_kv: sequence 0's positions 3..40 (over 3 blocks).
    std::vector<float> wk(37 * E), wv(37 * E), rk(37 * E), rv(37 * E);
    for (size_t i = 0; i < wk.size(); ++i) {
      wk[i] = fp16_to_fp32(fp32_to_fp16(std::sin(0.1f * i)));
      wv[i] = fp16_to_fp32(fp32_to_fp16(std::cos(0.1f * i)));
    }
    REQUIRE((*paged)->write_kv(2, 0, 3, 40, wk.data(), wv.data()).ok());
    REQUIRE((*paged)->read_kv(2, 0, 3, 40, rk.data(), rv.data()).ok());
    CHECK(rk == wk);
    CHECK(rv == wv);
    // Several sequences' rows of a layer in one call (read_kv_spans): each
    // as read_kv gives it alone.
    {
      std::vector<float> ak(37 * E), av(37 * E), bk(100 * E), bv(100 * E), ck(100 * E), cv(100 * E);
      const Backend::KvRowSpan spans[2] = {{0, 3, 40, ak.data(), av.data()},
                                           {1, 10, 110, bk.data(), bv.data()}};
      REQUIRE((*paged)->read_kv_spans(2, spans, 2).ok());
      CHECK(ak == wk);
      CHECK(av == wv);
      REQUIRE((*paged)->read_kv(2, 1, 10, 110, ck.data(), cv.data()).ok());
      CHECK(bk == ck);
      CHECK(bv == cv);
      const Backend::KvRowSpan none[1] = {{2, 0, 1, ak.data(), av.data()}};
      CHECK_FALSE((*paged)->read_kv_spans(0, none, 1).ok());
      // And written so (write_kv_spans, a kernel reading mapped memory): the
      // rows read back, each sequence's where it belongs; the rows around
      // them untouched.
      std::vector<float> xk(37 * E), xv(37 * E), yk(20 * E), yv(20 * E);
      for (size_t i = 0; i < xk.size(); ++i) {
        xk[i] = fp16_to_fp32(fp32_to_fp16(std::sin(0.3f * i)));
        xv[i] = fp16_to_fp32(fp32_to_fp16(std::cos(0.7f * i)));
      }
      for (size_t i = 0; i < yk.size(); ++i) {
        yk[i] = fp16_to_fp32(fp32_to_fp16(0.01f * static_cast<float>(i % 997)));
        yv[i] = -yk[i];
      }
      std::vector<float> before_k(100 * E), before_v(100 * E);
      REQUIRE((*paged)->read_kv(2, 1, 10, 110, before_k.data(), before_v.data()).ok());
      const Backend::KvRowSpan ws[2] = {{0, 3, 40, xk.data(), xv.data()},
                                        {1, 50, 70, yk.data(), yv.data()}};
      REQUIRE((*paged)->write_kv_spans(2, ws, 2).ok());
      REQUIRE((*paged)->read_kv(2, 0, 3, 40, ak.data(), av.data()).ok());
      CHECK(ak == xk);
      CHECK(av == xv);
      REQUIRE((*paged)->read_kv(2, 1, 10, 110, bk.data(), bv.data()).ok());
      std::vector<float> want_k = before_k, want_v = before_v;
      std::copy(yk.begin(), yk.end(), want_k.begin() + 40 * E);
      std::copy(yv.begin(), yv.end(), want_v.begin() + 40 * E);
      CHECK(bk == want_k);
      CHECK(bv == want_v);
      CHECK_FALSE((*paged)->write_kv_spans(0, none, 1).ok());
      // A bad span after a good one: an error, and nothing written.
      {
        std::vector<float> zk(37 * E, 1.5f), zv(37 * E, -1.5f);
        const Backend::KvRowSpan mixed[2] = {{0, 3, 40, zk.data(), zv.data()},
                                             {2, 0, 1, zk.data(), zv.data()}};
        CHECK_FALSE((*paged)->write_kv_spans(2, mixed, 2).ok());
        REQUIRE((*paged)->read_kv(2, 0, 3, 40, ak.data(), av.data()).ok());
        CHECK(ak == xk);
        CHECK(av == xv);
      }
      // Staging of a few KiB (CudaBackendOptions::kv_stage_bytes): the spans
      // go in several groups, with the same rows in and out.
      co.kv_stage_bytes = 4096;
      auto small = CudaBackend::create(*m, co);
      co.kv_stage_bytes = 0;
      REQUIRE_MESSAGE(small.has_value(), (small ? "" : small.error().message));
      KvBlockTable table2(3, 256, 13, 4321);
      (void)two_sequences(*m, **small, &table2);
      REQUIRE((*small)->write_kv_spans(2, ws, 2).ok());
      std::vector<float> sk(100 * E), sv(100 * E), tk(37 * E), tv(37 * E);
      const Backend::KvRowSpan rs[3] = {{1, 10, 110, sk.data(), sv.data()},
                                        {0, 3, 40, tk.data(), tv.data()},
                                        {1, 0, 0, nullptr, nullptr}};
      REQUIRE((*small)->read_kv_spans(2, rs, 3).ok());
      CHECK(sk == want_k);
      CHECK(sv == want_v);
      CHECK(tk == xk);
      CHECK(tv == xv);
      for (uint32_t l2 :
           {0u, c.n_layer - 1}) {  // rows the steps wrote, as the default staging reads them
        REQUIRE((*small)->read_kv_spans(l2, rs, 2).ok());
        REQUIRE((*paged)->read_kv(l2, 1, 10, 110, bk.data(), bv.data()).ok());
        CHECK(sk == bk);
        CHECK(sv == bv);
      }
    }
    // Rows in no block, and a batch entry whose position has none, are errors.
    CHECK_FALSE((*paged)->read_kv(0, 2, 0, 1, rk.data(), rv.data()).ok());
    Batch b;
    b.add(1, 0, 2, true);  // slot 2 holds no block
    b.kv_table = table.table();
    auto st = (*paged)->begin(b);
    REQUIRE_FALSE(st.ok());
    MESSAGE(st.error().message);
    CHECK(st.error().message.find("no key/value block") != std::string::npos);
  }
}

namespace {

struct Seen {
  std::vector<int32_t> tokens;
  SeqEnd end;
};

// The sequences through a pipeline on a CUDA backend (all resident), all
// submitted at once, under the oracle settings (f32 activations: a token's
// products do not depend on the batch's width; f32 cache), so a sequence
// gives the same tokens in any batch.
std::vector<Seen> run_pipeline(const Model& m, uint32_t n_seq, uint32_t kv_blocks,
                               const std::vector<std::pair<std::vector<int32_t>, int>>& seqs,
                               KvUsage* after) {
  const int V = static_cast<int>(m.config().n_vocab);
  CudaBackendOptions co;
  co.n_ctx = 64;
  co.n_seq = n_seq;
  co.kv_blocks = kv_blocks;
  co.act_q8 = false;
  co.kv_type = KvType::F32;
  auto be = CudaBackend::create(m, co);
  REQUIRE_MESSAGE(be.has_value(), (be ? "" : be.error().message));
  Tracer tracer(false);
  RunControl rc;
  PipelineOptions opt;
  opt.n_ctx = 64;
  opt.n_seq = n_seq;
  opt.kv_seed = 99;
  opt.source.log = false;
  const TierPlan plan =
      plan_forced(m.map, std::vector<Tier>(m.config().n_layer, Tier::Resident), 1, 1, 4096);
  auto p = Pipeline::start(m, **be, plan, opt, tracer, rc);
  REQUIRE_MESSAGE(p.has_value(), (p ? "" : p.error().message));
  std::vector<Seen> seen(seqs.size());
  std::vector<std::future<SeqEnd>> futs;
  for (size_t i = 0; i < seqs.size(); ++i) {
    SeqRequest r;
    r.prompt = seqs[i].first;
    const int n_out = seqs[i].second;
    r.cb = [&seen, i, V, n_out](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
      seen[i].tokens.push_back(argmax_row(l + static_cast<size_t>(rows - 1) * V, V));
      if (static_cast<int>(seen[i].tokens.size()) >= n_out) return std::nullopt;
      return seen[i].tokens.back();
    };
    std::promise<SeqEnd> d;
    futs.push_back(d.get_future());
    REQUIRE((*p)->submit(std::move(r), std::move(d)).has_value());
    if (n_seq == 1) {
      auto e = (*p)->wait(futs.back());
      REQUIRE(e.has_value());
      seen[i].end = *e;
    }
  }
  if (n_seq > 1)
    for (size_t i = 0; i < seqs.size(); ++i) {
      auto e = (*p)->wait(futs[i]);
      REQUIRE(e.has_value());
      seen[i].end = *e;
    }
  if (after) *after = (*p)->kv_usage();
  (*p)->stop();
  return seen;
}

}  // namespace

TEST_CASE(
    "cuda pipeline paged: a small pool gives each sequence its tokens alone; a dry pool ends one") {
  LS_GPU_TEST_GUARD();
  auto m = tiny("q8_0");
  std::vector<std::pair<std::vector<int32_t>, int>> seqs;
  for (int i = 0; i < 6; ++i) {  // 10-token prompts, 5 tokens: one block each
    std::vector<int32_t> pr = {1};
    for (int k = 1; k < 10; ++k) pr.push_back(30 + 17 * i + k);
    seqs.push_back({pr, 5});
  }
  const auto alone = run_pipeline(*m, 1, 0, seqs, nullptr);
  KvUsage after;
  const auto got = run_pipeline(*m, 6, 3, seqs, &after);  // 6 slots, 3 blocks: the rest wait
  for (size_t i = 0; i < seqs.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].end.error.empty());
    CHECK(got[i].tokens == alone[i].tokens);
  }
  CHECK(after.used == 0);
  CHECK(after.total == 3);

  // Two that want 40 tokens (45 positions, 3 blocks) in a pool of 4: at
  // position 32 the first to need a third block ends; the other finishes.
  std::vector<std::pair<std::vector<int32_t>, int>> two = {{{1, 9, 8, 7, 6}, 40},
                                                           {{1, 30, 31, 32, 33}, 40}};
  const auto two_alone = run_pipeline(*m, 1, 0, two, nullptr);
  const auto dry = run_pipeline(*m, 2, 4, two, &after);
  int ended = 0;
  for (size_t i = 0; i < two.size(); ++i) {
    CAPTURE(i);
    if (!dry[i].end.error.empty()) {
      ++ended;
      MESSAGE(dry[i].end.error);
      CHECK(dry[i].end.error.find("kv cache full: 4 blocks of 4 in use") != std::string::npos);
      CHECK(dry[i].end.pos == 32);
      CHECK(std::equal(dry[i].tokens.begin(), dry[i].tokens.end(), two_alone[i].tokens.begin()));
    } else {
      CHECK(dry[i].tokens == two_alone[i].tokens);
    }
  }
  CHECK(ended == 1);
  CHECK(after.used == 0);
}
