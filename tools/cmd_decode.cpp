// layerstream decode: generate text from a prompt (or chat), with llama.cpp's
// flag names where they exist. Every run goes through the actor pipeline;
// text streams to stdout as it is generated, the summary goes to stderr.
// Ctrl-C stops cleanly and still prints it (and writes the trace).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <iostream>
#include <memory>
#include <sstream>

#include "actors/engine.h"
#include "model/chat.h"
#include "model/json_constraint.h"
#include "model/json_schema.h"
#include "model/sampler.h"
#include "model/tokenizer.h"
#include "tools/commands.h"
#include "tools/decode_parallel.h"
#include "tools/decode_speculative.h"
#include "tools/engine_flags.h"
#include "tools/sampling_flags.h"

namespace ls {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct DecodeArgs {
  EngineOptions engine;
  EngineFlagText text;
  std::string prompt, prompt_file, dump_logits, system;
  int n_predict = 64;
  bool no_bos = false, special = false, ids = false, chat = false, no_display_prompt = false;
  SamplerParams sp;
  SamplingFlagText sampling_text;
  bool json = false;
  // llama.cpp's --json-schema / --json-schema-file: compiled into schema.
  std::string json_schema, json_schema_file;
  std::shared_ptr<const JsonSchema> schema;
  SpecOptions spec;
};

struct Stats {
  size_t prompt_tokens = 0, generated = 0;
  double prompt_s = 0, gen_s = 0;
  void add(const Stats& o) {
    prompt_tokens += o.prompt_tokens;
    generated += o.generated;
    prompt_s += o.prompt_s;
    gen_s += o.gen_s;
  }
  // Decode rate: the first token comes with the prompt's pass, so the rate
  // counts the tokens after it over the time after it.
  double decode_tok_s() const { return generated > 1 && gen_s > 0 ? (generated - 1) / gen_s : 0.0; }
};

// A request's end: the text still held back, and its times and counts.
void finish_request(Detokenizer& detok, Clock::time_point t0, Clock::time_point t_first, int count,
                    size_t n_prompt, Stats& st) {
  const std::string rest = detok.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fflush(stdout);
  if (count > 0) {
    st.prompt_s += std::chrono::duration<double>(t_first - t0).count();
    st.gen_s += seconds_since(t_first);
  }
  st.prompt_tokens += n_prompt;
  st.generated += static_cast<size_t>(count);
}

// One request through the pipeline: the prompt as one batch, then up to n
// sampled tokens, streamed as text. The callback runs on the sampler actor.
Status generate(Engine& e, Sampler& sampler, std::span<const int32_t> prompt, int n,
                std::FILE* dump, Stats& st, std::vector<int32_t>& out_ids, bool* hit_eog) {
  const Model& m = e.model();
  const size_t n_vocab = m.config().n_vocab;
  Detokenizer detok(*m.tokenizer);
  Status write_error;
  const auto t0 = Clock::now();
  Clock::time_point t_first;
  int count = 0;
  *hit_eog = false;
  if (n == 0) return ok();
  // The token chosen (by the sampler from the row, or, greedy, the argmax
  // taken where the logits are: actors/sampler.h's ArgmaxCallback).
  auto emit = [&](int32_t tok) -> std::optional<int32_t> {
    if (count == 0) t_first = Clock::now();
    sampler.accept(tok);
    out_ids.push_back(tok);
    ++count;
    if (m.tokenizer->is_eog(tok)) {
      *hit_eog = true;
      return std::nullopt;
    }
    const std::string text = detok.push(tok);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (count >= n) return std::nullopt;  // the last token need not be fed
    return tok;
  };
  ArgmaxCallback on_argmax;
  if (greedy_plain(sampler.params()) && !dump && !sampler.constraint())
    on_argmax = [&](int64_t, int32_t tok) { return emit(tok); };
  Status s = e.pipeline().run_request(
      prompt,
      [&](int64_t, const float* logits, int32_t rows) -> std::optional<int32_t> {
        const float* row = logits + static_cast<size_t>(rows - 1) * n_vocab;
        if (dump && std::fwrite(row, sizeof(float), n_vocab, dump) != n_vocab) {
          write_error = make_error("--dump-logits: write failed");
          return std::nullopt;
        }
        return emit(sampler.sample(row));
      },
      SIZE_MAX, std::move(on_argmax));
  finish_request(detok, t0, t_first, count, prompt.size(), st);
  if (!write_error.ok()) return write_error;
  return s;
}

// The same request with verify steps (--draft): the draft proposes, the
// target checks several tokens a pass; the tokens are the target's own.
Status generate_spec(Engine& e, SpeculativeDecoder& spec, Sampler& sampler,
                     std::span<const int32_t> prompt, int n, Stats& st,
                     std::vector<int32_t>& out_ids, bool* hit_eog) {
  const Model& m = e.model();
  Detokenizer detok(*m.tokenizer);
  const auto t0 = Clock::now();
  Clock::time_point t_first;
  int count = 0;
  *hit_eog = false;
  Status s = spec.run(e, sampler, prompt, n, [&](int32_t tok) {
    if (count == 0) t_first = Clock::now();
    out_ids.push_back(tok);
    ++count;
    if (m.tokenizer->is_eog(tok)) {
      *hit_eog = true;
      return false;
    }
    const std::string text = detok.push(tok);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  finish_request(detok, t0, t_first, count, prompt.size(), st);
  return s;
}

void print_summary(const Stats& s, const Engine& e) {
  const double dec = s.decode_tok_s();
  std::fprintf(stderr,
               "\nlayerstream: prompt %zu tokens, %.1f tok/s | generated %zu tokens, %.2f tok/s | "
               "load %.2f s | backend %s, reader %s\n",
               s.prompt_tokens, s.prompt_s > 0 ? s.prompt_tokens / s.prompt_s : 0.0, s.generated,
               dec, e.load_seconds(), const_cast<Engine&>(e).backend_name(),
               const_cast<Engine&>(e).pipeline().source_name());
}

int run_decode(DecodeArgs& a) {
  if (a.n_predict < 0)
    return fail("-n must be 0 or more (got " + std::to_string(a.n_predict) + ")");
  if (!a.prompt.empty() && !a.prompt_file.empty()) return fail("give -p or -f, not both");
  if (Status st = finish_engine_flags(a.engine, a.text); !st.ok()) return fail(st.error().message);
  if (Status st = finish_sampling_flags(a.sp, a.sampling_text); !st.ok())
    return fail(st.error().message);
  const bool parallel = a.engine.n_seq > 1;
  if (parallel && a.chat) return fail("--chat runs one conversation: drop --parallel");
  if (!a.json_schema.empty() && !a.json_schema_file.empty())
    return fail("give --json-schema or --json-schema-file, not both");
  if (!a.json_schema.empty() || !a.json_schema_file.empty()) {
    std::string text = a.json_schema;
    const std::string where = a.json_schema.empty() ? a.json_schema_file : "--json-schema";
    if (!a.json_schema_file.empty()) {
      std::ifstream in(a.json_schema_file, std::ios::binary);
      if (!in) return fail("cannot read --json-schema-file " + a.json_schema_file);
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    auto c = compile_json_schema(std::string_view(text));
    if (!c) return fail(where + ": " + c.error().message);
    a.schema = std::move(*c);
  }
  const char* json_flag = a.json_schema.empty()
                              ? a.json_schema_file.empty() ? "--json" : "--json-schema-file"
                              : "--json-schema";
  if ((a.json || a.schema) && (a.chat || parallel || !a.spec.draft.empty()))
    return fail(std::string(json_flag) +
                " constrains one plain decode: drop --chat, --parallel and --draft");
  if (parallel && !a.dump_logits.empty())
    return fail("--dump-logits writes one sequence's rows: drop --parallel");
  std::vector<std::string> lines;  // --parallel: one prompt a line of -f
  if (!a.prompt_file.empty()) {
    std::ifstream in(a.prompt_file, std::ios::binary);
    if (!in) return fail(a.prompt_file + ": cannot read the prompt file");
    std::stringstream ss;
    ss << in.rdbuf();
    a.prompt = ss.str();
    if (parallel) {
      std::istringstream ls(a.prompt);
      for (std::string l; std::getline(ls, l);)
        if (!l.empty()) lines.push_back(l);
      if (lines.empty()) return fail(a.prompt_file + ": no prompt in it (one a line)");
    }
  } else if (parallel) {
    lines.assign(a.engine.n_seq, a.prompt);  // the same prompt in every sequence
  }
  std::unique_ptr<SpeculativeDecoder> spec;
  if (!a.spec.draft.empty()) {
    if (parallel) return fail("--draft runs one sequence: drop --parallel");
    if (!a.dump_logits.empty()) return fail("--dump-logits and --draft: give one of them");
    auto sd = SpeculativeDecoder::make(a.spec, a.engine);  // before the model: its memory first
    if (!sd) return fail(sd.error().message);
    spec = std::move(*sd);
    // One CPU pool for both models: their steps take turns, and a second
    // pool's idle workers would spin beside the working one's.
    a.engine.cpu_pool = spec->cpu_pool();
  }
  auto er = Engine::open(a.engine);
  if (!er) return fail(er.error().message);
  Engine& e = **er;
  const Model& m = e.model();
  if (spec)
    if (Status st = spec->attach(m); !st.ok()) return fail(st.error().message);
  if (Status st = check_logit_bias_vocab(a.sp, m.config().n_vocab); !st.ok())
    return fail(st.error().message);
  Sampler sampler(a.sp, static_cast<int32_t>(m.config().n_vocab));

  std::FILE* dump = nullptr;
  if (!a.dump_logits.empty()) {
    dump = std::fopen(a.dump_logits.c_str(), "wb");
    if (!dump) return fail(a.dump_logits + ": cannot create the logits file");
  }
  struct Closer {
    std::FILE* f;
    ~Closer() {
      if (f) std::fclose(f);
    }
  } closer{dump};
  auto gen = [&](std::span<const int32_t> p, Stats& st, std::vector<int32_t>& out, bool* eog) {
    return spec ? generate_spec(e, *spec, sampler, p, a.n_predict, st, out, eog)
                : generate(e, sampler, p, a.n_predict, dump, st, out, eog);
  };

  const bool add_bos = m.tokenizer->add_bos_default() && !a.no_bos;
  if (parallel) {
    ParallelDecodeArgs pa;
    pa.prompts = std::move(lines);
    pa.n_predict = a.n_predict;
    pa.add_bos = add_bos;
    pa.special = a.special;
    pa.ids = a.ids;
    pa.sp = a.sp;
    Status ps = run_decode_parallel(e, pa);
    const int sig = e.interrupt_signal();
    Status fin = e.finish();
    if (sig != 0) return 128 + sig;
    if (!ps.ok()) return fail(ps.error().message);
    if (!fin.ok()) return fail(fin.error().message);
    return 0;
  }
  const uint32_t n_ctx = e.pipeline().n_ctx();
  Stats st;
  std::vector<int32_t> out_ids;
  Status status;
  bool eog = false;

  if (!a.chat) {
    std::vector<int32_t> prompt = m.tokenizer->encode(a.prompt, add_bos, a.special);
    if (prompt.empty())
      return fail("the prompt is empty (and --no-bos leaves no token to start from)");
    if (prompt.size() > n_ctx)
      return fail("the prompt is " + std::to_string(prompt.size()) +
                  " tokens, longer than the context (-c " + std::to_string(n_ctx) + ")");
    for (int32_t t : prompt) sampler.accept(t);
    if (a.json || a.schema)
      sampler.set_constraint(std::make_unique<JsonConstraint>(json_vocab(*m.tokenizer), a.schema));
    if (!a.no_display_prompt) {
      std::fwrite(a.prompt.data(), 1, a.prompt.size(), stdout);
      std::fflush(stdout);
    }
    status = gen(prompt, st, out_ids, &eog);
    if (status.ok() && !eog && static_cast<int>(st.generated) < a.n_predict)
      std::fprintf(stderr, "\nlayerstream: the context (%u tokens) is full; stopped\n", n_ctx);
  } else {
    const std::string* tmpl = nullptr;
    std::string tmpl_s;
    if (auto t = m.file->get_string("tokenizer.chat_template")) {
      tmpl_s = *t;
      tmpl = &tmpl_s;
    }
    const ChatFormat fmt =
        chat_format_for(tmpl, m.tokenizer->family() == TokenizerFamily::Llama3Bpe);
    std::fprintf(stderr, "layerstream: chat (%s format); an empty line or Ctrl-D ends it\n",
                 fmt == ChatFormat::Llama3 ? "Llama 3" : "Llama 2");
    bool first = true;
    int turn_no = 0;
    std::string line;
    std::vector<int32_t> carry;  // tokens to feed before the next turn's text
    const std::string* sys = a.system.empty() ? nullptr : &a.system;
    // The conversation as text, to compute it again when the context is full.
    std::vector<ChatMessage> said;
    // Room a reply needs: -n, at most a quarter of the context.
    const uint32_t reply_room = std::max<uint32_t>(
        1, std::min<uint32_t>(a.n_predict > 0 ? static_cast<uint32_t>(a.n_predict) : n_ctx / 4,
                              n_ctx / 4));
    while (status.ok() && !e.control().stopped()) {
      std::fprintf(stderr, "\n> ");
      if (!std::getline(std::cin, line) || line.empty()) break;
      std::string text = chat_render_turn(fmt, {"user", line}, first, sys);
      // The chat format's own special tokens are parsed; the reply's end
      // token is already in the cache (fed below) when the next turn starts.
      std::vector<int32_t> toks = std::move(carry);
      std::vector<int32_t> turn =
          m.tokenizer->encode(text, first && add_bos && !chat_bos_in_text(fmt), true);
      toks.insert(toks.end(), turn.begin(), turn.end());
      carry.clear();
      first = false;
      if (e.pipeline().n_past() + toks.size() + reply_room > n_ctx) {
        // The context is full: as llama.cpp's chat does, the oldest turns go
        // (the system prompt stays) until the rest fills at most half of it,
        // and the conversation is computed again from its start.
        size_t dropped = 0;
        std::vector<ChatMessage> keep;
        for (;;) {
          keep.clear();
          if (sys) keep.push_back({"system", *sys});
          keep.insert(keep.end(), said.begin() + static_cast<std::ptrdiff_t>(dropped), said.end());
          keep.push_back({"user", line});
          text = chat_render(fmt, keep, true);
          turn = m.tokenizer->encode(text, add_bos && !chat_bos_in_text(fmt), true);
          if (turn.size() <= n_ctx / 2 || dropped >= said.size()) break;
          dropped += 2;  // a user turn and its reply
        }
        if (turn.size() + 1 > n_ctx) {
          status = make_error(
              "the turn is %zu tokens with the system prompt, more than the "
              "context (-c %u)",
              turn.size(), n_ctx);
          break;
        }
        said.erase(said.begin(), said.begin() + static_cast<std::ptrdiff_t>(dropped));
        std::fprintf(stderr,
                     "layerstream: the context (%u tokens) is full: the oldest %zu turns are "
                     "dropped and the conversation (%zu tokens) is computed again\n",
                     n_ctx, dropped / 2, turn.size());
        e.pipeline().rewind();
        toks = turn;
      }
      for (int32_t t : turn) sampler.accept(t);
      std::vector<int32_t> reply;
      Stats ts;
      status = gen(toks, ts, reply, &eog);
      st.add(ts);
      if (!status.ok()) break;
      // Each turn's rates: the context only grows in a chat, and so does
      // what every token costs; the user sees it turn by turn.
      ++turn_no;
      std::fprintf(stderr,
                   "\nlayerstream: turn %d: prompt %zu tokens, %.1f tok/s | generated %zu tokens, "
                   "%.2f tok/s | context %u tokens\n",
                   turn_no, ts.prompt_tokens,
                   ts.prompt_s > 0 ? ts.prompt_tokens / ts.prompt_s : 0.0, ts.generated,
                   ts.decode_tok_s(), e.pipeline().n_past());
      out_ids.insert(out_ids.end(), reply.begin(), reply.end());
      said.push_back({"user", line});
      std::vector<int32_t> content = reply;
      if (eog && !content.empty()) content.pop_back();  // the end-of-turn token
      said.push_back({"assistant", detokenize(*m.tokenizer, content)});
      // The reply's last token was sampled but not fed. It goes in front of
      // the next turn, with the end-of-turn token when the reply was cut
      // short, so the cache holds the whole conversation without an extra
      // pass over the weights.
      if (!reply.empty()) {
        carry.push_back(reply.back());
        if (!eog)
          carry.push_back(m.tokenizer->eot() >= 0 ? m.tokenizer->eot() : m.tokenizer->eos());
      }
    }
  }
  if (a.ids) {
    std::string line;
    for (size_t i = 0; i < out_ids.size(); ++i) line += (i ? " " : "") + std::to_string(out_ids[i]);
    std::printf("\n%s\n", line.c_str());
  }
  const int sig = e.interrupt_signal();
  Status fin = e.finish();
  print_summary(st, e);
  if (spec) std::fprintf(stderr, "layerstream: %s\n", spec->report().to_text(spec->name()).c_str());
  if (sig != 0) {
    // The shell's convention: 128 + the signal (130 for Ctrl-C, 143 for SIGTERM).
    std::fprintf(stderr, "layerstream: %s\n",
                 sig == SIGINT ? "interrupted (Ctrl-C)" : "terminated (SIGTERM)");
    return 128 + sig;
  }
  if (!status.ok()) return fail(status.error().message);
  if (!fin.ok()) return fail(fin.error().message);
  return 0;
}

}  // namespace

Command add_decode(CLI::App& app) {
  auto* sub = app.add_subcommand("decode", "Generate text from a prompt (the main job)");
  auto a = std::make_shared<DecodeArgs>();
  a->sp.temp = 0.8f;
  add_engine_flags(sub, a->engine, a->text);
  sub->add_option("-p,--prompt", a->prompt, "Prompt text");
  sub->add_option("-f,--file", a->prompt_file,
                  "Read the prompt from a file (with --parallel: one prompt a line)");
  sub->add_option("-n,--n-predict", a->n_predict, "Tokens to generate")->capture_default_str();
  add_sampling_flags(sub, a->sp, a->sampling_text, "");
  sub->add_option("-s,--seed", a->sp.seed, "Sampling seed (default: random)");
  sub->add_flag("--no-bos", a->no_bos, "Do not add the BOS token");
  sub->add_flag("--special", a->special, "Parse special tokens in the prompt");
  sub->add_flag("--ids", a->ids, "Print the generated token ids on one line at the end");
  sub->add_flag("--json", a->json,
                "JSON mode: the output is one JSON object, then the end (the server's "
                "response_format json_object)");
  sub->add_option("--json-schema", a->json_schema,
                  "Structured output: the output is one JSON document valid for this JSON "
                  "schema (the subset of docs/cli.md), then the end (the server's "
                  "response_format json_schema)");
  sub->add_option("--json-schema-file", a->json_schema_file,
                  "--json-schema, with the schema read from a file");
  sub->add_option("--dump-logits", a->dump_logits,
                  "Write raw float32 logits, one row per generated token: the row it was "
                  "sampled from (the first is the prompt's last position)");
  sub->add_flag("--chat", a->chat, "Interactive chat (keeps the KV cache across turns)");
  sub->add_option("--system", a->system, "System prompt for --chat");
  sub->add_flag("--no-display-prompt", a->no_display_prompt, "Do not echo the prompt");
  sub->add_option("--draft,--model-draft", a->spec.draft,
                  "Speculative decoding: a draft model (GGUF, same tokenizer), 'self:LIST' or "
                  "'self:auto:N' (the model without those layers, as --skip-layers), 'lookup' "
                  "(prompt lookup, no model), or 'replay:FILE:ALPHA' (a benchmark tool: the "
                  "model's own greedy ids from FILE, a share 1 - ALPHA of them made wrong)");
  sub->add_option("--draft-max", a->spec.k_max, "Most draft tokens a step")->capture_default_str();
  sub->add_option("--draft-min", a->spec.k_min, "Fewest draft tokens a step")
      ->capture_default_str();
  sub->add_option("--draft-p-min", a->spec.p_min,
                  "A draft model stops proposing below this probability")
      ->capture_default_str();
  return [a] { return run_decode(*a); };
}

}  // namespace ls
