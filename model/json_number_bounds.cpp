#include "model/json_number_bounds.h"

#include <algorithm>
#include <string>
#include <utility>

namespace ls {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Leading zeros dropped, trailing zeros moved into the exponent, zero made
// positive: one form per value, so equal values compare equal digit for digit.
JsonDecimal normalized(bool neg, std::string digits, int32_t exp) {
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return JsonDecimal{};
  digits.erase(0, first);
  const size_t last = digits.find_last_not_of('0');
  exp += static_cast<int32_t>(digits.size() - 1 - last);
  digits.resize(last + 1);
  return JsonDecimal{neg, std::move(digits), exp};
}

// |a| against |b|.
int compare_magnitude(const JsonDecimal& a, const JsonDecimal& b) {
  if (a.zero() || b.zero()) return a.zero() ? (b.zero() ? 0 : -1) : 1;
  // The power of ten just above each one's leading digit.
  const int64_t ta = static_cast<int64_t>(a.digits.size()) + a.exp;
  const int64_t tb = static_cast<int64_t>(b.digits.size()) + b.exp;
  if (ta != tb) return ta < tb ? -1 : 1;
  // Same leading position: digit by digit, missing digits are zeros.
  const size_t n = std::max(a.digits.size(), b.digits.size());
  for (size_t i = 0; i < n; ++i) {
    const char da = i < a.digits.size() ? a.digits[i] : '0';
    const char db = i < b.digits.size() ? b.digits[i] : '0';
    if (da != db) return da < db ? -1 : 1;
  }
  return 0;
}

JsonDecimal negated(JsonDecimal d) {
  if (!d.zero()) d.neg = !d.neg;
  return d;
}

// A string of digits (an integer part), times 10^k.
JsonDecimal scaled(const std::string& digits, int k) {
  return normalized(false, digits, k);
}

// digits + 1, as digits.
std::string plus_one(std::string digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return digits;
    }
    digits[i] = '0';
  }
  return "1" + digits;
}

// The integer below or at d (floor) and above or at d (ceil).
JsonDecimal floor_of(const JsonDecimal& d) {
  if (d.exp >= 0 || d.zero()) return d;
  const size_t frac = static_cast<size_t>(-d.exp);
  const std::string whole =
      frac >= d.digits.size() ? "0" : d.digits.substr(0, d.digits.size() - frac);
  // d is normalized with exp < 0, so its last digit is not zero: d has a
  // fraction, and floor moves away from zero for negatives.
  return normalized(d.neg, d.neg ? plus_one(whole) : whole, 0);
}
JsonDecimal ceil_of(const JsonDecimal& d) {
  return negated(floor_of(negated(d)));
}
// n + 1 and n - 1 for integers.
JsonDecimal int_step(const JsonDecimal& n, int by) {
  if (n.zero()) return normalized(by < 0, "1", 0);
  std::string m = n.digits + std::string(static_cast<size_t>(n.exp), '0');
  const bool away = (by > 0) != n.neg;  // the magnitude grows
  if (away) return normalized(n.neg, plus_one(m), 0);
  for (size_t i = m.size(); i-- > 0;) {  // the magnitude shrinks by one
    if (m[i] != '0') {
      --m[i];
      break;
    }
    m[i] = '9';
  }
  return normalized(n.neg, m, 0);
}

// d x 10^k, exactly.
JsonDecimal shifted(JsonDecimal d, int k) {
  if (!d.zero()) d.exp += k;
  return d;
}

// An integer's magnitude as a digit string (d an integer: exp >= 0).
std::string int_digits(const JsonDecimal& d) {
  return d.zero() ? std::string("0") : d.digits + std::string(static_cast<size_t>(d.exp), '0');
}

// An integer's magnitude divided by c >= 1 by long division: the quotient's
// digits (leading zeros kept) and the remainder.
std::pair<std::string, uint64_t> divide_magnitude(const JsonDecimal& n, uint64_t c) {
  std::string q;
  unsigned __int128 r = 0;
  for (char ch : int_digits(n)) {
    r = r * 10 + static_cast<unsigned>(ch - '0');
    q += static_cast<char>('0' + static_cast<int>(r / c));
    r %= c;
  }
  return {std::move(q), static_cast<uint64_t>(r)};
}

// floor(n / c) for an integer n (either sign) and c >= 1, exactly.
JsonDecimal floor_div(const JsonDecimal& n, uint64_t c) {
  auto [q, r] = divide_magnitude(n, c);
  JsonDecimal m = normalized(false, std::move(q), 0);
  if (!n.neg) return m;
  // -|n| / c: the quotient's magnitude, one more where something is left.
  return negated(r != 0 ? int_step(m, 1) : m);
}

// n x c for an integer n and c >= 1, exactly.
JsonDecimal times(const JsonDecimal& n, uint64_t c) {
  const std::string a = int_digits(n);
  std::string out(a.size() + 20, '0');
  unsigned __int128 carry = 0;
  size_t k = out.size();
  for (size_t i = a.size(); i-- > 0;) {
    const unsigned __int128 v = static_cast<unsigned __int128>(a[i] - '0') * c + carry;
    out[--k] = static_cast<char>('0' + static_cast<int>(v % 10));
    carry = v / 10;
  }
  while (carry != 0) {
    out[--k] = static_cast<char>('0' + static_cast<int>(carry % 10));
    carry /= 10;
  }
  return normalized(n.neg, out, 0);
}

// Whether integer n is a multiple of c.
bool divides(uint64_t c, const JsonDecimal& n) {
  return divide_magnitude(n, c).second == 0;
}

// One end of a range: a value, open or closed.
struct End {
  JsonDecimal v;
  bool open = false;
};

// Whether [lo, hi] (ends open or closed) holds a multiple of 10^-g inside
// the bounds: the numbers of at most g digits after the point (g = 0: the
// integers). Exact for any bounds: the least such multiple at or above the
// lower end against the greatest at or below the upper end.
bool meets(End lo, End hi, const JsonNumberBounds& b, int g) {
  if (b.has_min) {
    const int c = json_decimal_compare(b.min, lo.v);
    if (c > 0 || (c == 0 && b.min_open)) lo = End{b.min, b.min_open};
  }
  if (b.has_max) {
    const int c = json_decimal_compare(b.max, hi.v);
    if (c < 0 || (c == 0 && b.max_open)) hi = End{b.max, b.max_open};
  }
  if (b.step != 0) {
    // The multiples of step (whole numbers, so on every grid): the least
    // above the lower end against the greatest below the upper one.
    JsonDecimal i = ceil_of(lo.v);
    if (lo.open && json_decimal_compare(i, lo.v) == 0) i = int_step(i, 1);
    JsonDecimal j = floor_of(hi.v);
    if (hi.open && json_decimal_compare(j, hi.v) == 0) j = int_step(j, -1);
    const JsonDecimal x = times(negated(floor_div(negated(i), b.step)), b.step);
    const JsonDecimal y = times(floor_div(j, b.step), b.step);
    return json_decimal_compare(x, y) <= 0;
  }
  JsonDecimal x = shifted(ceil_of(shifted(lo.v, g)), -g);
  if (lo.open && json_decimal_compare(x, lo.v) == 0) x = shifted(int_step(shifted(x, g), 1), -g);
  JsonDecimal y = shifted(floor_of(shifted(hi.v, g)), -g);
  if (hi.open && json_decimal_compare(y, hi.v) == 0) y = shifted(int_step(shifted(y, g), -1), -g);
  return json_decimal_compare(x, y) <= 0;
}

// The magnitudes [a, b) (or the single a, when point), on the side of the
// sign, on the grid of 10^-g.
bool meets_magnitudes(bool neg, const JsonDecimal& a, const JsonDecimal& b, bool point,
                      const JsonNumberBounds& bounds, int g) {
  if (!neg) return meets(End{a, false}, End{point ? a : b, !point}, bounds, g);
  return meets(End{negated(point ? a : b), !point}, End{negated(a), false}, bounds, g);
}

}  // namespace

Expected<JsonDecimal> JsonDecimal::parse(std::string_view t) {
  auto bad = [&] {
    return make_error("json schema: '%.*s' is not a JSON number", static_cast<int>(t.size()),
                      t.data());
  };
  size_t i = 0;
  const bool neg = i < t.size() && t[i] == '-';
  if (neg) ++i;
  std::string digits;
  int64_t exp = 0;
  const size_t int_start = i;
  while (i < t.size() && is_digit(t[i])) digits += t[i++];
  if (i == int_start) return bad();
  if (i < t.size() && t[i] == '.') {
    const size_t frac_start = ++i;
    while (i < t.size() && is_digit(t[i])) digits += t[i++], --exp;
    if (i == frac_start) return bad();
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    const bool eneg = i < t.size() && t[i] == '-';
    if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
    const size_t e_start = i;
    int64_t e = 0;
    while (i < t.size() && is_digit(t[i]) && e < 100000) e = e * 10 + (t[i++] - '0');
    if (i == e_start) return bad();
    exp += eneg ? -e : e;
  }
  if (i != t.size() || exp < -100000 || exp > 100000) return bad();
  return normalized(neg, std::move(digits), static_cast<int32_t>(exp));
}

int json_decimal_compare(const JsonDecimal& a, const JsonDecimal& b) {
  if (a.neg != b.neg) return a.neg ? -1 : 1;
  const int m = compare_magnitude(a, b);
  return a.neg ? -m : m;
}

bool JsonNumberBounds::can_finish(std::string_view p, bool integer_only) const {
  if (p.empty()) {
    if (can_finish("-", integer_only)) return true;
    for (char d = '0'; d <= '9'; ++d)
      if (can_finish(std::string_view(&d, 1), integer_only)) return true;
    return false;
  }
  const bool neg = p[0] == '-';
  const std::string_view s = p.substr(neg ? 1 : 0);
  if (s.empty()) {
    for (char d = '0'; d <= '9'; ++d) {
      const char t[2] = {'-', d};
      if (can_finish(std::string_view(t, 2), integer_only)) return true;
    }
    return false;
  }
  const size_t dot = s.find('.');
  const std::string whole(s.substr(0, dot));
  if (whole.size() > static_cast<size_t>(kMaxIntDigits)) return false;
  const int g = integer_only ? 0 : kMaxFracDigits;  // the numbers it may write: multiples of 10^-g
  if (dot == std::string_view::npos) {
    // "0" ends there or takes a fraction: [0, 1). Other digits may take up
    // to the limit's more (k), then a fraction: [whole x 10^k, (whole + 1) x 10^k).
    if (whole == "0") return meets_magnitudes(neg, JsonDecimal{}, scaled("1", 0), false, *this, g);
    for (int k = 0; k <= kMaxIntDigits - static_cast<int>(whole.size()); ++k)
      if (meets_magnitudes(neg, scaled(whole, k), scaled(plus_one(whole), k), false, *this, g))
        return true;
    return false;
  }
  if (integer_only) return false;
  const std::string frac(s.substr(dot + 1));
  if (frac.size() > static_cast<size_t>(kMaxFracDigits)) return false;
  const int32_t e = -static_cast<int32_t>(frac.size());
  // "12." needs a digit: [12, 13). "12.5": [12.5, 12.6), or 12.5 alone at
  // the limit of fraction digits.
  const JsonDecimal a = normalized(false, whole + frac, e);
  const JsonDecimal b = normalized(false, plus_one(whole + frac), e);
  return meets_magnitudes(neg, a, b, frac.size() == static_cast<size_t>(kMaxFracDigits), *this, g);
}

bool JsonNumberBounds::inside(std::string_view text) const {
  auto v = JsonDecimal::parse(text);
  if (!v) return false;
  const int lo = has_min ? json_decimal_compare(*v, min) : 1;
  const int hi = has_max ? json_decimal_compare(*v, max) : -1;
  if (step != 0 && !(v->zero() || (v->exp >= 0 && divides(step, *v)))) return false;
  return (lo > 0 || (lo == 0 && !min_open)) && (hi < 0 || (hi == 0 && !max_open));
}

}  // namespace ls
