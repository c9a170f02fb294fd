// Errors as values: every fallible call through I/O, CUDA and actor
// boundaries returns Status or Expected<T>. No exceptions cross threads.
// defines: Error, Status, Expected<T>, ok(), make_error(), LS_TRY
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>
#include <utility>
#include <variant>

namespace ls {

// One error: a message that already names the file, tensor, field or layer.
struct Error {
  std::string message;
};

// Build an error with printf-style formatting (messages are short; 1 KiB is plenty).
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline Error make_error(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return Error{buf};
}

// Expected<T>: a T or an Error (std::expected is C++23; nvcc builds C++20).
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Error e) : v_(std::move(e)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Status: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : err_(std::move(e)), failed_(true) {}
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool failed_ = false;
};

inline Status ok() { return Status{}; }

}  // namespace ls

// Return the error of a failed Status/Expected expression from the enclosing function.
#define LS_TRY(expr)                                  \
  do {                                                \
    auto&& ls_try_r_ = (expr);                        \
    if (!ls_try_r_) return ::ls::Error{ls_try_r_.error()}; \
  } while (0)
