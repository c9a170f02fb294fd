// layerstream decode: generate text from a prompt (or chat), with llama.cpp's
// flag names where they exist. Text streams to stdout as it is generated; the
// summary line goes to stderr. Ctrl-C stops cleanly and still prints it.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "model/chat.h"
#include "model/cpu_backend.h"
#include "model/default_model.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/session.h"
#include "tools/commands.h"

namespace ls {
namespace {

std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted.store(true); }

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct DecodeArgs {
  std::string model, prompt, prompt_file, backend = "auto", dump_logits, system, kv_type = "f16";
  int n_predict = 64;
  int n_ctx = 0;
  int threads = 0;
  bool no_bos = false, special = false, ids = false, chat = false, no_display_prompt = false;
  SamplerParams sp;
};

struct Stats {
  size_t prompt_tokens = 0, generated = 0;
  double prompt_s = 0, gen_s = 0, load_s = 0;
};

int fail(const std::string& msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  return 1;
}

void print_summary(const Stats& s, const char* backend, int threads) {
  std::fprintf(stderr,
               "\nlayerstream: prompt %zu tokens, %.1f tok/s | generated %zu tokens, %.2f tok/s | "
               "load %.2f s | backend %s, %d threads\n",
               s.prompt_tokens, s.prompt_s > 0 ? s.prompt_tokens / s.prompt_s : 0.0, s.generated,
               s.gen_s > 0 ? s.generated / s.gen_s : 0.0, s.load_s, backend, threads);
}

// Generate up to n tokens after `logits`; streams text; stops at end-of-generation.
// Returns false on error (message printed).
bool generate(const Model& m, Session& sess, Sampler& sampler, const float* logits, int n,
              Stats& st, std::vector<int32_t>& out_ids, std::FILE* dump, bool stop_at_eog) {
  Detokenizer detok(*m.tokenizer);
  const auto t0 = Clock::now();
  const size_t n_vocab = m.config().n_vocab;
  for (int i = 0; i < n && !g_interrupted.load(); ++i) {
    if (dump && std::fwrite(logits, sizeof(float), n_vocab, dump) != n_vocab) {
      std::fprintf(stderr, "error: --dump-logits: write failed\n");
      return false;
    }
    const int32_t tok = sampler.sample(logits);
    sampler.accept(tok);
    out_ids.push_back(tok);
    ++st.generated;
    if (stop_at_eog && m.tokenizer->is_eog(tok)) break;
    const std::string text = detok.push(tok);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (i + 1 == n) break;  // the last token need not be fed
    if (sess.n_past() >= sess.n_ctx()) {
      std::fprintf(stderr, "\nlayerstream: the context (%u tokens) is full; stopping\n", sess.n_ctx());
      break;
    }
    auto next = sess.feed(std::span<const int32_t>(&tok, 1));
    if (!next) {
      std::fprintf(stderr, "\nerror: %s\n", next.error().message.c_str());
      return false;
    }
    logits = *next;
  }
  const std::string rest = detok.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fflush(stdout);
  st.gen_s += seconds_since(t0);
  return true;
}

int run_decode(DecodeArgs& a) {
  if (a.n_predict < 0) return fail("-n must be 0 or more (got " + std::to_string(a.n_predict) + ")");
  if (a.n_ctx < 0) return fail("-c must be 0 (model default) or more");
  if (!a.prompt.empty() && !a.prompt_file.empty()) return fail("give -p or -f, not both");
  if (a.backend != "auto" && a.backend != "cpu" && a.backend != "cuda")
    return fail("--backend must be cpu, cuda or auto (got '" + a.backend + "')");
  if (a.backend == "cuda")
    return fail("--backend cuda: this build has no CUDA decode backend yet (use cpu or auto)");
  if (a.kv_type != "f16" && a.kv_type != "f32")
    return fail("--kv-type must be f16 or f32 (got '" + a.kv_type + "')");
  if (!a.prompt_file.empty()) {
    std::ifstream in(a.prompt_file, std::ios::binary);
    if (!in) return fail(a.prompt_file + ": cannot read the prompt file");
    std::stringstream ss;
    ss << in.rdbuf();
    a.prompt = ss.str();
  }

  Stats st;
  const auto t_load = Clock::now();
  if (a.model.empty()) {
    auto p = default_model_path();
    if (!p) return fail(p.error().message);
    a.model = *p;
  }
  auto mr = open_model(a.model);
  if (!mr) return fail(mr.error().message);
  const Model& m = **mr;
  const LlamaConfig& c = m.config();
  uint32_t n_ctx = a.n_ctx > 0 ? static_cast<uint32_t>(a.n_ctx) : std::min<uint32_t>(c.n_ctx_train, 4096);
  if (n_ctx > c.n_ctx_train)
    std::fprintf(stderr, "layerstream: warning: -c %u is beyond the model's training context %u\n",
                 n_ctx, c.n_ctx_train);
  const int threads = a.threads > 0 ? a.threads : default_thread_count();
  CpuBackend be(c, m.globals(), n_ctx, 1, a.kv_type == "f32" ? KvType::F32 : KvType::F16, threads);
  Session sess(m, be, n_ctx);
  Sampler sampler(a.sp, static_cast<int32_t>(c.n_vocab));
  st.load_s = seconds_since(t_load);

  std::FILE* dump = nullptr;
  if (!a.dump_logits.empty()) {
    dump = std::fopen(a.dump_logits.c_str(), "wb");
    if (!dump) return fail(a.dump_logits + ": cannot create the logits file");
  }
  struct Closer {
    std::FILE* f;
    ~Closer() { if (f) std::fclose(f); }
  } closer{dump};

  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const bool add_bos = m.tokenizer->add_bos_default() && !a.no_bos;
  std::vector<int32_t> out_ids;
  int rc = 0;

  if (!a.chat) {
    std::vector<int32_t> prompt = m.tokenizer->encode(a.prompt, add_bos, a.special);
    if (prompt.empty()) return fail("the prompt is empty (and --no-bos leaves no token to start from)");
    if (prompt.size() > n_ctx)
      return fail("the prompt is " + std::to_string(prompt.size()) +
                  " tokens, longer than the context (-c " + std::to_string(n_ctx) + ")");
    st.prompt_tokens = prompt.size();
    for (int32_t t : prompt) sampler.accept(t);
    if (!a.no_display_prompt) {
      std::fwrite(a.prompt.data(), 1, a.prompt.size(), stdout);
      std::fflush(stdout);
    }
    const auto t0 = Clock::now();
    auto logits = sess.feed(prompt);
    if (!logits) return fail(logits.error().message);
    st.prompt_s = seconds_since(t0);
    if (!generate(m, sess, sampler, *logits, a.n_predict, st, out_ids, dump, true)) rc = 1;
  } else {
    const std::string* tmpl = nullptr;
    std::string tmpl_s;
    if (auto t = m.file->get_string("tokenizer.chat_template")) {
      tmpl_s = *t;
      tmpl = &tmpl_s;
    }
    const ChatFormat fmt = chat_format_for(tmpl, m.tokenizer->family() == TokenizerFamily::Llama3Bpe);
    std::fprintf(stderr, "layerstream: chat (%s format); an empty line or Ctrl-D ends it\n",
                 fmt == ChatFormat::Llama3 ? "Llama 3" : "Llama 2");
    bool first = true;
    std::string line;
    while (!g_interrupted.load()) {
      std::fprintf(stderr, "\n> ");
      if (!std::getline(std::cin, line) || line.empty()) break;
      const std::string* sys = a.system.empty() ? nullptr : &a.system;
      const std::string text = chat_render_turn(fmt, {"user", line}, first, sys);
      // The template's own special tokens are parsed; BOS is added on the first turn
      // unless the rendered text already starts with it.
      std::vector<int32_t> toks = m.tokenizer->encode(text, first && add_bos && fmt == ChatFormat::Llama2, true);
      first = false;
      const auto t0 = Clock::now();
      auto logits = sess.feed(toks);
      if (!logits) {
        rc = fail(logits.error().message);
        break;
      }
      st.prompt_tokens += toks.size();
      st.prompt_s += seconds_since(t0);
      for (int32_t t : toks) sampler.accept(t);
      std::vector<int32_t> reply;
      if (!generate(m, sess, sampler, *logits, a.n_predict, st, reply, dump, true)) {
        rc = 1;
        break;
      }
      // Feed the reply's last token (the end-of-turn token, or the last one
      // sampled) so the cache holds the whole turn before the next.
      if (!reply.empty() && sess.n_past() < sess.n_ctx()) {
        auto r = sess.feed(std::span<const int32_t>(&reply.back(), 1));
        if (!r) {
          rc = fail(r.error().message);
          break;
        }
      }
      out_ids.insert(out_ids.end(), reply.begin(), reply.end());
    }
  }
  if (a.ids) {
    std::string line;
    for (size_t i = 0; i < out_ids.size(); ++i) line += (i ? " " : "") + std::to_string(out_ids[i]);
    std::printf("\n%s\n", line.c_str());
  }
  print_summary(st, be.name(), threads);
  if (g_interrupted.load()) std::fprintf(stderr, "layerstream: interrupted\n");
  return rc;
}

}  // namespace

Command add_decode(CLI::App& app) {
  auto* sub = app.add_subcommand("decode", "Generate text from a prompt (the main job)");
  auto a = std::make_shared<DecodeArgs>();
  a->sp.temp = 0.8f;
  sub->add_option("-m,--model", a->model, "GGUF model (default: a tiny synthetic model)");
  sub->add_option("-p,--prompt", a->prompt, "Prompt text");
  sub->add_option("-f,--file", a->prompt_file, "Read the prompt from a file");
  sub->add_option("-n,--n-predict", a->n_predict, "Tokens to generate")->capture_default_str();
  sub->add_option("-c,--ctx-size", a->n_ctx, "Context size (0: the model's, at most 4096)")
      ->capture_default_str();
  sub->add_option("--temp", a->sp.temp, "Temperature (0: greedy)")->capture_default_str();
  sub->add_option("--top-k", a->sp.top_k, "Top-k (0: off)")->capture_default_str();
  sub->add_option("--top-p", a->sp.top_p, "Top-p (1: off)")->capture_default_str();
  sub->add_option("--min-p", a->sp.min_p, "Min-p (0: off)")->capture_default_str();
  sub->add_option("--repeat-penalty", a->sp.repeat_penalty, "Repeat penalty (1: off)")
      ->capture_default_str();
  sub->add_option("--repeat-last-n", a->sp.repeat_last_n,
                  "Tokens the repeat penalty looks back over (-1: the whole context)")
      ->capture_default_str();
  sub->add_option("-s,--seed", a->sp.seed, "Sampling seed (default: random)");
  sub->add_flag("--no-bos", a->no_bos, "Do not add the BOS token");
  sub->add_flag("--special", a->special, "Parse special tokens in the prompt");
  sub->add_option("--backend", a->backend, "cpu, cuda or auto")->capture_default_str();
  sub->add_option("-t,--threads", a->threads, "CPU threads (default: all cores)");
  sub->add_option("--kv-type", a->kv_type, "KV cache type: f16 or f32")->capture_default_str();
  sub->add_flag("--ids", a->ids, "Print the generated token ids on one line at the end");
  sub->add_option("--dump-logits", a->dump_logits,
                  "Write raw float32 logits: the prompt's last position, then one row per "
                  "generated token fed back (each row is what the next token was sampled from)");
  sub->add_flag("--chat", a->chat, "Interactive chat (keeps the KV cache across turns)");
  sub->add_option("--system", a->system, "System prompt for --chat");
  sub->add_flag("--no-display-prompt", a->no_display_prompt, "Do not echo the prompt");
  return [a] { return run_decode(*a); };
}

}  // namespace ls
