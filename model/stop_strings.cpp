#include "model/stop_strings.h"

#include <algorithm>

namespace ls {

StopScanner::StopScanner(std::vector<std::string> stops) {
  for (std::string& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopScanner::push(std::string_view piece, bool* stopped) {
  *stopped = false;
  held_.append(piece);
  if (stops_.empty()) return flush();
  // The earliest complete stop string wins (a later one never shows).
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    *stopped = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Keep the longest tail of the text that is a proper prefix of some stop
  // string: the next piece may complete it.
  size_t keep = 0;
  for (const std::string& s : stops_) {
    const size_t most = std::min(held_.size(), s.size() - 1);
    for (size_t k = most; k > keep; --k)
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopScanner::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace ls
