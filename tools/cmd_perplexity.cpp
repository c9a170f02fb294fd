// layerstream perplexity: llama.cpp's perplexity tool, its method and its
// output, through the engine (so every backend and tier plan is measured as
// it runs):
//  - the whole text is tokenized once (with BOS first when the vocabulary
//    adds it, special tokens not parsed);
//  - it is cut into non-overlapping windows of -c tokens (--chunks of them
//    at most; a text of fewer than 2 windows is an error), each run from
//    position 0 with an empty cache, its first token replaced by BOS when
//    the vocabulary adds BOS, in prompt batches of -b tokens;
//  - only the second half of each window is scored: the logits at positions
//    n_ctx/2 .. n_ctx-2 against the next token, -log softmax summed in double;
//  - after each window, `[i]PPL,` with PPL = exp(mean NLL so far); at the
//    end `Final estimate: PPL = p +/- e`, where e = p * sqrt(var/(N-1)),
//    var = mean(NLL^2) - mean(NLL)^2 over the N scored tokens.
// The running values and the final line go to stdout (llama.cpp sends the
// final line to its log); what was run goes to stderr.
// defines: add_perplexity()
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "actors/engine.h"
#include "tools/commands.h"
#include "tools/engine_flags.h"

namespace ls {
namespace {

struct PplArgs {
  EngineOptions engine;
  EngineFlagText text;
  std::string file;
  int chunks = -1;       // -1: every window
  int32_t batch = 2048;  // prompt batch (llama.cpp's default), at most -c
};

// -log softmax(logits)[target], as llama.cpp computes it: the sum of
// exp(l - max) in double.
double nll_of(const float* logits, int32_t n_vocab, int32_t target) {
  float mx = logits[0];
  for (int32_t i = 1; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
  double sum = 0;
  for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(logits[i] - mx);
  return mx + std::log(sum) - logits[target];
}

int run_perplexity(PplArgs& a) {
  if (a.file.empty()) return fail("-f: give the text to score");
  if (a.batch < 1) return fail("-b must be at least 1");
  if (Status st = finish_engine_flags(a.engine, a.text); !st.ok()) return fail(st.error().message);
  std::ifstream in(a.file, std::ios::binary);
  if (!in) return fail(a.file + ": cannot read the text file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();

  auto er = Engine::open(a.engine);
  if (!er) return fail(er.error().message);
  Engine& e = **er;
  const Model& m = e.model();
  const Tokenizer& tok = *m.tokenizer;
  const int32_t n_vocab = static_cast<int32_t>(m.config().n_vocab);
  const int n_ctx = static_cast<int>(e.pipeline().n_ctx());
  if (n_ctx < 3)
    return fail("-c must be at least 3 (a window scores the tokens of its second half)");
  const bool add_bos = tok.add_bos_default();
  const std::vector<int32_t> tokens = tok.encode(text, add_bos, false);
  if (static_cast<int64_t>(tokens.size()) < 2LL * n_ctx)
    return fail("perplexity: you need at least " + std::to_string(2 * n_ctx) +
                " tokens to evaluate perplexity with a context of " + std::to_string(n_ctx) + "; " +
                a.file + " tokenizes to only " + std::to_string(tokens.size()) + " tokens");
  const int n_chunk_max = static_cast<int>(tokens.size() / n_ctx);
  const int n_chunk = a.chunks < 0 ? n_chunk_max : std::min(a.chunks, n_chunk_max);
  const int n_batch = std::min<int>(a.batch, n_ctx);
  const int first = n_ctx / 2;
  std::fprintf(stderr,
               "perplexity: %zu tokens; calculating perplexity over %d chunks, n_ctx=%d, "
               "batch_size=%d, n_seq=1\n",
               tokens.size(), n_chunk, n_ctx, n_batch);

  double nll = 0, nll2 = 0;
  int64_t count = 0;
  Status status;
  for (int i = 0; i < n_chunk && status.ok(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const int start = i * n_ctx;
    e.pipeline().rewind();  // the window starts at position 0: nothing before it is read
    for (int j = 0; j * n_batch < n_ctx && status.ok(); ++j) {
      const int p0 = j * n_batch;  // the batch's first position in the window
      const int size = std::min(n_batch, n_ctx - p0);
      std::vector<int32_t> batch(tokens.begin() + start + p0, tokens.begin() + start + p0 + size);
      if (add_bos && j == 0) batch[0] = tok.bos();
      // Logits from position `first` on (the last row comes anyway).
      const size_t from = first > p0 ? static_cast<size_t>(first - p0) : 0;
      // The rows are positions p0 + from .. p0 + size - 1 (or the last alone),
      // in order, over one callback a step: a batch wider than the step cap
      // (--ubatch-size) goes in several.
      int at = p0 + static_cast<int>(std::min<size_t>(from, static_cast<size_t>(size - 1)));
      status = e.pipeline().run_request(
          batch,
          [&](int64_t, const float* logits, int32_t rows) -> std::optional<int32_t> {
            const int pos0 = at;
            at += rows;
            for (int32_t r = 0; r < rows; ++r) {
              const int pos = pos0 + r;
              if (pos < first || pos >= n_ctx - 1) continue;  // unscored, or no next token
              const double v = nll_of(logits + static_cast<size_t>(r) * n_vocab, n_vocab,
                                      tokens[start + pos + 1]);
              nll += v;
              nll2 += v * v;
              ++count;
            }
            return std::nullopt;
          },
          from);
    }
    if (!status.ok()) break;
    if (i == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "perplexity: %.2f seconds per pass - ETA %.2f minutes\n", s,
                   s * n_chunk / 60);
    }
    std::printf("[%d]%.4lf,", i + 1, std::exp(nll / static_cast<double>(count)));
    std::fflush(stdout);
  }
  std::printf("\n");
  const int sig = e.interrupt_signal();
  Status fin = e.finish();
  if (sig != 0) {
    std::fprintf(stderr, "layerstream: interrupted\n");
    return 128 + sig;
  }
  if (!status.ok()) return fail(status.error().message);
  if (!fin.ok()) return fail(fin.error().message);
  const double mean = nll / static_cast<double>(count);
  const double ppl = std::exp(mean);
  const double var = nll2 / static_cast<double>(count) - mean * mean;
  if (!(var > 0) || count < 2)
    return fail("perplexity: the scored tokens give no variance (" + std::to_string(count) +
                " scored); no error estimate");
  std::printf("Final estimate: PPL = %.4lf +/- %.5lf\n", ppl,
              std::sqrt(var / static_cast<double>(count - 1)) * ppl);
  return 0;
}

}  // namespace

Command add_perplexity(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "perplexity",
      "Perplexity of a text, llama.cpp's method (windows of -c, second halves scored)");
  auto a = std::make_shared<PplArgs>();
  a->engine.n_ctx = 512;  // llama.cpp's perplexity default
  add_engine_flags(sub, a->engine, a->text);
  sub->add_option("-f,--file", a->file, "The text to score")->required();
  sub->add_option("--chunks", a->chunks, "Windows to score at most (-1: all)")
      ->capture_default_str();
  sub->add_option("-b,--batch-size", a->batch, "Prompt batch: tokens per step (at most -c)")
      ->capture_default_str();
  return [a] { return run_perplexity(*a); };
}

}  // namespace ls
