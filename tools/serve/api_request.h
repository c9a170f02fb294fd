// Request bodies of the OpenAI API, JSON to a checked request: POST
// /v1/completions, /v1/chat/completions, /tokenize, /detokenize. Every
// field is checked for its type and range, and a request that is wrong gets
// an ApiError (400) naming the field (`param`) and what was expected, never
// an exception: this is the part of the server that reads untrusted bytes,
// and a fuzz target (tests/fuzz/fuzz_api_request.cpp). Fields that OpenAI
// defines and the engine does not do (best_of, echo with logprobs, tools
// outside chat, JSON schemas outside model/json_schema.h's subset) are refused by name
// when asked for, and accepted at their no-op values, which clients send by
// default; unknown fields are ignored, as llama-server does.
// defines: ToolChoice, GenerateRequest, TokenizeRequest, DetokenizeRequest,
// parse_completion_request(), parse_chat_request(), parse_tokenize_request(),
// parse_detokenize_request()
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/chat.h"
#include "model/json_schema.h"
#include "model/logprobs.h"
#include "model/sampler.h"
#include "tools/serve/api_error.h"

namespace ls {

// tool_choice: what the answer may be when tools are given.
enum class ToolChoice {
  None,      // plain content (the tools are still listed in the prompt)
  Auto,      // content or calls, read from the answer (tool_calls.h's parse_tool_calls)
  Required,  // one call of one of the tools, decoded under its schema
  Named,     // one call of tool_name, decoded under its schema
};

// A completion or a chat completion, checked.
struct GenerateRequest {
  bool chat = false;
  std::string model;  // empty when absent
  // /v1/completions: the prompt as text, or as token ids (prompt_ids non-empty).
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  // /v1/chat/completions: the messages (roles system, user, assistant, tool).
  std::vector<ChatMessage> messages;
  // Chat's tools (their parameters schemas compiled once to check them) and
  // tool_choice (Auto when tools are given and it is not). Required and
  // Named set json and json_schema to the call's schema (tool_calls.h).
  // parallel_tool_calls false: an auto answer of several calls gives its
  // first only (OpenAI then makes at most one).
  std::vector<ChatTool> tools;
  ToolChoice tool_choice = ToolChoice::None;
  bool parallel_tool_calls = true;
  std::string tool_name;          // Named: the function
  SamplerParams sampling;         // the server's defaults, overridden per request
  int32_t max_tokens = -1;        // -1: the server's default (until the context is full)
  std::vector<std::string> stop;  // at most kMaxStop, none empty
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
  bool ignore_eos = false;     // llama-server's: an end-of-generation token does not end it
  bool cache_prompt = true;    // llama-server's: start from a cached prefix (GenParams)
  bool json = false;           // response_format {"type": "json_object"}: JSON mode
  int32_t logprobs = -1;       // -1 none; else the alternatives a token (GenParams::logprobs)
  int n = 1;                   // choices: as many sequences (a seed s gives them s, s + 1, ...)
  bool echo = false;           // completions: the prompt's text before each choice's
  // response_format {"type": "json_schema"} (or llama-server's top-level
  // json_schema): the compiled schema the output keeps to; json is set too.
  std::shared_ptr<const JsonSchema> json_schema;
};

inline constexpr size_t kMaxStop = 16;
inline constexpr size_t kMaxLogitBias = 1024;
inline constexpr int kMaxChoices = 16;
inline constexpr size_t kMaxStopBytes = 512;
inline constexpr size_t kMaxTools = 128;  // OpenAI's limit

struct TokenizeRequest {
  std::string content;
  bool add_special = false;   // the BOS, as the model wants it
  bool parse_special = true;  // special tokens written in the text become their ids
};

struct DetokenizeRequest {
  std::vector<int32_t> tokens;
};

template <typename T>
using Parsed = std::variant<T, ApiError>;

// `defaults`: the server's sampling settings (serve's --temp, --top-k, ...),
// which a request's fields override.
Parsed<GenerateRequest> parse_completion_request(std::string_view body,
                                                 const SamplerParams& defaults);
Parsed<GenerateRequest> parse_chat_request(std::string_view body, const SamplerParams& defaults);
Parsed<TokenizeRequest> parse_tokenize_request(std::string_view body);
Parsed<DetokenizeRequest> parse_detokenize_request(std::string_view body);

}  // namespace ls
