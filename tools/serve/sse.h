// Server-sent events as OpenAI streams them: each event one `data: <json>`
// line and a blank line, the stream ended by `data: [DONE]`. The JSON is one
// line (nlohmann dumps without newlines, and escapes those in strings), so
// a frame never needs the multi-line `data:` form.
// defines: sse_frame(), kSseDone, kSseContentType
#pragma once

#include <string>
#include <string_view>

namespace ls {

inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
inline constexpr std::string_view kSseContentType = "text/event-stream";

// One event. `payload` must hold no newline (a JSON dump never does).
inline std::string sse_frame(std::string_view payload) {
  std::string f;
  f.reserve(payload.size() + 8);
  f.append("data: ").append(payload).append("\n\n");
  return f;
}

}  // namespace ls
