// The serving core (actors/generator.h) on the trained KJV model, on the
// CPU: a request's greedy tokens are the same alone and among others
// (continuous batching), its budget and stop strings end it with the right
// reason and usage, refusals name what is wrong, and a cancel frees the
// sequence's slot and key/value blocks.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/engine.h"
#include "actors/generator.h"
#include "model/json_grammar.h"
#include "model/tokenizer.h"

using namespace ls;

namespace {

std::unique_ptr<Engine> open_kjv(uint32_t n_seq) {
  EngineOptions o;
  o.model = std::string(LS_SOURCE_DIR) + "/model/weights/kjv-target-q8_0.gguf";
  o.n_seq = n_seq;
  o.n_ctx = 256;
  o.threads = 2;
  o.print_plan = false;
  o.handle_signals = false;
  o.watchdog_s = 0;
  o.cpu_layers = 0;
  auto e = Engine::open(o);
  REQUIRE_MESSAGE(e.has_value(), (e ? "" : e.error().message));
  return std::move(*e);
}

// One request's outcome, filled by its sink.
struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> ids;
  std::string text;
  bool ended = false;
  GenEnd end;

  GenSink sink() {
    GenSink s;
    s.on_token = [this](int32_t t, std::string_view text) {
      ids.push_back(t);
      this->text.append(text);
      return true;
    };
    s.on_end = [this](const GenEnd& e) {
      std::lock_guard<std::mutex> lock(mu);
      end = e;
      text += e.tail;
      ended = true;
      cv.notify_all();
    };
    return s;
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(60), [this] { return ended; }));
  }
};

GenParams greedy(int max_tokens) {
  GenParams p;
  p.sampling.temp = 0;
  p.max_tokens = max_tokens;
  return p;
}

}  // namespace

TEST_CASE("generator: greedy tokens are the same alone and among other requests") {
  auto e = open_kjv(4);
  Generator g(*e, {});
  const Tokenizer& tok = *e->model().tokenizer;
  const std::vector<std::string> prompts = {"In the beginning", "And the LORD said unto Moses",
                                            "Blessed are the", "The LORD is my shepherd"};
  std::vector<std::vector<int32_t>> alone;
  for (const std::string& p : prompts) {
    Outcome o;
    REQUIRE(g.start(tok.encode(p, true, false), greedy(12), o.sink()).ok());
    o.wait();
    CHECK(o.end.reason == FinishReason::Length);
    CHECK(o.end.completion_tokens == 12);
    CHECK(o.end.prompt_tokens == tok.encode(p, true, false).size());
    alone.push_back(o.ids);
  }
  // All at once, twice over (8 requests on 4 slots: half wait and join).
  std::vector<std::unique_ptr<Outcome>> many;
  for (int round = 0; round < 2; ++round)
    for (const std::string& p : prompts) {
      many.push_back(std::make_unique<Outcome>());
      REQUIRE(g.start(tok.encode(p, true, false), greedy(12), many.back()->sink()).ok());
    }
  for (size_t i = 0; i < many.size(); ++i) {
    many[i]->wait();
    CHECK(many[i]->ids == alone[i % prompts.size()]);
  }
  CHECK(g.wait_idle(5000));
  const GenStats st = g.stats();
  CHECK(st.requests == 12);
  CHECK(st.finished[static_cast<int>(FinishReason::Length)] == 12);
  CHECK(st.completion_tokens == 12 * 12);
  CHECK(st.in_flight == 0);
  CHECK(st.kv.used == 0);
}

TEST_CASE("generator: logprobs come before each token, and JSON mode keeps to an object") {
  auto e = open_kjv(2);
  Generator g(*e, {});
  const Tokenizer& tok = *e->model().tokenizer;
  const std::vector<int32_t> prompt = tok.encode("In the beginning", true, false);
  Outcome plain;
  REQUIRE(g.start(prompt, greedy(10), plain.sink()).ok());
  plain.wait();
  // With logprobs, beside a JSON-mode request (both in one batch): the same
  // greedy tokens, each with its entry first, the top of its step.
  Outcome lp, js;
  std::vector<TokenLogprobs> entries;
  std::vector<size_t> ids_before;  // tokens seen when each entry came
  GenSink s = lp.sink();
  s.on_logprobs = [&](const TokenLogprobs& l) {
    ids_before.push_back(lp.ids.size());
    entries.push_back(l);
  };
  GenParams p = greedy(10);
  p.logprobs = 3;
  GenParams pj;
  pj.sampling.seed = 2;
  pj.max_tokens = 60;
  pj.json = true;
  REQUIRE(g.start(prompt, p, std::move(s)).ok());
  REQUIRE(g.start(prompt, pj, js.sink()).ok());
  lp.wait();
  js.wait();
  CHECK(lp.ids == plain.ids);
  REQUIRE(entries.size() == lp.ids.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    CAPTURE(i);
    CHECK(ids_before[i] == i);
    CHECK(entries[i].token == lp.ids[i]);
    REQUIRE(entries[i].top.size() == 3);
    CHECK(entries[i].top[0].first == lp.ids[i]);
    CHECK(entries[i].logprob == entries[i].top[0].second);
    CHECK(entries[i].logprob <= 0.0f);
  }
  JsonGrammar grammar(true);
  CHECK(grammar.feed(js.text));
  MESSAGE("JSON mode: " << js.text.size() << " bytes, reason "
                        << std::string(finish_reason_name(js.end.reason)));
  if (js.end.reason == FinishReason::Stop) CHECK(grammar.complete());
}

// Prompt caching (GenParams::cache_prompt, on by default): a client that
// resends the conversation (OpenAI's API) has the part already computed
// taken from the cache, with the same tokens as computing it all.
TEST_CASE(
    "generator: a resent conversation's prompt is taken from the cache, with the same "
    "tokens") {
  auto e = open_kjv(2);
  Generator g(*e, {});
  const Tokenizer& tok = *e->model().tokenizer;
  const std::vector<int32_t> p1 = tok.encode("In the beginning", true, false);
  Outcome o1;
  REQUIRE(g.start(p1, greedy(8), o1.sink()).ok());
  o1.wait();
  CHECK(o1.end.cached_tokens == 0);
  std::vector<int32_t> p2 = p1;
  p2.insert(p2.end(), o1.ids.begin(), o1.ids.end());
  const std::vector<int32_t> more = tok.encode(" And God said", false, false);
  p2.insert(p2.end(), more.begin(), more.end());
  Outcome o2;
  REQUIRE(g.start(p2, greedy(8), o2.sink()).ok());
  o2.wait();
  // The first turn's prompt and the answer's tokens it fed (all but its last).
  CHECK(o2.end.cached_tokens == p1.size() + o1.ids.size() - 1);
  CHECK(o2.end.prompt_tokens == p2.size());
  GenParams off = greedy(8);
  off.cache_prompt = false;
  Outcome o3;
  REQUIRE(g.start(p2, off, o3.sink()).ok());
  o3.wait();
  CHECK(o3.end.cached_tokens == 0);
  CHECK(o3.ids == o2.ids);
  CHECK(g.wait_idle(5000));
  const GenStats st = g.stats();
  CHECK(st.prompt_tokens_cached == o2.end.cached_tokens);
  CHECK(st.kv.used == 0);
  CHECK(st.kv.cached > 0);
}

TEST_CASE("generator: a stop string ends the text before it, reason stop") {
  auto e = open_kjv(1);
  Generator g(*e, {});
  const Tokenizer& tok = *e->model().tokenizer;
  const auto prompt = tok.encode("In the beginning", true, false);
  Outcome free_run;
  REQUIRE(g.start(prompt, greedy(24), free_run.sink()).ok());
  free_run.wait();
  // Stop at the second word of the free run's text.
  const size_t cut = free_run.text.find(' ', 1);
  REQUIRE(cut != std::string::npos);
  const std::string stop = free_run.text.substr(cut, 4);
  GenParams p = greedy(24);
  p.stop = {stop};
  Outcome o;
  REQUIRE(g.start(prompt, p, o.sink()).ok());
  o.wait();
  CHECK(o.end.reason == FinishReason::Stop);
  CHECK(o.text == free_run.text.substr(0, free_run.text.find(stop)));
  CHECK(o.end.completion_tokens < 24);
}

TEST_CASE("generator: refusals name the lengths and limits") {
  auto e = open_kjv(1);
  Generator g(*e, Generator::Options{0});  // no queue: one request at a time
  std::vector<int32_t> long_prompt(300, 5);
  GenStart r = g.start(long_prompt, greedy(4), {});
  CHECK(r.refusal == GenRefusal::TooLong);
  CHECK(r.message.find("256") != std::string::npos);
  CHECK(r.message.find("300") != std::string::npos);
  r = g.start(std::vector<int32_t>(200, 5), greedy(100), {});
  CHECK(r.refusal == GenRefusal::TooLong);
  CHECK(r.message.find("300 were requested (200 in the prompt, max_tokens 100)") !=
        std::string::npos);
  CHECK(g.start({}, greedy(4), {}).refusal == GenRefusal::Invalid);
  r = g.start({1, 999999}, greedy(4), {});
  CHECK(r.refusal == GenRefusal::Invalid);
  CHECK(r.message.find("999999") != std::string::npos);
  CHECK(g.start({1, 2}, greedy(0), {}).refusal == GenRefusal::Invalid);

  Outcome running;
  REQUIRE(g.start({1, 2, 3}, greedy(200), running.sink()).ok());
  r = g.start({1, 2, 3}, greedy(4), {});
  CHECK(r.refusal == GenRefusal::Busy);
  CHECK(r.message.find("--max-queue 0") != std::string::npos);
  CHECK(g.stats().refused_busy == 1);
  g.cancel_all();
  running.wait();
}

TEST_CASE("generator: a cancel ends the request and frees its blocks at the next step") {
  auto e = open_kjv(2);
  Generator g(*e, {});
  Outcome o;
  const GenStart s = g.start({1, 2, 3, 4}, greedy(-1), o.sink());
  REQUIRE(s.ok());
  // Wait until it decodes, then cancel.
  for (int i = 0; i < 2000 && g.stats().kv.used == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(g.stats().kv.used > 0);
  g.cancel(s.id);
  o.wait();
  CHECK(o.end.reason == FinishReason::Cancelled);
  CHECK(g.wait_idle(2000));
  const GenStats st = g.stats();
  CHECK(st.kv.used == 0);
  CHECK(st.in_flight == 0);
  CHECK(st.finished[static_cast<int>(FinishReason::Cancelled)] == 1);
  // A sink that returns false ends its own request.
  Outcome self;
  GenSink sk = self.sink();
  sk.on_token = [](int32_t, std::string_view) { return false; };
  REQUIRE(g.start({1, 2, 3}, greedy(50), sk).ok());
  self.wait();
  CHECK(self.end.reason == FinishReason::Cancelled);
  CHECK(self.end.completion_tokens == 1);
}
