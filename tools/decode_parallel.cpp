#include "tools/decode_parallel.h"

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>

#include "model/tokenizer.h"

namespace ls {
namespace {

using Clock = std::chrono::steady_clock;

// One sequence: its sampler and what its callback (on the sampler actor)
// records; the main thread reads it after the sequence's end.
struct Run {
  std::vector<int32_t> prompt, out;
  std::unique_ptr<Sampler> sampler;
  Clock::time_point first, last;
  bool eog = false;
  std::promise<SeqEnd> done;
  std::future<SeqEnd> fut;
};

}  // namespace

Status run_decode_parallel(Engine& e, const ParallelDecodeArgs& a) {
  const Model& m = e.model();
  const size_t n_vocab = m.config().n_vocab;
  const uint32_t n_ctx = e.pipeline().n_ctx();
  std::vector<std::unique_ptr<Run>> runs;
  for (size_t i = 0; i < a.prompts.size(); ++i) {
    auto r = std::make_unique<Run>();
    r->prompt = m.tokenizer->encode(a.prompts[i], a.add_bos, a.special);
    if (r->prompt.empty()) return make_error("prompt %zu is empty", i + 1);
    if (r->prompt.size() > n_ctx)
      return make_error("prompt %zu is %zu tokens, longer than the context (-c %u)", i + 1,
                        r->prompt.size(), n_ctx);
    SamplerParams sp = a.sp;
    if (sp.seed != kSamplerRandomSeed) sp.seed += i;
    r->sampler = std::make_unique<Sampler>(sp, static_cast<int32_t>(n_vocab));
    for (int32_t t : r->prompt) r->sampler->accept(t);
    r->fut = r->done.get_future();
    runs.push_back(std::move(r));
  }
  const auto t0 = Clock::now();
  std::vector<uint64_t> ids;
  for (auto& rp : runs) {
    Run* r = rp.get();
    SeqRequest q;
    q.prompt = r->prompt;
    q.cb = [r, &a, &m, n_vocab](int64_t, const float* logits,
                                int32_t rows) -> std::optional<int32_t> {
      const auto now = Clock::now();
      if (r->out.empty()) r->first = now;
      r->last = now;
      const int32_t tok = r->sampler->sample(logits + static_cast<size_t>(rows - 1) * n_vocab);
      r->sampler->accept(tok);
      r->out.push_back(tok);
      if (m.tokenizer->is_eog(tok)) {
        r->eog = true;
        return std::nullopt;
      }
      if (static_cast<int>(r->out.size()) >= a.n_predict) return std::nullopt;
      return tok;
    };
    auto id = e.pipeline().submit(std::move(q), std::move(r->done));
    if (!id) return id.error();
    ids.push_back(*id);
  }
  Status first_error;
  size_t generated = 0, prompt_tokens = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    Run& r = *runs[i];
    auto end = e.pipeline().wait(r.fut);
    if (!end) {
      first_error = end.error();
      break;
    }
    Detokenizer detok(*m.tokenizer);
    std::string text;
    for (int32_t t : r.out)
      if (!m.tokenizer->is_eog(t)) text += detok.push(t);
    text += detok.flush();
    const double s = std::chrono::duration<double>(r.last - r.first).count();
    const double rate = r.out.size() > 1 && s > 0 ? (r.out.size() - 1) / s : 0.0;
    std::printf("[seq %zu] %s%s\n", i + 1, a.prompts[i].c_str(), text.c_str());
    if (a.ids) {
      std::string line;
      for (size_t k = 0; k < r.out.size(); ++k) line += (k ? " " : "") + std::to_string(r.out[k]);
      std::printf("[seq %zu ids] %s\n", i + 1, line.c_str());
    }
    std::fprintf(stderr, "layerstream: seq %zu: prompt %zu tokens | generated %zu tokens, %.2f tok/s%s\n",
                 i + 1, r.prompt.size(), r.out.size(), rate,
                 r.eog ? "" : end->pos >= n_ctx ? " (context full)" : "");
    std::fflush(stdout);
    generated += r.out.size();
    prompt_tokens += r.prompt.size();
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::fprintf(stderr,
               "layerstream: %zu sequences, %u at once | prompts %zu tokens | generated %zu "
               "tokens | %.2f s, %.2f tok/s in all\n",
               runs.size(), e.pipeline().n_seq(), prompt_tokens, generated, wall,
               wall > 0 ? static_cast<double>(generated) / wall : 0.0);
  return first_error;
}

}  // namespace ls
