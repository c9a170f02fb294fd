#include "tools/serve/routes.h"

#include <chrono>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "model/tokenizer.h"
#include "tools/serve/api_request.h"
#include "tools/serve/chat_page.h"
#include "tools/serve/responses.h"
#include "tools/serve/sse.h"
#include "tools/serve/tool_calls.h"

namespace ls {
namespace {

using json = nlohmann::json;

HttpResponse json_response(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse error_response(const ApiError& e) {
  HttpResponse r = json_response(e.status, api_error_body(e));
  if (e.status == 429) r.headers.emplace_back("Retry-After", "1");
  if (e.status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

// llama-server's answer while the model loads (clients poll /health for it).
HttpResponse loading_response() {
  return error_response(ApiError{503, "Loading model", "unavailable_error", {}, {}});
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Equal, in a time that does not depend on where they differ (the API key;
// its length is no secret worth the trouble).
bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

}  // namespace

Routes::Routes(ServeSettings s, HttpCounters& http) : s_(std::move(s)), http_(http) {}

void Routes::set_ready(Generator* g) {
  const Model& m = g->model();
  std::string tmpl;
  const std::string* tp = nullptr;
  if (auto t = m.file->get_string("tokenizer.chat_template")) {
    tmpl = *t;
    tp = &tmpl;
  }
  chat_format_ = chat_format_for(tp, m.tokenizer->family() == TokenizerFamily::Llama3Bpe);
  created_ = unix_now();
  gen_.store(g);  // publishes the two above
}

std::string Routes::route_label(const std::string& t) {
  for (const char* known :
       {"/", "/health", "/metrics", "/v1/models", "/models", "/v1/completions", "/completions",
        "/v1/chat/completions", "/chat/completions", "/tokenize", "/detokenize"})
    if (t == known) return t;
  return "other";
}

bool Routes::authorized(const HttpRequest& r) const {
  if (s_.api_key.empty()) return true;
  static constexpr std::string_view kBearer = "Bearer ";
  if (r.authorization.compare(0, kBearer.size(), kBearer) != 0) return false;
  return same_secret(r.authorization.substr(kBearer.size()), s_.api_key);
}

Reply Routes::handle(const HttpRequest& r) {
  const std::string& t = r.target;
  const bool get = r.method == "GET";
  const bool post = r.method == "POST";
  auto method_not_allowed = [&](const char* allow) {
    HttpResponse resp =
        error_response(ApiError{405,
                                r.method + " " + t + ": this endpoint takes " + allow,
                                "invalid_request_error",
                                {},
                                {}});
    resp.headers.emplace_back("Allow", allow);
    return resp;
  };
  // Open to all: the page (it asks for the key itself) and the health check.
  if (t == "/") {
    if (!get) return method_not_allowed("GET");
    HttpResponse page;
    page.content_type = "text/html; charset=utf-8";
    page.body.assign(kChatPageHtml, kChatPageHtml_len);
    return page;
  }
  Generator* g = gen_.load();
  if (t == "/health") {
    if (!get) return method_not_allowed("GET");
    if (!g) return loading_response();
    return json_response(200, R"({"status":"ok"})");
  }
  const bool known = route_label(t) != "other";
  if (!known)
    return error_response(not_found("no endpoint " + r.method + " " + t +
                                    " (see GET /v1/models, POST /v1/completions, POST "
                                    "/v1/chat/completions)"));
  if (!authorized(r))
    return error_response(ApiError{401,
                                   r.authorization.empty()
                                       ? "no API key: send the header 'Authorization: Bearer KEY'"
                                       : "invalid API key",
                                   "authentication_error",
                                   {},
                                   "invalid_api_key"});
  if (t == "/metrics") {
    if (!get) return method_not_allowed("GET");
    GenStats st;
    if (g) st = g->stats();
    HttpResponse resp = json_response(200, metrics_text(g ? &st : nullptr, http_));
    resp.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return resp;
  }
  if (!g) return loading_response();
  if (t == "/v1/models" || t == "/models") {
    if (!get) return method_not_allowed("GET");
    return json_response(200, models_body(s_.model_id, created_, g->n_ctx(),
                                          g->model().config().n_vocab, g->stats().n_seq));
  }
  if (!post) return method_not_allowed("POST");
  if (t == "/tokenize") return tokenize(r);
  if (t == "/detokenize") return detokenize(r);
  return generate(r, t == "/v1/chat/completions" || t == "/chat/completions");
}

HttpResponse Routes::tokenize(const HttpRequest& r) {
  auto p = parse_tokenize_request(r.body);
  if (auto* e = std::get_if<ApiError>(&p)) return error_response(*e);
  const TokenizeRequest& q = std::get<TokenizeRequest>(p);
  const Tokenizer& tok = *gen_.load()->model().tokenizer;
  const std::vector<int32_t> ids =
      tok.encode(q.content, q.add_special && tok.add_bos_default(), q.parse_special);
  return json_response(200, json({{"tokens", ids}}).dump());
}

HttpResponse Routes::detokenize(const HttpRequest& r) {
  auto p = parse_detokenize_request(r.body);
  if (auto* e = std::get_if<ApiError>(&p)) return error_response(*e);
  const DetokenizeRequest& q = std::get<DetokenizeRequest>(p);
  const Tokenizer& tok = *gen_.load()->model().tokenizer;
  for (int32_t id : q.tokens)
    if (id >= tok.n_vocab())
      return error_response(bad_request("token id " + std::to_string(id) +
                                            " is outside the vocabulary (0.." +
                                            std::to_string(tok.n_vocab() - 1) + ")",
                                        "tokens"));
  const std::string text = ls::detokenize(tok, q.tokens);
  return json_response(
      200, json({{"content", text}}).dump(-1, ' ', false, json::error_handler_t::replace));
}

// What a request's generations write into: one per choice (the request's
// n), all into one response. A choice's on_token and on_end run one after
// the other (the sampler actor, or the reaper for the end), never at once;
// different choices' may, so what they share is under the group's mutex.
namespace {
struct GenGroup {
  ResponseMeta meta;  // index 0; each choice's chunks carry their own
  bool stream = false, include_usage = false, logprobs = false;
  std::shared_ptr<ResponseStream> out;
  const std::atomic<bool>* draining = nullptr;
  std::mutex mu;
  size_t left = 0;               // choices still running
  bool failed = false;           // one ended without its text: the response is its error
  std::vector<ChoiceOut> whole;  // stream: false: each choice's answer
  Usage usage;                   // the prompt once, the completions summed
  // Chat's tools: an answer that stops may make calls of them (not with
  // None); parallel_tool_calls false keeps the first of several.
  std::vector<ChatTool> tools;
  ToolChoice tool_choice = ToolChoice::None;
  bool parallel_tool_calls = true;
};

struct GenState {
  std::shared_ptr<GenGroup> group;
  ResponseMeta meta;  // the group's, with this choice's index
  std::string text;
  // logprobs: the entries not yet sent (a stream sends them with the next
  // text; a whole answer keeps them all), and the bytes sent before them.
  std::vector<LogprobEntry> entries;
  size_t sent_bytes = 0;
  // A stream that may turn out tool calls keeps its text back until the
  // end: from the start (a forced call), or once an auto answer's first
  // byte past whitespace is '{' or '[' (decided: that byte came).
  bool decided = true, hold = false;
  std::string held;

  LogprobsPiece piece() const {
    return group->logprobs ? LogprobsPiece{&entries, sent_bytes} : LogprobsPiece{};
  }
  // A stream chunk with the entries so far, which it then counts as sent.
  std::string chunk(std::string_view text_piece, std::string_view reason = {}) {
    std::string c = meta.chat ? chat_chunk(meta, text_piece, reason, piece())
                              : completion_chunk(meta, text_piece, reason, piece());
    for (const LogprobEntry& e : entries) sent_bytes += e.token.size();
    entries.clear();
    return c;
  }
};

// A generation that ended without its text: the error (SSE: an error event,
// then [DONE], as OpenAI's streams end on an error).
ApiError end_error(const GenEnd& e, bool draining) {
  if (e.reason == FinishReason::Cancelled)
    return server_error(503, draining ? "the server is shutting down: the request was cancelled"
                                      : "the request was cancelled");
  return server_error(500, "generation failed: " + e.error);
}
}  // namespace

Reply Routes::generate(const HttpRequest& r, bool chat) {
  Generator& g = *gen_.load();
  if (draining_.load())
    return error_response(server_error(503, "the server is shutting down", "unavailable_error"));
  auto parsed = chat ? parse_chat_request(r.body, s_.sampling)
                     : parse_completion_request(r.body, s_.sampling);
  if (auto* e = std::get_if<ApiError>(&parsed)) return error_response(*e);
  GenerateRequest& q = std::get<GenerateRequest>(parsed);
  if (!q.model.empty() && q.model != s_.model_id && q.model != s_.model_file)
    return error_response(not_found("The model '" + q.model +
                                        "' does not exist: this server serves '" + s_.model_id +
                                        "' (GET /v1/models)",
                                    "model", "model_not_found"));

  // The prompt's tokens: the chat template's text (its special tokens
  // parsed), the completion's text (with the BOS the model wants), or ids.
  const Tokenizer& tok = *g.model().tokenizer;
  const std::string echo_text = !q.echo                ? std::string()
                                : q.prompt_ids.empty() ? q.prompt
                                                       : ls::detokenize(tok, q.prompt_ids);
  std::vector<int32_t> prompt;
  if (chat) {
    // Tools, tool calls and tool results: Llama 3's (3.1's JSON calls) only.
    if (!chat_has_tools(chat_format_)) {
      if (!q.tools.empty())
        return error_response(
            bad_request("'tools' is not supported for this model: its chat format (Llama 2) has "
                        "no tool calling here (Llama 3's has)",
                        "tools"));
      for (size_t i = 0; i < q.messages.size(); ++i)
        if (q.messages[i].role == "tool" || !q.messages[i].tool_calls.empty())
          return error_response(bad_request(
              "'messages[" + std::to_string(i) +
                  "]' is a tool call or result, but this model's chat format (Llama 2) has no "
                  "tool calling here",
              "messages[" + std::to_string(i) + "]"));
    }
    const std::string text = chat_render(chat_format_, q.messages, true, q.tools);
    prompt = tok.encode(text, tok.add_bos_default() && !chat_bos_in_text(chat_format_), true);
  } else if (!q.prompt_ids.empty()) {
    prompt = std::move(q.prompt_ids);
  } else {
    prompt = tok.encode(q.prompt, tok.add_bos_default(), true);
  }
  const int32_t n_vocab = static_cast<int32_t>(g.model().config().n_vocab);
  if (const int64_t id = logit_bias_outside(q.sampling, n_vocab); id >= 0)
    return error_response(bad_request("'logit_bias' holds token id " + std::to_string(id) +
                                          ", outside the vocabulary (0.." +
                                          std::to_string(n_vocab - 1) + ")",
                                      "logit_bias"));
  // n choices are n requests: more than the server ever holds could only
  // ever get 429, so say why instead.
  if (static_cast<uint32_t>(q.n) > g.capacity())
    return error_response(bad_request(
        "'n' is " + std::to_string(q.n) + ", but this server holds at most " +
            std::to_string(g.capacity()) + " requests at once (--parallel and --max-queue)",
        "n"));
  GenParams gp;
  gp.sampling = q.sampling;
  gp.max_tokens = q.max_tokens > 0 ? q.max_tokens : s_.n_predict;
  // Without a budget, up to the context's end (no 400 for a prompt that
  // leaves little room; the answer ends with finish_reason "length").
  gp.stop = std::move(q.stop);
  gp.ignore_eos = q.ignore_eos;
  gp.cache_prompt = q.cache_prompt;
  gp.json = q.json;
  gp.json_schema = q.json_schema;
  gp.logprobs = q.logprobs;

  auto grp = std::make_shared<GenGroup>();
  grp->meta.chat = chat;
  grp->meta.id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_.fetch_add(1));
  grp->meta.model = s_.model_id;
  grp->meta.created = unix_now();
  grp->stream = q.stream;
  grp->include_usage = q.include_usage;
  grp->logprobs = q.logprobs >= 0;
  grp->out = std::make_shared<ResponseStream>(q.stream);
  grp->draining = &draining_;
  grp->left = static_cast<size_t>(q.n);
  grp->whole.resize(static_cast<size_t>(q.n));
  grp->tools = q.tools;
  grp->tool_choice = q.tool_choice;
  grp->parallel_tool_calls = q.parallel_tool_calls;

  std::vector<uint64_t> ids;
  for (int c = 0; c < q.n; ++c) {
    auto st = std::make_shared<GenState>();
    st->group = grp;
    st->meta = grp->meta;
    st->meta.index = c;
    if (q.stream && chat) grp->out->push(sse_frame(chat_role_chunk(st->meta)));
    if (q.echo) {  // before the choice starts: its first chunk, or its text's start
      if (q.stream)
        grp->out->push(sse_frame(st->chunk(echo_text)));
      else
        st->text = echo_text;
    }
    GenParams gc = gp;
    // A seeded request's choices: seed, seed + 1, ... (each its own draws).
    if (gc.sampling.seed != kSamplerRandomSeed) gc.sampling.seed += static_cast<uint64_t>(c);
    GenSink sink;
    if (grp->logprobs)
      sink.on_logprobs = [st, tp = &tok](const TokenLogprobs& l) {
        LogprobEntry e{tp->piece(l.token), l.logprob, {}};
        for (const auto& [id, v] : l.top) e.top.emplace_back(tp->piece(id), v);
        st->entries.push_back(std::move(e));
      };
    if (q.stream && !q.tools.empty()) {
      st->hold = q.tool_choice == ToolChoice::Required || q.tool_choice == ToolChoice::Named;
      st->decided = q.tool_choice != ToolChoice::Auto;
    }
    sink.on_token = [st](int32_t, std::string_view text) {
      if (text.empty()) return true;  // held back (a partial character, a stop string's start)
      if (!st->group->stream) {
        st->text.append(text);
        return true;
      }
      if (!st->decided) {
        st->held.append(text);
        const size_t at = st->held.find_first_not_of(" \t\r\n");
        if (at == std::string::npos) return true;
        st->decided = true;
        st->hold = tool_calls_may_start(st->held[at]);
        if (st->hold) return true;
        text = st->held;  // prose: what was held goes out now, and the rest as it comes
      } else if (st->hold) {
        st->held.append(text);
        return true;
      }
      st->group->out->push(sse_frame(st->chunk(text)));
      st->held.clear();
      return true;
    };
    sink.on_end = [st](const GenEnd& e) {
      GenGroup& gr = *st->group;
      const bool text_end = e.reason == FinishReason::Stop || e.reason == FinishReason::Length;
      const char* reason = finish_reason_name(e.reason);
      std::lock_guard<std::mutex> lock(gr.mu);
      --gr.left;
      if (gr.failed) return;  // the response already ended with another choice's error
      if (!text_end) {
        gr.failed = true;
        const ApiError err = end_error(e, gr.draining->load());
        if (gr.stream) {
          HttpResponse last;
          last.body = sse_frame(api_error_body(err));
          last.body += kSseDone;
          gr.out->finish(std::move(last));
        } else {
          gr.out->finish(error_response(err));
        }
        return;
      }
      if (st->meta.index == 0) {
        gr.usage.prompt_tokens = e.prompt_tokens;
        gr.usage.cached_tokens = e.cached_tokens;
      }
      gr.usage.completion_tokens += e.completion_tokens;
      // The text not yet sent (a stream's held text and the tail), and
      // the tool calls it makes: only an answer that stopped (one cut by
      // max_tokens is its text, finish_reason "length").
      const bool held = gr.stream && (st->hold || !st->decided);
      std::string rest = (gr.stream ? st->held : st->text) + e.tail;
      std::vector<ToolCallOut> calls;
      if (e.reason == FinishReason::Stop && gr.tool_choice != ToolChoice::None &&
          (!gr.stream || held))
        calls = answer_tool_calls(rest, gr.tools, gr.parallel_tool_calls);
      if (!calls.empty()) reason = "tool_calls";
      if (gr.stream) {
        for (const std::string& c : chat_tool_call_chunks(st->meta, calls))
          gr.out->push(sse_frame(c));
        gr.out->push(sse_frame(st->chunk(calls.empty() ? rest : std::string(), reason)));
        st->held.clear();
      } else {
        gr.whole[static_cast<size_t>(st->meta.index)] =
            ChoiceOut{std::move(rest), reason, st->piece(), std::move(calls)};
      }
      if (gr.left > 0) return;
      if (gr.stream) {
        HttpResponse last;
        if (gr.include_usage) last.body = sse_frame(usage_chunk(gr.meta, gr.usage));
        last.body += kSseDone;
        gr.out->finish(std::move(last));
      } else {
        gr.out->finish(json_response(200, gr.meta.chat
                                              ? chat_body(gr.meta, gr.whole, gr.usage)
                                              : completion_body(gr.meta, gr.whole, gr.usage)));
      }
    };
    GenStart started = g.start(prompt, gc, std::move(sink));
    if (!started.ok()) {
      for (uint64_t id : ids) g.cancel(id);  // the choices already started
      switch (started.refusal) {
        case GenRefusal::Busy:
          return error_response(
              ApiError{429, started.message, "rate_limit_error", {}, "queue_full"});
        case GenRefusal::TooLong:
          return error_response(ApiError{400, started.message, "invalid_request_error",
                                         chat ? "messages" : "prompt", "context_length_exceeded"});
        case GenRefusal::Stopped:
          return error_response(server_error(503, started.message, "unavailable_error"));
        default:
          return error_response(bad_request(started.message, chat ? "messages" : "prompt"));
      }
    }
    ids.push_back(started.id);
  }
  // The client leaving cancels the sequences: their slots and key/value
  // blocks are free at the next step.
  grp->out->on_abandon([&g, ids] {
    for (uint64_t id : ids) g.cancel(id);
  });
  return grp->out;
}

}  // namespace ls
