// An array that starts as all zero bytes without writing them: calloc takes
// large blocks from fresh anonymous mappings, whose pages the kernel zeroes
// when they are first touched, so a large array costs nothing until used and
// then only the pages used. The CPU backend's key/value cache is one: a 1b
// at its default 4,096 positions zeroed 134 MB at load, 0.3 s of a 0.44 s
// load on the dev VM, for a chat that writes a few hundred positions.
// defines: ZeroedArray
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace ls {

template <class T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable_v<T>, "zero bytes must be a value of T");

 public:
  ZeroedArray() = default;
  explicit ZeroedArray(size_t n) : p_(static_cast<T*>(std::calloc(n ? n : 1, sizeof(T)))), n_(n) {
    if (!p_) throw std::bad_alloc();
  }
  ZeroedArray(ZeroedArray&& o) noexcept : p_(std::move(o.p_)), n_(std::exchange(o.n_, 0)) {}
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    p_ = std::move(o.p_);
    n_ = std::exchange(o.n_, 0);
    return *this;
  }
  T* data() { return p_.get(); }
  const T* data() const { return p_.get(); }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return p_.get()[i]; }
  const T& operator[](size_t i) const { return p_.get()[i]; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> p_;
  size_t n_ = 0;
};

}  // namespace ls
