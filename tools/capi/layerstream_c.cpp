// The C API (tools/capi/layerstream.h) over the engine's serving core,
// actors/generator.h: an ls_engine is an Engine and its Generator, an
// ls_seq one generation request. The only file of liblayerstream.so beside
// the engine's own (and tools/backends.cpp, which gives it the CUDA backend
// in CUDA builds); nothing in it throws across the C boundary.
#include "layerstream.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "actors/engine.h"
#include "actors/generator.h"
#include "model/default_model.h"
#include "model/json_schema.h"
#include "model/tokenizer.h"
#include "tools/backends.h"

struct ls_engine {
  std::unique_ptr<ls::Engine> engine;
  std::unique_ptr<ls::Generator> gen;
};

struct ls_seq {
  ls_engine* e = nullptr;
  std::vector<int32_t> prompt;
  ls::GenParams params;
  ls_token_callback cb = nullptr;
  void* user = nullptr;
  ls_logprobs_callback lp_cb = nullptr;  // ls_seq_set_logprobs
  void* lp_user = nullptr;
  uint64_t id = 0;
  std::mutex mu;
  std::condition_variable cv;                          // a token (poll mode) or the end
  std::deque<std::pair<int32_t, std::string>> got;     // poll mode: tokens not taken yet
  std::vector<std::pair<int32_t, std::string>> taken;  // the last poll's (their text)
  bool submitted = false, ended = false;
  ls_finish finish = LS_FINISH_NONE;
  size_t n_tokens = 0;
  std::string error;
};

namespace {

thread_local std::string t_error;

ls_status fail(ls_status s, std::string msg) {
  t_error = std::move(msg);
  return s;
}

ls_finish finish_of(ls::FinishReason r) {
  switch (r) {
    case ls::FinishReason::Stop:
      return LS_FINISH_STOP;
    case ls::FinishReason::Length:
      return LS_FINISH_LENGTH;
    case ls::FinishReason::Cancelled:
      return LS_FINISH_CANCELLED;
    case ls::FinishReason::Error:
      return LS_FINISH_ERROR;
  }
  return LS_FINISH_ERROR;
}

// This library's own path: the default model is looked for beside it, then
// in ../share/layerstream/ (an install: PREFIX/lib/liblayerstream.so).
std::string library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ls_engine_open), &info) && info.dli_fname)
    return info.dli_fname;
  return {};
}

// Waits on q's condition until pred or timeout_ms (-1: for ever); false on timeout.
template <typename Pred>
bool wait_for(ls_seq* q, std::unique_lock<std::mutex>& lock, int timeout_ms, Pred pred) {
  if (timeout_ms < 0) {
    q->cv.wait(lock, pred);
    return true;
  }
  return q->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), pred);
}

}  // namespace

extern "C" {

const char* ls_last_error(void) {
  return t_error.c_str();
}

void ls_engine_options_init(ls_engine_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->cpu_layers = -1;
}

ls_status ls_engine_open(const ls_engine_options* o, ls_engine** out) {
  if (!o || !out) return fail(LS_ERR_INVALID_ARGUMENT, "ls_engine_open: null argument");
  *out = nullptr;
  try {
    ls::EngineOptions eo;
    if (o->model && *o->model) {
      eo.model = o->model;
    } else {
      auto p = ls::default_model_path(library_path());
      if (!p) return fail(LS_ERR_MODEL, p.error().message);
      eo.model = *p;
    }
    if (o->backend) eo.backend = o->backend;
    eo.threads = o->threads;
    eo.n_ctx = o->n_ctx;
    eo.n_seq = o->n_parallel ? o->n_parallel : 1;
    if (o->vram_budget) eo.vram_budget = o->vram_budget;
    if (o->ram_budget) eo.ram_budget = o->ram_budget;
    eo.cpu_layers = o->cpu_layers;
    eo.print_plan = o->print_plan != 0;
    // A library leaves the process's signals alone and prints no reports.
    eo.handle_signals = false;
    eo.watchdog_s = 0;
    eo.make_backend = ls::make_tool_backend;
    eo.device_memory = ls::tool_device_memory;
    eo.calibrate_hybrid = ls::tool_calibrate_hybrid;
    auto e = ls::Engine::open(eo);
    if (!e) return fail(LS_ERR_MODEL, e.error().message);
    auto h = std::make_unique<ls_engine>();
    h->engine = std::move(*e);
    h->gen = std::make_unique<ls::Generator>(
        *h->engine, ls::Generator::Options{o->max_queued ? o->max_queued : 64});
    *out = h.release();
    return LS_OK;
  } catch (const std::exception& ex) {
    return fail(LS_ERR_ENGINE, std::string("ls_engine_open: ") + ex.what());
  }
}

void ls_engine_free(ls_engine* e) {
  if (!e) return;
  e->gen.reset();  // cancels what runs and waits for the ends
  if (e->engine) (void)e->engine->finish();
  delete e;
}

uint32_t ls_engine_n_ctx(const ls_engine* e) {
  return e ? e->gen->n_ctx() : 0;
}

uint32_t ls_engine_n_vocab(const ls_engine* e) {
  return e ? e->engine->model().config().n_vocab : 0;
}

ls_status ls_tokenize(ls_engine* e, const char* text, ptrdiff_t len, int add_bos, int parse_special,
                      int32_t* out, size_t cap, size_t* n_out) {
  if (!e || !text || !n_out || (!out && cap))
    return fail(LS_ERR_INVALID_ARGUMENT, "ls_tokenize: null argument");
  try {
    const ls::Tokenizer& tok = *e->engine->model().tokenizer;
    const std::string_view sv(text, len < 0 ? std::strlen(text) : static_cast<size_t>(len));
    const std::vector<int32_t> ids =
        tok.encode(sv, add_bos && tok.add_bos_default(), parse_special != 0);
    *n_out = ids.size();
    if (ids.size() > cap)
      return fail(LS_ERR_BUFFER_TOO_SMALL, "ls_tokenize: " + std::to_string(ids.size()) +
                                               " tokens, room for " + std::to_string(cap));
    std::copy(ids.begin(), ids.end(), out);
    return LS_OK;
  } catch (const std::exception& ex) {
    return fail(LS_ERR_ENGINE, std::string("ls_tokenize: ") + ex.what());
  }
}

ls_status ls_detokenize(ls_engine* e, const int32_t* ids, size_t n, char* out, size_t cap,
                        size_t* n_out) {
  if (!e || (!ids && n) || !n_out || (!out && cap))
    return fail(LS_ERR_INVALID_ARGUMENT, "ls_detokenize: null argument");
  const ls::Tokenizer& tok = *e->engine->model().tokenizer;
  std::vector<int32_t> v(ids, ids + n);
  for (int32_t id : v)
    if (id < 0 || id >= tok.n_vocab())
      return fail(LS_ERR_INVALID_ARGUMENT, "ls_detokenize: token id " + std::to_string(id) +
                                               " is outside the vocabulary (0.." +
                                               std::to_string(tok.n_vocab() - 1) + ")");
  try {
    const std::string s = ls::detokenize(tok, v);
    *n_out = s.size();
    if (s.size() >= cap)
      return fail(LS_ERR_BUFFER_TOO_SMALL, "ls_detokenize: " + std::to_string(s.size()) +
                                               " bytes and a NUL, room for " + std::to_string(cap));
    std::memcpy(out, s.data(), s.size());
    out[s.size()] = '\0';
    return LS_OK;
  } catch (const std::exception& ex) {
    return fail(LS_ERR_ENGINE, std::string("ls_detokenize: ") + ex.what());
  }
}

void ls_sampling_init(ls_sampling* s) {
  if (!s) return;
  const ls::SamplerParams d;
  s->temperature = d.temp;
  s->top_k = d.top_k;
  s->top_p = d.top_p;
  s->min_p = d.min_p;
  s->repeat_penalty = d.repeat_penalty;
  s->repeat_last_n = d.repeat_last_n;
  s->seed = ls::kSamplerRandomSeed;
  s->max_tokens = -1;
}

ls_status ls_seq_create(ls_engine* e, const int32_t* prompt, size_t n, const ls_sampling* s,
                        ls_seq** out) {
  if (!e || !prompt || !s || !out)
    return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_create: null argument");
  *out = nullptr;
  if (n == 0) return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_create: the prompt is empty");
  if (s->max_tokens == 0 || s->max_tokens < -1)
    return fail(LS_ERR_INVALID_ARGUMENT,
                "ls_seq_create: max_tokens must be -1 or at least 1 (got " +
                    std::to_string(s->max_tokens) + ")");
  if (s->repeat_last_n < -1)
    return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_create: repeat_last_n must be -1 or more");
  auto* q = new (std::nothrow) ls_seq();
  if (!q) return fail(LS_ERR_ENGINE, "ls_seq_create: out of memory");
  q->e = e;
  q->prompt.assign(prompt, prompt + n);
  ls::SamplerParams& sp = q->params.sampling;
  sp.temp = s->temperature;
  sp.top_k = s->top_k;
  sp.top_p = s->top_p;
  sp.min_p = s->min_p;
  sp.repeat_penalty = s->repeat_penalty;
  sp.repeat_last_n = s->repeat_last_n;
  sp.seed = s->seed;
  q->params.max_tokens = s->max_tokens;
  *out = q;
  return LS_OK;
}

namespace {
// The setters' common checks: a sequence, not yet submitted.
ls_status check_unsubmitted(ls_seq* q, const char* fn) {
  if (!q) return fail(LS_ERR_INVALID_ARGUMENT, std::string(fn) + ": null sequence");
  std::lock_guard<std::mutex> lock(q->mu);
  if (q->submitted)
    return fail(LS_ERR_INVALID_ARGUMENT, std::string(fn) + ": the sequence is already submitted");
  return LS_OK;
}
}  // namespace

ls_status ls_seq_set_penalties(ls_seq* q, float frequency, float presence) {
  if (ls_status st = check_unsubmitted(q, "ls_seq_set_penalties"); st != LS_OK) return st;
  if (!std::isfinite(frequency) || !std::isfinite(presence))
    return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_set_penalties: the penalties must be finite");
  q->params.sampling.frequency_penalty = frequency;
  q->params.sampling.presence_penalty = presence;
  return LS_OK;
}

ls_status ls_seq_set_logit_bias(ls_seq* q, const int32_t* ids, const float* bias, size_t n) {
  if (ls_status st = check_unsubmitted(q, "ls_seq_set_logit_bias"); st != LS_OK) return st;
  if (n > 0 && (!ids || !bias))
    return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_set_logit_bias: null ids or bias");
  const uint32_t n_vocab = ls_engine_n_vocab(q->e);
  std::vector<std::pair<int32_t, float>> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= n_vocab)
      return fail(LS_ERR_INVALID_ARGUMENT,
                  "ls_seq_set_logit_bias: token id " + std::to_string(ids[i]) +
                      " is outside the vocabulary (0.." + std::to_string(n_vocab - 1) + ")");
    if (std::isnan(bias[i]) || bias[i] > 100.0f)
      return fail(LS_ERR_INVALID_ARGUMENT,
                  "ls_seq_set_logit_bias: a bias is a number of at most 100 (token " +
                      std::to_string(ids[i]) + ")");
    out.emplace_back(ids[i], bias[i]);
  }
  q->params.sampling.logit_bias = std::move(out);
  return LS_OK;
}

ls_status ls_seq_set_json(ls_seq* q, int on) {
  if (ls_status st = check_unsubmitted(q, "ls_seq_set_json"); st != LS_OK) return st;
  q->params.json = on != 0;
  return LS_OK;
}

ls_status ls_seq_set_json_schema(ls_seq* q, const char* schema_json) {
  if (ls_status st = check_unsubmitted(q, "ls_seq_set_json_schema"); st != LS_OK) return st;
  if (!schema_json) {
    q->params.json_schema.reset();
    return LS_OK;
  }
  auto c = ls::compile_json_schema(std::string_view(schema_json));
  if (!c) return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_set_json_schema: " + c.error().message);
  q->params.json_schema = std::move(*c);
  q->params.json = true;
  return LS_OK;
}

ls_status ls_seq_set_logprobs(ls_seq* q, int n_top, ls_logprobs_callback cb, void* user) {
  if (ls_status st = check_unsubmitted(q, "ls_seq_set_logprobs"); st != LS_OK) return st;
  if (n_top < 0 || n_top > ls::kMaxTopLogprobs)
    return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_set_logprobs: n_top must be 0 to " +
                                             std::to_string(ls::kMaxTopLogprobs) + " (got " +
                                             std::to_string(n_top) + ")");
  q->params.logprobs = cb ? n_top : -1;
  q->lp_cb = cb;
  q->lp_user = user;
  return LS_OK;
}

ls_status ls_seq_submit(ls_seq* q, ls_token_callback cb, void* user) {
  if (!q) return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_submit: null sequence");
  {
    std::lock_guard<std::mutex> lock(q->mu);
    if (q->submitted) return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_submit: already submitted");
    q->submitted = true;
  }
  q->cb = cb;
  q->user = user;
  ls::GenSink sink;
  if (q->lp_cb)
    sink.on_logprobs = [q](const ls::TokenLogprobs& l) {
      int32_t ids[ls::kMaxTopLogprobs];
      float lps[ls::kMaxTopLogprobs];
      const size_t n = std::min<size_t>(l.top.size(), ls::kMaxTopLogprobs);
      for (size_t i = 0; i < n; ++i) {
        ids[i] = l.top[i].first;
        lps[i] = l.top[i].second;
      }
      const ls_logprobs out{l.token, l.logprob, n, ids, lps};
      q->lp_cb(q->lp_user, &out);
    };
  sink.on_token = [q](int32_t id, std::string_view text) {
    if (q->cb) {
      const ls_token t{id, text.data(), text.size()};
      return q->cb(q->user, &t) == 0;
    }
    {
      std::lock_guard<std::mutex> lock(q->mu);
      q->got.emplace_back(id, std::string(text));
    }
    q->cv.notify_all();
    return true;
  };
  sink.on_end = [q](const ls::GenEnd& end) {
    if (!end.tail.empty()) {
      if (q->cb) {
        const ls_token t{-1, end.tail.data(), end.tail.size()};
        (void)q->cb(q->user, &t);
      } else {
        std::lock_guard<std::mutex> lock(q->mu);
        q->got.emplace_back(-1, end.tail);
      }
    }
    {
      std::lock_guard<std::mutex> lock(q->mu);
      q->ended = true;
      q->finish = finish_of(end.reason);
      q->n_tokens = end.completion_tokens;
      q->error = end.error;
    }
    q->cv.notify_all();
  };
  const ls::GenStart st = q->e->gen->start(q->prompt, q->params, std::move(sink));
  if (!st.ok()) {
    {
      std::lock_guard<std::mutex> lock(q->mu);
      q->submitted = false;
    }
    switch (st.refusal) {
      case ls::GenRefusal::Busy:
        return fail(LS_ERR_BUSY, st.message);
      case ls::GenRefusal::TooLong:
        return fail(LS_ERR_CONTEXT, st.message);
      case ls::GenRefusal::Stopped:
        return fail(LS_ERR_ENGINE, st.message);
      default:
        return fail(LS_ERR_INVALID_ARGUMENT, st.message);
    }
  }
  std::lock_guard<std::mutex> lock(q->mu);
  q->id = st.id;
  return LS_OK;
}

ls_status ls_seq_poll(ls_seq* q, ls_token* out, size_t cap, size_t* n_out, int timeout_ms,
                      int* finished) {
  if (!q || (!out && cap) || !n_out || !finished)
    return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_poll: null argument");
  std::unique_lock<std::mutex> lock(q->mu);
  if (!q->submitted) return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_poll: not submitted");
  if (q->cb) return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_poll: submitted with a callback");
  *n_out = 0;
  *finished = 0;
  const bool any = wait_for(q, lock, timeout_ms, [q] { return !q->got.empty() || q->ended; });
  q->taken.clear();
  while (!q->got.empty() && q->taken.size() < cap) {
    q->taken.push_back(std::move(q->got.front()));
    q->got.pop_front();
  }
  for (size_t i = 0; i < q->taken.size(); ++i)
    out[i] = ls_token{q->taken[i].first, q->taken[i].second.data(), q->taken[i].second.size()};
  *n_out = q->taken.size();
  *finished = q->ended && q->got.empty();
  if (!any)
    return fail(LS_ERR_TIMEOUT,
                "ls_seq_poll: nothing within " + std::to_string(timeout_ms) + " ms");
  return LS_OK;
}

ls_status ls_seq_cancel(ls_seq* q) {
  if (!q) return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_cancel: null sequence");
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(q->mu);
    id = q->id;
  }
  if (id) q->e->gen->cancel(id);
  return LS_OK;
}

ls_status ls_seq_wait(ls_seq* q, int timeout_ms, ls_finish* finish, size_t* n_tokens) {
  if (!q) return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_wait: null sequence");
  std::unique_lock<std::mutex> lock(q->mu);
  if (!q->submitted) return fail(LS_ERR_INVALID_ARGUMENT, "ls_seq_wait: not submitted");
  if (!wait_for(q, lock, timeout_ms, [q] { return q->ended; }))
    return fail(LS_ERR_TIMEOUT,
                "ls_seq_wait: not ended within " + std::to_string(timeout_ms) + " ms");
  if (finish) *finish = q->finish;
  if (n_tokens) *n_tokens = q->n_tokens;
  if (q->finish == LS_FINISH_ERROR) return fail(LS_ERR_ENGINE, q->error);
  return LS_OK;
}

void ls_seq_free(ls_seq* q) {
  if (!q) return;
  bool running;
  {
    std::lock_guard<std::mutex> lock(q->mu);
    running = q->submitted && !q->ended;
  }
  if (running) {
    // Its sink points at q: it must have ended before q goes.
    while (true) {
      (void)ls_seq_cancel(q);
      std::unique_lock<std::mutex> lock(q->mu);
      if (q->cv.wait_for(lock, std::chrono::milliseconds(100), [q] { return q->ended; })) break;
    }
  }
  delete q;
}

}  // extern "C"
