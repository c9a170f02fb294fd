// The sampling flags of decode and serve (llama.cpp's names): --temp,
// --top-k, --top-p, --min-p, the penalties and their window, and
// --logit-bias ID(+|-)BIAS (repeatable; a bias of -100 or less, or -inf,
// bans the token). For serve they are the defaults a request overrides.
// defines: SamplingFlagText, add_sampling_flags(), finish_sampling_flags(),
//          check_logit_bias_vocab()
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/sampler.h"
#include "runtime/status.h"

namespace ls {

struct SamplingFlagText {
  std::vector<std::string> logit_bias;  // ID(+|-)BIAS each
};

// `what`: "" for decode, "Default " for serve (its values are a request's
// defaults).
inline void add_sampling_flags(CLI::App* sub, SamplerParams& sp, SamplingFlagText& text,
                               const std::string& what) {
  const std::string d = what;
  sub->add_option("--temp", sp.temp,
                  d + (d.empty() ? "Temperature" : "temperature") + " (0: greedy)")
      ->capture_default_str();
  sub->add_option("--top-k", sp.top_k, d + "Top-k (0: off)")->capture_default_str();
  sub->add_option("--top-p", sp.top_p, d + "Top-p (1: off)")->capture_default_str();
  sub->add_option("--min-p", sp.min_p, d + "Min-p (0: off)")->capture_default_str();
  sub->add_option("--repeat-penalty", sp.repeat_penalty,
                  d + (d.empty() ? "Repeat" : "repeat") + " penalty (1: off)")
      ->capture_default_str();
  sub->add_option("--repeat-last-n", sp.repeat_last_n,
                  d + (d.empty() ? "Tokens" : "tokens") +
                      " the penalties look back over (-1: the whole context)")
      ->capture_default_str();
  sub->add_option("--frequency-penalty", sp.frequency_penalty,
                  d + (d.empty() ? "Frequency" : "frequency") +
                      " penalty: minus this for each time a token occurs in the window (0: off)")
      ->capture_default_str();
  sub->add_option("--presence-penalty", sp.presence_penalty,
                  d + (d.empty() ? "Presence" : "presence") +
                      " penalty: minus this for a token that occurs in the window (0: off)")
      ->capture_default_str();
  sub->add_option("-l,--logit-bias", text.logit_bias,
                  d + (d.empty() ? "Logit" : "logit") +
                      " bias ID(+|-)BIAS, e.g. 15043+1 or 15043-inf (repeatable; -100 or less "
                      "bans the token)");
}

// Checks the numbers CLI11 took and reads the --logit-bias entries.
inline Status finish_sampling_flags(SamplerParams& sp, const SamplingFlagText& text) {
  const struct {
    const char* flag;
    float v;
  } nums[] = {{"--temp", sp.temp},
              {"--top-p", sp.top_p},
              {"--min-p", sp.min_p},
              {"--repeat-penalty", sp.repeat_penalty},
              {"--frequency-penalty", sp.frequency_penalty},
              {"--presence-penalty", sp.presence_penalty}};
  for (const auto& n : nums)
    if (!std::isfinite(n.v))
      return make_error("%s must be a finite number (got %g)", n.flag, double(n.v));
  if (sp.repeat_last_n < -1)
    return make_error("--repeat-last-n must be -1 (the whole context) or more (got %d)",
                      sp.repeat_last_n);
  sp.logit_bias.clear();
  for (const std::string& e : text.logit_bias) {
    // Digits, then the sign, then the magnitude (a number, or inf).
    size_t i = 0;
    while (i < e.size() && e[i] >= '0' && e[i] <= '9') ++i;
    const bool ok_id = i > 0 && i < e.size() && i <= 10 && (e[i] == '+' || e[i] == '-');
    const long long id = ok_id ? std::strtoll(e.substr(0, i).c_str(), nullptr, 10) : -1;
    char* end = nullptr;
    errno = 0;
    const float mag = ok_id ? std::strtof(e.c_str() + i + 1, &end) : 0.0f;
    if (!ok_id || id > std::numeric_limits<int32_t>::max() || end == e.c_str() + i + 1 ||
        *end != '\0' || errno != 0 || std::isnan(mag) || mag < 0)
      return make_error(
          "--logit-bias takes TOKEN_ID+BIAS or TOKEN_ID-BIAS, e.g. 15043+1 or 15043-inf (got '%s')",
          e.c_str());
    const float bias = e[i] == '-' ? -mag : mag;
    if (bias > 100.0f) return make_error("--logit-bias %s: a bias is at most 100", e.c_str());
    sp.logit_bias.emplace_back(static_cast<int32_t>(id), bias);
  }
  return ok();
}

// The bias's ids against the model's vocabulary (known once it is loaded).
inline Status check_logit_bias_vocab(const SamplerParams& sp, uint32_t n_vocab) {
  const int64_t id = logit_bias_outside(sp, static_cast<int32_t>(n_vocab));
  if (id >= 0)
    return make_error("--logit-bias: token id %lld is outside the vocabulary (0..%u)",
                      static_cast<long long>(id), n_vocab - 1);
  return ok();
}

}  // namespace ls
