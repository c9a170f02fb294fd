// The JSON bodies of the OpenAI API's answers: a completion and a chat
// completion, whole or as the chunks of a stream, with `usage`; the model
// list. Shapes as api.openai.com sends them (the official clients parse
// them): ids "cmpl-N" and "chatcmpl-N", `created` in Unix seconds, one
// choice at index 0.
// defines: ResponseMeta, LogprobEntry, LogprobsPiece, Usage, ToolCallOut, ChoiceOut,
// completion_body(), completion_chunk(), chat_body(), chat_chunk(), chat_role_chunk(),
// chat_tool_call_chunks(), usage_chunk(), models_body()
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ls {

struct ResponseMeta {
  bool chat = false;
  std::string id;     // cmpl-N / chatcmpl-N
  std::string model;  // the served model's id
  int64_t created = 0;
  int index = 0;  // the choice a stream chunk belongs to (a request's n)
};

// A sampled token's log probability and the most likely tokens at its step
// (the request's logprobs / top_logprobs), each with the bytes it writes.
struct LogprobEntry {
  std::string token;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // most likely first
};
// A piece of the answer's logprobs: chat's {"content": [...]} or the
// completion's {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
// (text_offset counts bytes from `offset`, the answer's bytes before these).
// Null when the request asked for none.
struct LogprobsPiece {
  const std::vector<LogprobEntry>* entries = nullptr;
  size_t offset = 0;
};

struct Usage {
  size_t prompt_tokens = 0, completion_tokens = 0;
  size_t cached_tokens = 0;  // of prompt_tokens (OpenAI's prompt_tokens_details.cached_tokens)
};

// A tool call the answer makes (chat): one of message.tool_calls.
struct ToolCallOut {
  std::string id;  // call_...
  std::string name;
  std::string arguments;  // a JSON object's text
};

// One choice of a whole answer.
struct ChoiceOut {
  std::string text;
  std::string finish_reason;  // "stop", "length" or "tool_calls"
  LogprobsPiece lp;
  // The calls the answer makes, in order (any: content is null,
  // finish_reason "tool_calls").
  std::vector<ToolCallOut> tool_calls{};
};
// A whole answer (stream: false): the choices at indices 0, 1, ...
std::string completion_body(const ResponseMeta& m, const std::vector<ChoiceOut>& choices,
                            const Usage& u);
std::string chat_body(const ResponseMeta& m, const std::vector<ChoiceOut>& choices, const Usage& u);
// One choice.
inline std::string completion_body(const ResponseMeta& m, std::string_view text,
                                   std::string_view finish_reason, const Usage& u) {
  return completion_body(m, {ChoiceOut{std::string(text), std::string(finish_reason), {}}}, u);
}
inline std::string chat_body(const ResponseMeta& m, std::string_view text,
                             std::string_view finish_reason, const Usage& u) {
  return chat_body(m, {ChoiceOut{std::string(text), std::string(finish_reason), {}}}, u);
}

// Stream chunks (JSON for sse_frame). A text piece has no finish_reason
// (empty: null); the last chunk has one and may carry text too.
std::string completion_chunk(const ResponseMeta& m, std::string_view text,
                             std::string_view finish_reason = {}, const LogprobsPiece& lp = {});
// The first chat chunk: delta {"role": "assistant", "content": ""}.
std::string chat_role_chunk(const ResponseMeta& m);
// A chat chunk: delta {"content": text}, or {} when text is empty and
// finish_reason is given (the last).
std::string chat_chunk(const ResponseMeta& m, std::string_view text,
                       std::string_view finish_reason = {}, const LogprobsPiece& lp = {});
// An answer's tool calls streamed as OpenAI does: for each call in turn,
// with its `index` (0, 1, ...) in the answer's calls, a delta with the
// call's id, type, name and empty arguments, then one with the whole
// arguments. The last chunk is then chat_chunk(m, "", "tool_calls").
std::vector<std::string> chat_tool_call_chunks(const ResponseMeta& m,
                                               const std::vector<ToolCallOut>& calls);
// stream_options.include_usage: the chunk after the last, with no choices.
std::string usage_chunk(const ResponseMeta& m, const Usage& u);

// GET /v1/models: the one model served, with its context and vocabulary.
std::string models_body(std::string_view id, int64_t created, uint32_t n_ctx, uint32_t n_vocab,
                        uint32_t n_parallel);

}  // namespace ls
