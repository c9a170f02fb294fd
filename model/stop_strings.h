// Stop strings over streamed text: a generation ends before the first
// occurrence of any of them, and no part of one ever reaches the client.
// Text arrives piece by piece (a token's text at a time); what could still
// be the start of a stop string is held back until the next piece says
// whether it is (OpenAI's and llama-server's `stop`).
// defines: StopScanner
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ls {

class StopScanner {
 public:
  explicit StopScanner(std::vector<std::string> stops);  // empty strings are ignored

  // Add a piece; returns the text now safe to release. When a stop string
  // is complete, *stopped is set, the text before it is returned and the
  // rest (it, and anything after it) is dropped.
  std::string push(std::string_view piece, bool* stopped);
  // The text still held back (at the end of a generation without a stop).
  std::string flush();
  size_t held() const { return held_.size(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
};

}  // namespace ls
