#include "tools/serve/api_error.h"

#include <nlohmann/json.hpp>

namespace ls {

std::string api_error_body(const ApiError& e) {
  nlohmann::json j;
  j["error"]["message"] = e.message;
  j["error"]["type"] = e.type;
  j["error"]["param"] = e.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.param);
  j["error"]["code"] = e.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.code);
  // Invalid UTF-8 that a client sent (echoed in a message) becomes U+FFFD
  // rather than an exception.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ls
