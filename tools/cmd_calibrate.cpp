// layerstream calibrate: which layers a model could skip, and what skipping
// them costs (issue 18's layer skip, its measuring half).
//  - Over windows of a calibration text (-c tokens each, --chunks of them),
//    the cosine similarity between each layer's input and output hidden
//    state (the residual stream before and after it), averaged over tokens:
//    a layer whose output is nearly its input does little.
//  - Then, skipping the 1, 2, ... --max-skip most similar layers (in that
//    order), the same windows again: the perplexity of every next token of
//    each window, and the greedy top-1 agreement with the full model (the
//    share of positions whose argmax is the full model's), with the bytes a
//    token would no longer read.
// The results go to MODEL.layerskip.json (or -o) and stdout. The CPU backend,
// resident, f32 activations (the oracle settings: the differences measured
// are the skipping's, not the arithmetic's). Skipping layers in a decode run
// (--skip-layers) is not built yet.
// defines: add_calibrate()
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include "actors/engine.h"
#include "model/default_model.h"
#include "tools/commands.h"

namespace ls {
namespace {

struct CalibrateArgs {
  std::string model, file, out;
  uint32_t n_ctx = 256;
  int chunks = 8, max_skip = -1, threads = 0;
};

// One pass over a window: the logits of every row; with cos, the
// per-layer cosine sums. skip: layers left out (empty: none).
Status forward(const Model& m, Backend& be, const Batch& b, const std::vector<bool>& skip,
               std::vector<float>& logits, std::vector<double>* cos) {
  const LlamaConfig& c = m.config();
  const size_t n = b.size(), d = c.n_embd;
  std::vector<float> h0, h1;
  be.clear_seq(0, 0);
  LS_TRY(be.begin(b));
  if (cos) {
    h0.resize(n * d);
    h1.resize(n * d);
    LS_TRY(be.export_hidden(h0.data()));
  }
  for (uint32_t l = 0; l < c.n_layer; ++l) {
    if (!skip.empty() && skip[l]) continue;
    LS_TRY(be.layer(l, m.layer(l)));
    if (!cos) continue;
    LS_TRY(be.export_hidden(h1.data()));
    for (size_t i = 0; i < n; ++i) {
      double xy = 0, xx = 0, yy = 0;
      for (size_t k = 0; k < d; ++k) {
        const double x = h0[i * d + k], y = h1[i * d + k];
        xy += x * y;
        xx += x * x;
        yy += y * y;
      }
      (*cos)[l] += xx > 0 && yy > 0 ? xy / std::sqrt(xx * yy) : 1.0;
    }
    std::swap(h0, h1);
  }
  logits.resize(n * c.n_vocab);
  return be.finish(logits.data());
}

int32_t argmax(const float* row, int64_t n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

double nll(const float* row, int64_t n, int32_t target) {
  const float mx = *std::max_element(row, row + n);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(double(row[i]) - mx);
  return mx + std::log(s) - row[target];
}

int run_calibrate(CalibrateArgs& a) {
  if (a.file.empty()) return fail("-f: give the calibration text");
  if (a.n_ctx < 8) return fail("-c must be at least 8");
  if (a.chunks < 1) return fail("--chunks must be at least 1");
  std::ifstream in(a.file, std::ios::binary);
  if (!in) return fail(a.file + ": cannot read the calibration text");
  std::stringstream ss;
  ss << in.rdbuf();
  if (a.model.empty()) {
    auto p = default_model_path();
    if (!p) return fail(p.error().message);
    a.model = *p;
  }
  auto mo = open_model(a.model);
  if (!mo) return fail(mo.error().message);
  const Model& m = **mo;
  const LlamaConfig& c = m.config();
  const int n_layer = static_cast<int>(c.n_layer);
  if (a.max_skip < 0) a.max_skip = n_layer / 2;
  if (a.max_skip >= n_layer) return fail("--max-skip must be below the layer count");
  EngineOptions eo;
  eo.n_ctx = a.n_ctx;
  eo.threads = a.threads;
  eo.cpu_act = CpuAct::F32;
  eo.kv_type = KvType::F32;
  const std::vector<int32_t> toks =
      m.tokenizer->encode(ss.str(), m.tokenizer->add_bos_default(), false);
  const size_t n_win = std::min<size_t>(a.chunks, toks.size() / a.n_ctx);
  if (n_win == 0)
    return fail(a.file + ": " + std::to_string(toks.size()) +
                " tokens, fewer than one window of -c " + std::to_string(a.n_ctx));
  auto be = make_cpu_backend(m, eo);  // after the checks: its cache is -c positions
  std::vector<Batch> wins(n_win);
  for (size_t w = 0; w < n_win; ++w)
    for (uint32_t i = 0; i < a.n_ctx; ++i)
      wins[w].add(toks[w * a.n_ctx + i], static_cast<int32_t>(i), 0, true);
  const int64_t V = c.n_vocab;

  // The full model: cosines, perplexity, argmaxes.
  std::vector<double> cos(n_layer, 0.0);
  std::vector<int32_t> full_top;
  double full_nll = 0;
  size_t scored = 0;
  std::vector<float> logits;
  for (size_t w = 0; w < n_win; ++w) {
    if (Status st = forward(m, *be, wins[w], {}, logits, &cos); !st.ok())
      return fail(st.error().message);
    for (uint32_t i = 0; i < a.n_ctx; ++i) full_top.push_back(argmax(&logits[i * V], V));
    for (uint32_t i = 0; i + 1 < a.n_ctx; ++i, ++scored)
      full_nll += nll(&logits[i * V], V, toks[w * a.n_ctx + i + 1]);
  }
  for (double& x : cos) x /= double(n_win * a.n_ctx);
  std::vector<int> order(n_layer);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return cos[x] > cos[y]; });

  std::printf("layer  cosine(in, out)  MB\n");
  for (int l = 0; l < n_layer; ++l)
    std::printf("%5d  %15.6f  %.2f\n", l, cos[l], m.map.layers[l].range_bytes / 1e6);
  nlohmann::json j;
  j["model"] = a.model;
  j["text"] = a.file;
  j["windows"] = n_win;
  j["window_tokens"] = a.n_ctx;
  j["cosine"] = cos;
  j["order"] = order;
  j["skip"] = nlohmann::json::array();
  std::printf("\nskipped  layers             perplexity  top-1 agreement  MB a token saved\n");
  std::printf("%7d  %-18s %10.4f  %15.4f  %16.2f\n", 0, "-", std::exp(full_nll / scored), 1.0, 0.0);
  for (int k = 1; k <= a.max_skip; ++k) {
    std::vector<bool> skip(n_layer, false);
    std::vector<int> layers(order.begin(), order.begin() + k);
    std::sort(layers.begin(), layers.end());
    uint64_t saved = 0;
    for (int l : layers) {
      skip[l] = true;
      saved += m.map.layers[l].range_bytes;
    }
    double s_nll = 0;
    size_t agree = 0, pos = 0;
    for (size_t w = 0; w < n_win; ++w) {
      if (Status st = forward(m, *be, wins[w], skip, logits, nullptr); !st.ok())
        return fail(st.error().message);
      for (uint32_t i = 0; i < a.n_ctx; ++i, ++pos)
        agree += argmax(&logits[i * V], V) == full_top[pos];
      for (uint32_t i = 0; i + 1 < a.n_ctx; ++i)
        s_nll += nll(&logits[i * V], V, toks[w * a.n_ctx + i + 1]);
    }
    std::string names;
    for (int l : layers) names += (names.empty() ? "" : ",") + std::to_string(l);
    const double ppl = std::exp(s_nll / scored), agreement = double(agree) / double(pos);
    std::printf("%7d  %-18s %10.4f  %15.4f  %16.2f\n", k, names.c_str(), ppl, agreement,
                saved / 1e6);
    j["skip"].push_back({{"n", k},
                         {"layers", layers},
                         {"perplexity", ppl},
                         {"top1_agreement", agreement},
                         {"bytes_saved", saved}});
  }
  j["perplexity_full"] = std::exp(full_nll / scored);
  const std::string out = a.out.empty() ? a.model + ".layerskip.json" : a.out;
  std::ofstream f(out);
  if (!(f << j.dump(2) << "\n")) return fail(out + ": cannot write the calibration");
  std::fprintf(stderr, "layerstream: %zu windows of %u tokens; written %s\n", n_win, a.n_ctx,
               out.c_str());
  return 0;
}

}  // namespace

Command add_calibrate(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "calibrate", "Per-layer similarity of input and output, and the cost of skipping layers");
  auto a = std::make_shared<CalibrateArgs>();
  sub->add_option("-m,--model", a->model, "GGUF model (default: the embedded default model)");
  sub->add_option("-f,--file", a->file, "Calibration text")->required();
  sub->add_option("-c,--ctx-size", a->n_ctx, "Tokens a window")->capture_default_str();
  sub->add_option("--chunks", a->chunks, "Windows at most")->capture_default_str();
  sub->add_option("--max-skip", a->max_skip, "Most layers skipped in the table (default: half)");
  sub->add_option("-o,--output", a->out, "The JSON file (default: MODEL.layerskip.json)");
  sub->add_option("-t,--threads", a->threads, "CPU threads (0: the CPUs this process may use)");
  return [a] { return run_calibrate(*a); };
}

}  // namespace ls
