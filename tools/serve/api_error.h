// Errors as the OpenAI API shapes them: an HTTP status and the body
// {"error": {"message", "type", "param", "code"}} that every client library
// turns into its own exception (the official `openai` package: APIError
// with status, type, param, code). Every refusal of the server is one of
// these, with a message that names the field, the limit or the length.
// defines: ApiError, api_error_body(), bad_request(), and one maker per status
#pragma once

#include <string>

namespace ls {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type =
      "invalid_request_error";  // OpenAI's: invalid_request_error, authentication_error, ...
  std::string param;            // the request field at fault; empty: null
  std::string code;             // e.g. model_not_found, invalid_api_key; empty: null
};

// The JSON body of the error (one line, no newline).
std::string api_error_body(const ApiError& e);

inline ApiError bad_request(std::string message, std::string param = {}) {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param), {}};
}
inline ApiError not_found(std::string message, std::string param = {}, std::string code = {}) {
  return ApiError{404, std::move(message), "invalid_request_error", std::move(param),
                  std::move(code)};
}
inline ApiError server_error(int status, std::string message, std::string type = "server_error") {
  return ApiError{status, std::move(message), std::move(type), {}, {}};
}

}  // namespace ls
