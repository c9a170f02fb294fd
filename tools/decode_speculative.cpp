// defines: SpecReport::to_text, SpeculativeDecoder (tools/decode_speculative.h)
#include "tools/decode_speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "runtime/env.h"

namespace ls {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A small model's greedy proposals. It keeps the tokens its cache holds and
// gives up those past the common prefix with the context (rejected
// proposals) before feeding the rest; it stops proposing when its own
// probability of the next token falls below p_min.
class EngineDraft : public Draft {
 public:
  EngineDraft(Engine& e, float p_min) : e_(e), p_min_(p_min) {}
  std::string name() const override { return "model"; }
  bool slow() const override { return true; }
  std::vector<int32_t> propose(std::span<const int32_t> ctx, int k) override {
    std::vector<int32_t> out;
    if (k <= 0 || ctx.empty()) return out;
    size_t common = 0;
    while (common < fed_.size() && common < ctx.size() && fed_[common] == ctx[common]) ++common;
    common = std::min(common, ctx.size() - 1);  // feed one token at least: its row proposes
    Pipeline& p = e_.pipeline();
    p.truncate(static_cast<uint32_t>(common));
    fed_.assign(ctx.begin(), ctx.end());
    const size_t n_vocab = e_.model().config().n_vocab;
    Status st = p.run_request(
        ctx.subspan(common), [&](int64_t, const float* l, int32_t rows) -> std::optional<int32_t> {
          const float* row = l + static_cast<size_t>(rows - 1) * n_vocab;
          const int32_t best = static_cast<int32_t>(std::max_element(row, row + n_vocab) - row);
          double z = 0;
          for (size_t i = 0; i < n_vocab; ++i) z += std::exp(double(row[i]) - double(row[best]));
          if (!out.empty() && 1.0 / z < p_min_) return std::nullopt;  // not sure enough
          out.push_back(best);
          if (static_cast<int>(out.size()) >= k) return std::nullopt;
          fed_.push_back(best);
          return best;
        });
    if (!st.ok()) {
      std::fprintf(stderr, "layerstream: the draft model failed: %s\n", st.error().message.c_str());
      out.clear();
      fed_.clear();
      p.truncate(0);
    }
    return out;
  }

 private:
  Engine& e_;
  float p_min_;
  std::vector<int32_t> fed_;  // the tokens whose keys and values the draft's cache holds
};

Expected<std::vector<int32_t>> read_ids(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error("--draft replay: cannot read %s", path.c_str());
  std::vector<int32_t> ids;
  long long v;
  while (in >> v) {
    if (v < 0 || v > INT32_MAX)
      return make_error("--draft replay: %s: %lld is not a token id", path.c_str(), v);
    ids.push_back(static_cast<int32_t>(v));
  }
  if (!in.eof())
    return make_error("--draft replay: %s: not whitespace-separated token ids", path.c_str());
  if (ids.empty()) return make_error("--draft replay: %s holds no token ids", path.c_str());
  return ids;
}

}  // namespace

std::string SpecReport::to_text(const std::string& draft) const {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "speculative (%s): %zu verify steps, %zu drafted, %zu accepted (%.1f %%), %.2f "
                "tokens per target pass | draft %.2f s, verify %.2f s",
                draft.c_str(), steps, drafted, accepted,
                drafted ? 100.0 * double(accepted) / double(drafted) : 0.0,
                steps ? double(emitted) / double(steps) : 0.0, draft_s, verify_s);
  std::string text = buf;
  if (replay_n > 0) {
    std::snprintf(buf, sizeof buf, " | replay: %zu of the file's %zu positions wrong (%.3f right)",
                  replay_wrong, replay_n, 1.0 - double(replay_wrong) / double(replay_n));
    text += buf;
  }
  if (replay_left_at >= 0)
    text += " | the output left the replay file's at output token " +
            std::to_string(replay_left_at) +
            ": from there the file no longer predicts the target, and the acceptance is not "
            "its ALPHA";
  return text;
}

SpeculativeDecoder::~SpeculativeDecoder() = default;

Expected<std::unique_ptr<SpeculativeDecoder>> SpeculativeDecoder::make(
    const SpecOptions& o, const EngineOptions& target) {
  if (o.k_max < 1 || o.k_max > 64)
    return make_error("--draft-max must be 1 to 64 (got %d)", o.k_max);
  if (o.k_min < 0 || o.k_min > o.k_max)
    return make_error("--draft-min must be 0 to --draft-max (got %d)", o.k_min);
  if (!(o.p_min >= 0.0f && o.p_min <= 1.0f))
    return make_error("--draft-p-min must be 0 to 1 (got %g)", double(o.p_min));
  std::unique_ptr<SpeculativeDecoder> d(new SpeculativeDecoder());
  d->opt_ = o;
  d->chooser_ = SpecK(o.k_min, o.k_max);
  const std::string& k = o.draft;
  if (k == "lookup") {
    d->draft_ = std::make_unique<LookupDraft>();
    d->name_ = "lookup";
  } else if (k == "self") {
    return make_error(
        "--draft self needs the layers the draft leaves out: self:LIST or "
        "self:auto:N (as --skip-layers)");
  } else if (k.rfind("replay:", 0) == 0) {
    const size_t colon = k.rfind(':');
    const std::string file = k.substr(7, colon > 7 ? colon - 7 : 0);
    char* end = nullptr;
    const double alpha = colon > 7 ? std::strtod(k.c_str() + colon + 1, &end) : -1;
    if (colon <= 7 || file.empty() || !end || *end != '\0' || !(alpha >= 0 && alpha <= 1))
      return make_error(
          "--draft replay:FILE:ALPHA wants a file of token ids and an acceptance "
          "rate 0 to 1 (got '%s')",
          k.c_str());
    auto ids = read_ids(file);
    if (!ids) return ids.error();
    d->replay_ = std::move(*ids);
    d->replay_alpha_ = alpha;
    d->name_ = "replay";
  } else {
    // A draft model; self:SPEC is the model itself with the layers SPEC
    // names left out (--skip-layers): layer-skip self-speculation. On the
    // CPU it shares the mapped file with the model; on a GPU its layers take
    // their own memory.
    const bool self = k.rfind("self:", 0) == 0;
    EngineOptions eo;
    eo.model = self ? target.model : k;
    if (self) eo.skip_layers = k.substr(5);
    eo.backend = target.backend;
    eo.threads = target.threads;
    eo.cpu_act = target.cpu_act;
    eo.kv_type = target.kv_type;
    eo.n_ctx = target.n_ctx;
    eo.print_plan = false;
    eo.watchdog_s = 0;
    eo.make_backend = target.make_backend;
    eo.device_memory = target.device_memory;
    auto e = Engine::open(eo);
    if (!e) return make_error("--draft %s: %s", k.c_str(), e.error().message.c_str());
    d->draft_engine_ = std::move(*e);
    d->draft_ = std::make_unique<EngineDraft>(*d->draft_engine_, o.p_min);
    d->name_ = self ? "self, without layers " + k.substr(5) : "model " + k;
  }
  return d;
}

std::shared_ptr<ThreadPool> SpeculativeDecoder::cpu_pool() const {
  return draft_engine_ ? draft_engine_->cpu_pool() : nullptr;
}

Status SpeculativeDecoder::attach(const Model& target) {
  const int64_t nv = target.config().n_vocab;
  if (draft_engine_ && draft_engine_->model().config().n_vocab != nv)
    return make_error(
        "--draft %s: its vocabulary has %lld tokens, the model's %lld: a draft "
        "must share the model's tokenizer",
        opt_.draft.c_str(), (long long)draft_engine_->model().config().n_vocab, (long long)nv);
  for (int32_t t : replay_)
    if (t >= nv)
      return make_error("--draft replay: token id %d is past the model's vocabulary (%lld)", t,
                        (long long)nv);
  return ok();
}

Status SpeculativeDecoder::run(Engine& target, Sampler& s, std::span<const int32_t> prompt, int n,
                               const std::function<bool(int32_t)>& emit) {
  if (n <= 0) return ok();
  const Model& m = target.model();
  const size_t n_vocab = m.config().n_vocab;
  // The context is what the target's cache holds, then the prompt: a chat's
  // previous reply ended with a token that was emitted but not fed, and the
  // next prompt starts with it (decode's carry), so it is not counted twice.
  ctx_.resize(std::min<size_t>(ctx_.size(), target.pipeline().n_past()));
  ctx_.insert(ctx_.end(), prompt.begin(), prompt.end());
  // This request's output starts at out0; the replay's is this output from
  // its start.
  const size_t out0 = ctx_.size();
  if (!replay_.empty()) {
    auto r = std::make_unique<ReplayDraft>(replay_, replay_alpha_, ctx_.size(),
                                           static_cast<int32_t>(n_vocab));
    report_.replay_n = r->size();
    report_.replay_wrong = r->n_wrong();
    draft_ = std::move(r);
  }
  SpecK& chooser = chooser_;
  // Widths not measured yet: what the target's width routing predicts.
  Pipeline* pipe = &target.pipeline();
  chooser.set_prior([pipe](int width) { return pipe->predicted_step_s(width); });
  // Drafting shows in the trace on its own track (the verify steps are the
  // pipeline's, K + 1 wide).
  if (track_ == kNoTrack) track_ = target.tracer().register_track("draft", -1);
  const int track = track_;
  std::vector<int32_t> drafts;  // fed after the last token in the step in flight
  int count = 0;
  bool stop = false;
  Clock::time_point fed_at;
  double last_draft_s = 0;
  bool first = true;
  Status s_run = target.pipeline().run_request(
      prompt,
      [&](int64_t step, const float* rows, int32_t n_rows,
          uint32_t next_pos) -> std::optional<SeqFeed> {
        std::vector<int32_t> got;
        int accepted = 0;
        if (first) {  // the prompt's last row
          first = false;
          const int32_t t = s.sample(rows + static_cast<size_t>(n_rows - 1) * n_vocab);
          s.accept(t);
          got.push_back(t);
        } else {
          const double verify_s = since(fed_at);
          SpecVerified v = spec_verify(s, rows, n_vocab, drafts);
          accepted = v.accepted;
          got = std::move(v.tokens);
          ++report_.steps;
          report_.drafted += drafts.size();
          report_.accepted += static_cast<size_t>(accepted);
          report_.emitted += got.size();
          report_.verify_s += verify_s;
          chooser.record(static_cast<int>(drafts.size()), accepted, last_draft_s, verify_s);
        }
        // Emitted: got[0 .. j]. The cache keeps the last token and the
        // drafts emitted before got[j] (got[i], i < accepted, sits at the
        // position after draft i - 1); got[j] is fed next, as plain decoding
        // feeds its last token: the next position to write is keep.
        size_t j = 0;
        for (; j < got.size(); ++j) {
          ctx_.push_back(got[j]);
          if (const size_t at = ctx_.size() - 1 - out0;
              report_.replay_left_at < 0 && at < replay_.size() && got[j] != replay_[at])
            report_.replay_left_at = static_cast<int64_t>(at);
          ++count;
          if (!emit(got[j]) || count >= n) {
            stop = true;
            break;
          }
        }
        if (!stop) j = got.size() - 1;
        const uint32_t keep =
            next_pos - static_cast<uint32_t>(drafts.size()) + static_cast<uint32_t>(j);
        if (stop) return SeqFeed{{}, keep};
        const int k = chooser.next();
        // The verify step is k + 1 tokens wide at most: its copies can start
        // while a model drafts (LS_ANNOUNCE_WIDTH=0: not, for A/B runs).
        static const bool announce = env_int("LS_ANNOUNCE_WIDTH", 1, 0) != 0;
        if (announce && k > 0 && draft_->slow()) target.pipeline().announce_width(k + 1);
        const auto t0 = Clock::now();
        {
          TraceScope span(target.tracer(), track, "draft", SpanKind::Busy, -1, step);
          drafts = k > 0 ? draft_->propose(ctx_, k) : std::vector<int32_t>{};
        }
        last_draft_s = since(t0);
        report_.draft_s += last_draft_s;
        SeqFeed f;
        f.pos = keep;
        f.tokens.push_back(ctx_.back());
        f.tokens.insert(f.tokens.end(), drafts.begin(), drafts.end());
        fed_at = Clock::now();
        return f;
      });
  return s_run;
}

}  // namespace ls
