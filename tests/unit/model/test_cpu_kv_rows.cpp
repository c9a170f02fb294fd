// CpuBackend::write_kv / read_kv (model/cpu_backend.h): the rows a hybrid
// plan moves between the GPU's cache and the CPU's when a CPU-tier layer
// changes side. They go over the thread pool in runs of positions; the
// cache must hold the same bits whatever the pool's size, for ranges that
// start and end inside a key tile, and rows read back must be the rows
// written.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/half.h"
#include "model/cpu_backend.h"
#include "model/model.h"
#include "tests/unit/test_models.h"

using namespace ls;

TEST_CASE("cpu backend: key/value rows in and out over the pool, the same bits at any pool size") {
  auto mr = open_model(test::tiny_model_path("ls_test_cpu_kv_rows", "q8_0"));
  REQUIRE_MESSAGE(mr.has_value(), (mr ? "" : mr.error().message));
  const Model& m = **mr;
  const uint32_t E = m.config().n_embd_kv(), n_ctx = 96;
  for (const KvType type : {KvType::F16, KvType::F32}) {
    CAPTURE(static_cast<int>(type));
    CpuBackend one(m.config(), m.globals(), n_ctx, 2, type, 1);
    CpuBackend many(m.config(), m.globals(), n_ctx, 2, type, 4);
    // Values exact in f16, so both cache types give them back as written.
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> d(-2048, 2048);
    const uint32_t p0 = 5, p1 = 83;  // inside key tiles at both ends
    std::vector<float> k(size_t{p1 - p0} * E), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = static_cast<float>(d(rng)) / 64;
      v[i] = static_cast<float>(d(rng)) / 64;
    }
    for (CpuBackend* be : {&one, &many}) {
      REQUIRE(be->write_kv(1, 1, p0, p1, k.data(), v.data()).ok());
      std::vector<float> rk(k.size(), -1), rv(v.size(), -1);
      REQUIRE(be->read_kv(1, 1, p0, p1, rk.data(), rv.data()).ok());
      CHECK(std::memcmp(rk.data(), k.data(), k.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(rv.data(), v.data(), v.size() * sizeof(float)) == 0);
      // A range that starts mid-way: its rows, at their offset.
      const uint32_t a = 21, b = 70;
      std::vector<float> sk(size_t{b - a} * E), sv(sk.size());
      REQUIRE(be->read_kv(1, 1, a, b, sk.data(), sv.data()).ok());
      CHECK(std::memcmp(sk.data(), k.data() + size_t{a - p0} * E, sk.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(sv.data(), v.data() + size_t{a - p0} * E, sv.size() * sizeof(float)) == 0);
    }
    // The caches themselves, byte for byte (the attention reads them in place).
    const KvCache& x = one.kv();
    const KvCache& y = many.kv();
    REQUIRE(x.bytes() == y.bytes());
    int64_t differ = 0;
    for (uint32_t p = 0; p < n_ctx; ++p) {
      std::vector<float> xk(E), xv(E), yk(E), yv(E);
      x.load_k(1, 1, p, xk.data());
      y.load_k(1, 1, p, yk.data());
      x.load_v(1, 1, p, xv.data());
      y.load_v(1, 1, p, yv.data());
      differ += std::memcmp(xk.data(), yk.data(), E * sizeof(float)) != 0;
      differ += std::memcmp(xv.data(), yv.data(), E * sizeof(float)) != 0;
    }
    CHECK(differ == 0);
    // Several sequences at once (one pool job): each as it is alone.
    {
      CpuBackend spans_be(m.config(), m.globals(), n_ctx, 2, type, 4);
      std::vector<float> k0(size_t{40} * E), v0(k0.size());
      for (size_t i = 0; i < k0.size(); ++i) {
        k0[i] = static_cast<float>(d(rng)) / 32;
        v0[i] = static_cast<float>(d(rng)) / 32;
      }
      const Backend::KvRowSpan w[2] = {{1, p0, p1, k.data(), v.data()},
                                       {0, 17, 57, k0.data(), v0.data()}};
      REQUIRE(spans_be.write_kv_spans(1, w, 2).ok());
      std::vector<float> rk(k.size()), rv(v.size()), rk0(k0.size()), rv0(v0.size());
      const Backend::KvRowSpan r[2] = {{0, 17, 57, rk0.data(), rv0.data()},
                                       {1, p0, p1, rk.data(), rv.data()}};
      REQUIRE(spans_be.read_kv_spans(1, r, 2).ok());
      CHECK(rk == k);
      CHECK(rv == v);
      CHECK(rk0 == k0);
      CHECK(rv0 == v0);
      // Sequence 1's rows as the one-at-a-time backend holds them.
      std::vector<float> xk(E), yk(E);
      int64_t differ_spans = 0;
      for (uint32_t p = 0; p < n_ctx; ++p) {
        one.kv().load_k(1, 1, p, xk.data());
        spans_be.kv().load_k(1, 1, p, yk.data());
        differ_spans += xk != yk;
      }
      CHECK(differ_spans == 0);
      const Backend::KvRowSpan bad_span[2] = {{0, 17, 57, rk0.data(), rv0.data()},
                                              {1, 90, 100, rk.data(), rv.data()}};
      CHECK_FALSE(spans_be.read_kv_spans(1, bad_span, 2).ok());
    }
    // Rows outside the cache are an error naming them, as before.
    auto bad = many.write_kv(1, 1, 90, 100, k.data(), v.data());
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.find("90..100") != std::string::npos);
  }
}
