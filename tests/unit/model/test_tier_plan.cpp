// The tier planner: what goes where for a budget, what each error says.
#include <doctest/doctest.h>

#include "model/model.h"
#include "model/tier_plan.h"
#include "tests/unit/test_models.h"

using namespace ls;

namespace {

const Model& model() {
  static std::unique_ptr<Model> m = [] {
    auto r = open_model(test::tiny_model_path("ls_test_tier_plan", "q4_k_m"));
    REQUIRE(r.has_value());
    return std::move(*r);
  }();
  return *m;
}

uint64_t layer_bytes(size_t l) {
  return model().map.layers[l].range_bytes;
}
uint64_t max_layer() {
  uint64_t m = 0;
  for (const LayerExtent& e : model().map.layers) m = std::max(m, e.range_bytes);
  return m;
}

PlanInputs inputs(uint64_t vram, uint64_t ram) {
  PlanInputs in;
  in.vram_budget = vram;
  in.ram_budget = ram;
  in.device_reserves = {{"KV cache", 1000}, {"activations", 2000}};
  in.token_embd_bytes = 5000;
  in.device_slots = 2;
  in.staging_buffers = 3;
  return in;
}

}  // namespace

TEST_CASE("tier plan: everything fits: all layers resident, token_embd on the device") {
  auto p = plan_tiers(model().map, inputs(UINT64_MAX, UINT64_MAX));
  REQUIRE(p.has_value());
  CHECK(p->n_resident == 4);
  CHECK(p->token_embd_on_device);
  CHECK(p->device_slots == 0);
  CHECK(p->streamed_bytes_per_step == 0);
  CHECK(p->to_text().find("token_embd") != std::string::npos);
}

TEST_CASE(
    "tier plan: a tight device budget streams the rest from RAM, token_embd stays on the host") {
  // Reserves, two slots and exactly one layer.
  const uint64_t vram = 3000 + 2 * max_layer() + layer_bytes(0);
  auto p = plan_tiers(model().map, inputs(vram, UINT64_MAX));
  REQUIRE(p.has_value());
  CHECK(p->n_resident == 1);
  CHECK(p->n_ram == 3);
  CHECK(p->n_storage == 0);
  CHECK_FALSE(p->token_embd_on_device);  // its bytes went to a layer
  CHECK(p->staging_buffers == 0);        // nothing on storage
  CHECK(p->vram_used <= vram);
  CHECK(p->streamed_bytes_per_step == layer_bytes(1) + layer_bytes(2) + layer_bytes(3));
}

TEST_CASE(
    "tier plan: --ram-budget 0 puts every streamed layer on storage, staging outside the budget") {
  const uint64_t vram = 3000 + 2 * max_layer() + layer_bytes(0);
  auto p = plan_tiers(model().map, inputs(vram, 0));
  REQUIRE(p.has_value());
  CHECK(p->n_resident == 1);
  CHECK(p->n_ram == 0);
  CHECK(p->n_storage == 3);
  CHECK(p->ram_used == 0);
  CHECK(p->staging_buffers == 3);
  CHECK(p->staging_bytes >= max_layer());
  CHECK(p->storage_bytes_per_step == p->streamed_bytes_per_step);
}

TEST_CASE("tier plan: a budget below the minimum says what does not fit and by how much") {
  SUBCASE("the reserves") {
    auto p = plan_tiers(model().map, inputs(2500, UINT64_MAX));
    REQUIRE_FALSE(p.has_value());
    const std::string& e = p.error().message;
    CHECK(e.find("activations") != std::string::npos);
    CHECK(e.find("500 B short") != std::string::npos);
  }
  SUBCASE("the device slots") {
    auto p = plan_tiers(model().map, inputs(3000 + max_layer(), UINT64_MAX));
    REQUIRE_FALSE(p.has_value());
    const std::string& e = p.error().message;
    CHECK(e.find("2 device slots") != std::string::npos);
    CHECK(e.find("short") != std::string::npos);
  }
}

TEST_CASE("tier plan: --cpu-layers spreads CPU-tier layers between the streamed ones") {
  PlanInputs in = inputs(3000 + 2 * max_layer() + layer_bytes(0), UINT64_MAX);
  in.cpu_layers = 1;
  auto p = plan_tiers(model().map, in);
  REQUIRE(p.has_value());
  CHECK(p->n_resident == 1);
  CHECK(p->n_cpu == 1);
  CHECK(p->layer_tier[2] == Tier::Cpu);  // the middle of layers 1..3
  CHECK(p->n_ram == 2);
  CHECK(p->cpu_bytes_per_step == layer_bytes(2));
  CHECK(p->streamed_bytes_per_step == layer_bytes(1) + layer_bytes(3));
  CHECK(p->to_text().find("AHBH") == std::string::npos);  // layers read A B H B
  CHECK(p->to_text().find("ABHB") != std::string::npos);
  in.cpu_layers = 4;
  auto bad = plan_tiers(model().map, in);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find("--cpu-layers 4") != std::string::npos);
}

TEST_CASE("tier plan: balance_cpu_layers evens out the copy engine and the CPU") {
  // Three streamed layers of about the same size (one resident).
  const uint64_t vram = 3000 + 2 * max_layer() + layer_bytes(0);
  auto draft = plan_tiers(model().map, inputs(vram, UINT64_MAX));
  REQUIRE(draft.has_value());
  REQUIRE(draft->n_ram == 3);
  const double b = layer_bytes(1);
  // CPU as fast as the copy: one layer each way... with three layers, 1 or 2
  // both leave one path with 2 layers; the balance picks the first, 1.
  CHECK(balance_cpu_layers(model().map, *draft, {b, b}) == 1);
  // CPU twice as fast as the copy: 2 on the CPU (1 s) and 1 copied (1 s).
  CHECK(balance_cpu_layers(model().map, *draft, {2 * b, b}) == 2);
  // A CPU far slower than the link: nothing on it.
  CHECK(balance_cpu_layers(model().map, *draft, {b / 10, b}) == 0);
  // A CPU far faster: everything on it.
  CHECK(balance_cpu_layers(model().map, *draft, {100 * b, b}) == 3);
  // No rates, or layers on storage: 0.
  CHECK(balance_cpu_layers(model().map, *draft, {0, b}) == 0);
  auto storage = plan_tiers(model().map, inputs(vram, 0));
  REQUIRE(storage.has_value());
  CHECK(balance_cpu_layers(model().map, *storage, {100 * b, b}) == 0);
}

TEST_CASE("tier plan: the GPU's part of the chain moves the balance towards the copy engine") {
  // At batch 1 the CPU's layers and the GPU's run one after the other: the
  // time the GPU computes (its layers, its head) is time the CPU path
  // cannot use, while the copies overlap it.
  const uint64_t vram = 3000 + 2 * max_layer() + layer_bytes(0);
  auto draft = plan_tiers(model().map, inputs(vram, UINT64_MAX));
  REQUIRE(draft.has_value());
  REQUIRE(draft->n_ram == 3);
  const double b = layer_bytes(1);
  // CPU twice as fast as the copy: 2 CPU layers when the GPU costs nothing...
  CHECK(balance_cpu_layers(model().map, *draft, {2 * b, b, 0, 0}) == 2);
  // ...but with 1.5 s of GPU work a step, 2 CPU layers make a chain of
  // 1 + 1.5 = 2.5 s; 1 CPU layer gives copy 2 s, chain 0.5 + 1.5 = 2 s.
  CHECK(balance_cpu_layers(model().map, *draft, {2 * b, b, 0, 1.5}) == 1);
  // The prediction of a plan adds the parts up.
  PlanInputs in = inputs(vram, UINT64_MAX);
  in.cpu_layers = 1;
  auto p = plan_tiers(model().map, in);
  REQUIRE(p.has_value());
  const HybridStep h = predict_hybrid_step(model().map, *p, {2 * b, b, 4 * b, 0.25});
  double copied = 0, cpu = 0, gpu = 0;
  for (size_t l = 0; l < p->layer_tier.size(); ++l) {
    const double lb = static_cast<double>(model().map.layers[l].range_bytes);
    if (p->layer_tier[l] == Tier::Cpu) cpu += lb;
    if (p->layer_tier[l] == Tier::Ram) copied += lb;
    if (p->layer_tier[l] != Tier::Cpu) gpu += lb;
  }
  CHECK(h.copy_s == doctest::Approx(copied / b));
  CHECK(h.cpu_s == doctest::Approx(cpu / (2 * b)));
  CHECK(h.gpu_s == doctest::Approx(gpu / (4 * b) + 0.25));
  CHECK(h.step_s() == doctest::Approx(std::max(h.copy_s, h.cpu_s + h.gpu_s)));
}

TEST_CASE("tier plan: widen_step_tokens puts a streamed plan's leftover into wider steps") {
  // Activations of b bytes a token, the line as cuda_reserves names it.
  auto line = [](uint64_t b) {
    return [b](uint32_t n) -> Expected<PlanLine> {
      return PlanLine{"activations and logits for " + std::to_string(n) + " tokens", n * b};
    };
  };
  auto plan_with = [&](uint64_t vram, uint64_t b) {
    PlanInputs in = inputs(vram, UINT64_MAX);
    in.device_reserves = {{"KV cache", 1000}, *line(b)(512)};
    auto p = plan_tiers(model().map, in);
    REQUIRE(p.has_value());
    return *p;
  };
  // One layer resident, three streamed; what is left is under a layer.
  const uint64_t vram = 1000 + 5120 + 2 * max_layer() + layer_bytes(0) + layer_bytes(1) / 2;
  TierPlan p = plan_with(vram, 10);
  REQUIRE(p.n_resident == 1);
  REQUIRE(p.n_ram == 3);
  const uint64_t left = p.vram_budget - p.vram_used;
  REQUIRE(left > 64 * 10);
  const uint64_t used = p.vram_used;
  // Whole 64-token units while the line's growth fits what is left.
  const uint32_t units = static_cast<uint32_t>(left / (64 * 10));
  const uint32_t most = 512 + 64 * (units + 3);
  CHECK(widen_step_tokens(p, 512, most, line(10)) == 512 + 64 * units);
  CHECK(p.vram_used == used + 64 * units * 10);
  CHECK(p.vram_used <= p.vram_budget);
  CHECK(p.to_text().find("for " + std::to_string(512 + 64 * units) + " tokens") !=
        std::string::npos);
  CHECK(p.to_text().find("for 512 tokens") == std::string::npos);
  // Up to `most` only.
  TierPlan q = plan_with(vram, 10);
  CHECK(widen_step_tokens(q, 512, 640, line(10)) == 640);
  CHECK(q.vram_used == used + 128 * 10);
  // Less than a unit left, a plan that streams nothing, a line the plan does
  // not hold or cannot be had: the cap stays, the plan as it was.
  TierPlan r = plan_with(vram, 10);
  CHECK(widen_step_tokens(r, 512, most, line(left)) == 512);  // 64 tokens need 64 x left
  TierPlan all = plan_with(UINT64_MAX / 2, 10);
  REQUIRE(all.n_ram + all.n_cpu + all.n_storage == 0);
  CHECK(widen_step_tokens(all, 512, most, line(10)) == 512);
  TierPlan s = plan_with(vram, 10);
  CHECK(widen_step_tokens(s, 512, most, line(11)) == 512);  // 5,632 bytes: not the plan's line
  CHECK(widen_step_tokens(s, 512, most, [](uint32_t) -> Expected<PlanLine> {
          return make_error("no device");
        }) == 512);
  CHECK(s.vram_used == used);
}
