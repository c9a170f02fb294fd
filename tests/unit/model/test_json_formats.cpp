// JSON schema string formats given as patterns (model/json_string_format.h:
// email, hostname, ipv4, ipv6, duration, uri, uri-reference, json-pointer,
// relative-json-pointer): known strings in and out,
// and random walks through the schema's byte automaton whose finished
// strings an independent check must take (inet_pton for the addresses, a
// reading of each RFC's grammar written here for the others), with no dead
// end on the way; lengths beside a format; refusals.
#include <arpa/inet.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_schema.h"
#include "model/json_schema_nfa.h"

using namespace ls;
using nlohmann::json;

namespace {

std::shared_ptr<const JsonSchema> format_schema(const std::string& f, int min = -1, int max = -1) {
  json s{{"type", "string"}, {"format", f}};
  if (min >= 0) s["minLength"] = min;
  if (max >= 0) s["maxLength"] = max;
  auto c = compile_json_schema(std::string_view(s.dump()));
  INFO("schema: " << s.dump());
  REQUIRE_MESSAGE(c.has_value(), (c ? "" : c.error().message));
  return *c;
}

bool takes(const JsonSchema& s, const std::string& text) {
  JsonSchemaNfa g(s);
  return g.feed(json(text).dump()) && g.complete();
}

// ---- The checks, each from its RFC's grammar, apart from the patterns. ----

bool all_of(const std::string& s, size_t b, size_t e, const char* extra) {
  for (size_t i = b; i < e; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (!std::isalnum(c) && !std::strchr(extra, c)) return false;
  }
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep)
      out.emplace_back();
    else
      out.back().push_back(c);
  }
  return out;
}

// RFC 1123: labels of 1-63 letters, digits and '-', not at a label's ends.
bool hostname_ok(const std::string& h, size_t min_labels = 1) {
  if (h.empty() || h.size() > 253) return false;
  const auto labels = split(h, '.');
  if (labels.size() < min_labels) return false;
  for (const std::string& l : labels)
    if (l.empty() || l.size() > 63 || l.front() == '-' || l.back() == '-' ||
        !all_of(l, 0, l.size(), "-"))
      return false;
  return true;
}

bool email_ok(const std::string& e) {
  const size_t at = e.find('@');
  if (at == std::string::npos || e.find('@', at + 1) != std::string::npos || e.size() > 254)
    return false;
  for (const std::string& atom : split(e.substr(0, at), '.'))
    if (atom.empty() || !all_of(atom, 0, atom.size(), "_%+-")) return false;
  const std::string domain = e.substr(at + 1);
  if (!hostname_ok(domain, 2)) return false;
  return std::isalpha(static_cast<unsigned char>(domain[domain.rfind('.') + 1])) != 0;
}

bool ip_ok(int family, const std::string& a) {
  unsigned char buf[16];
  return inet_pton(family, a.c_str(), buf) == 1;
}

// RFC 3339 Appendix A: the designators of each part a run of "YMD" (or W
// alone) and "HMS", each after at least one digit.
bool duration_ok(const std::string& d) {
  if (d.size() < 3 || d[0] != 'P') return false;
  std::string date, time;
  bool in_time = false, digits = false;
  for (size_t i = 1; i < d.size(); ++i) {
    const char c = d[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c == 'T') {
      if (in_time || digits) return false;
      in_time = true;
    } else {
      if (!digits) return false;
      (in_time ? time : date) += c;
      digits = false;
    }
  }
  if (digits || (in_time && time.empty())) return false;
  if (date == "W") return time.empty() && !in_time;
  const bool date_run = date.empty() || std::string("YMD").find(date) != std::string::npos;
  const bool time_run = time.empty() || std::string("HMS").find(time) != std::string::npos;
  return date_run && time_run && (!date.empty() || !time.empty());
}

// RFC 3986 (no IP-literal host): scheme ":" hier-part ["?" query] ["#" fragment].
bool uri_chars(const std::string& s, size_t b, size_t e, const char* extra) {
  for (size_t i = b; i < e; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '%') {  // a percent-escape: two hex digits
      if (i + 2 >= e || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(s[i + 2])))
        return false;
      i += 2;
    } else if (!std::isalnum(c) && !std::strchr("-._~!$&'()*+,;=", c) && !std::strchr(extra, c)) {
      return false;
    }
  }
  return true;
}

bool uri_ok(const std::string& u) {
  const size_t colon = u.find(':');
  if (colon == std::string::npos || colon == 0 || !std::isalpha(static_cast<unsigned char>(u[0])) ||
      !all_of(u, 0, colon, "+.-"))
    return false;
  // The fragment from the first '#', the query from the first '?' before it.
  const size_t hash = u.find('#', colon);
  const size_t end_q = hash == std::string::npos ? u.size() : hash;
  if (hash != std::string::npos && !uri_chars(u, hash + 1, u.size(), ":@/?")) return false;
  const size_t q = u.find('?', colon);
  const size_t end_p = q == std::string::npos || q > end_q ? end_q : q;
  if (end_p < end_q && !uri_chars(u, end_p + 1, end_q, ":@/?")) return false;
  size_t p = colon + 1;
  if (u.compare(p, 2, "//") == 0) {  // authority: [userinfo "@"] host [":" port]
    const size_t a_end = std::min(end_p, u.find('/', p + 2));
    std::string auth = u.substr(p + 2, a_end - p - 2);
    const size_t at = auth.find('@');
    if (at != std::string::npos) {
      if (!uri_chars(auth, 0, at, ":")) return false;
      auth = auth.substr(at + 1);
    }
    const size_t port = auth.find(':');
    for (size_t i = port + 1; port != std::string::npos && i < auth.size(); ++i)
      if (!std::isdigit(static_cast<unsigned char>(auth[i]))) return false;
    if (!uri_chars(auth, 0, port == std::string::npos ? auth.size() : port, "")) return false;
    p = a_end;
  }
  return uri_chars(u, p, end_p, ":@/");  // the path
}

// A relative reference (RFC 3986, 4.2): "//" authority path, "/" path, a
// path whose first segment has no ':', or none; then query and fragment.
bool relative_ref_ok(const std::string& u) {
  const size_t hash = u.find('#');
  const size_t end_q = hash == std::string::npos ? u.size() : hash;
  if (hash != std::string::npos && !uri_chars(u, hash + 1, u.size(), ":@/?")) return false;
  const size_t q = u.find('?');
  const size_t end_p = q == std::string::npos || q > end_q ? end_q : q;
  if (end_p < end_q && !uri_chars(u, end_p + 1, end_q, ":@/?")) return false;
  const std::string path = u.substr(0, end_p);
  if (path.compare(0, 2, "//") == 0) return uri_ok("x:" + u);  // the authority's rules
  const size_t slash = path.find('/');
  if (path.empty() || path[0] == '/') return uri_chars(path, 0, path.size(), ":@/");
  // The first segment: no ':'.
  const size_t first = slash == std::string::npos ? path.size() : slash;
  return uri_chars(path, 0, first, "@") && uri_chars(path, first, path.size(), ":@/");
}

// RFC 6901: empty, or "/" tokens in which '~' is followed by 0 or 1.
bool json_pointer_ok(const std::string& v) {
  if (!v.empty() && v[0] != '/') return false;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == '~' && (i + 1 == v.size() || (v[i + 1] != '0' && v[i + 1] != '1'))) return false;
  return true;
}

// A non-negative integer without leading zeros, then '#' or a JSON pointer.
bool relative_json_pointer_ok(const std::string& v) {
  size_t i = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i;
  if (i == 0 || (v[0] == '0' && i > 1)) return false;
  const std::string rest = v.substr(i);
  return rest == "#" || json_pointer_ok(rest);
}

bool format_ok(const std::string& f, const std::string& v) {
  if (f == "uri-reference") return uri_ok(v) || relative_ref_ok(v);
  if (f == "json-pointer") return json_pointer_ok(v);
  if (f == "relative-json-pointer") return relative_json_pointer_ok(v);
  if (f == "email") return email_ok(v);
  if (f == "hostname") return hostname_ok(v);
  if (f == "ipv4") return ip_ok(AF_INET, v);
  if (f == "ipv6") return ip_ok(AF_INET6, v);
  if (f == "duration") return duration_ok(v);
  return f == "uri" && uri_ok(v);
}

struct Known {
  const char* format;
  std::vector<std::string> in, out;
};

const Known kKnown[] = {
    {"email",
     {"a@b.co", "first.last+tag@mail.example.org", "x_y%z@a-b.c-d.museum", "1@2.x3"},
     {"a@b", "a@b.1c", ".a@b.co", "a.@b.co", "a..b@c.co", "a@-b.co", "a@b-.co", "a@b..co",
      "a b@c.co", "a@b.co.", "@b.co", "a@@b.co", "\"a\"@b.co"}},
    {"hostname",
     {"localhost", "a", "example.com", "a-b.c-d", "x1.y2.z3", std::string(63, 'a') + ".b"},
     {"-a", "a-", "a..b", ".a", "a.", "a_b", "a b", std::string(64, 'a')}},
    {"ipv4",
     {"0.0.0.0", "127.0.0.1", "255.255.255.255", "10.20.30.40", "1.2.3.199"},
     {"256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1.2.3.04", "1..2.3", "a.b.c.d"}},
    {"ipv6",
     {"::", "::1", "1::", "2001:db8::8a2e:370:7334", "2001:0db8:0000:0000:0000:ff00:0042:8329",
      "fe80::1:2:3:4", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "a:b:c:d:e:f:0:1"},
     {":::", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "g::1", "1:2:3:4:5:6:7", ":1:2"}},
    {"duration",
     {"P1Y", "P1Y2M", "P1Y2M3D", "P2M3D", "P3D", "P4W", "PT5H", "PT5H6M7S", "PT6M7S", "PT7S",
      "P1DT2H", "P10Y10M10DT10H10M10S"},
     {"P", "PT", "P1Y2D", "PT1H2S", "P1W2D", "P1DT", "1Y", "P1.5Y", "P-1D", "PT1S2M", "P1H"}},
    {"uri",
     {"http://example.com", "https://user:pw@host:8080/a/b?x=1&y=2#frag", "mailto:a@b.co",
      "urn:isbn:0451450523", "file:///etc/hosts", "ftp://h/%7Euser/", "a:", "x+y.z-w:/p?q#f",
      "http://h?q/?#f/?"},
     {"http", "1http://h", "http://h:80a/", "http://h/a b", "http://h/%7", "http://h/%zz",
      "http://h#a#b", "://h", "http://[::1]/"}},
    {"uri-reference",
     {"http://example.com/a?b#c", "", "a/b/c", "../up", "/abs/path?q=1", "//host:8/p", "?q", "#f",
      "a@b/c:d", "mailto:a@b.co"},
     {"a b", "1a:b", "/%zz", "//h:8a/", "#a#b", "a/b c"}},
    {"json-pointer",
     {"", "/", "/a", "/a/b", "/a~0b", "/a~1b", "/0/1", "/ ", "//"},
     {"a", "/a~", "/a~2", "~0", "a/b"}},
    {"relative-json-pointer",
     {"0", "1#", "2/a", "10/a~1b", "0/"},
     {"", "#", "01", "-1", "1a", "1/~", "/a"}},
};

}  // namespace

TEST_CASE("json schema formats as patterns: known strings in and out, the checks agreeing") {
  for (const Known& k : kKnown) {
    const std::string f = k.format;
    CAPTURE(f);
    const auto s = format_schema(k.format);
    for (const std::string& v : k.in) {
      CAPTURE(v);
      CHECK(takes(*s, v));
      CHECK(format_ok(k.format, v));  // the check of this file agrees
    }
    for (const std::string& v : k.out) {
      CAPTURE(v);
      CHECK_FALSE(takes(*s, v));
      CHECK_FALSE(format_ok(k.format, v));
    }
  }
}

TEST_CASE("json schema formats as patterns: random walks finish, and what they finish is valid") {
  // Each step picks among the alphabet's bytes the automaton takes; where
  // the string may end, it ends one time in six. Every step must leave a
  // way to finish (no dead end), and every finished string must pass the
  // format's check above.
  const std::pair<const char*, std::string> alphabets[] = {
      {"email", "aZ09_%+-.@!"},
      {"hostname", "aZ09-._"},
      {"ipv4", "0123456789."},
      {"ipv6", "0129afAF:g."},
      {"duration", "PYMWDTHS019."},
      {"uri", "aZ09+.-:/?#@%Ff[]!$&'()*,;=~_ "},
      {"uri-reference", "aZ09+.-:/?#@%Ff!$&=~_ "},
      {"json-pointer", "/~01a "},
      {"relative-json-pointer", "0129#/~a"},
  };
  std::mt19937 rng(20261206);
  for (const auto& [format, alphabet] : alphabets) {
    const std::string f = format;
    CAPTURE(f);
    const auto s = format_schema(f);
    int finished = 0;
    for (int walk = 0; walk < 2000; ++walk) {
      JsonSchemaNfa g(*s);
      REQUIRE(g.feed(static_cast<uint8_t>('"')));
      std::string text;
      bool ended = false;
      for (int i = 0; i < 60 && !ended; ++i) {
        JsonSchemaNfa end = g;
        const bool can_end = end.feed(static_cast<uint8_t>('"')) && end.complete();
        std::string ok;
        for (char c : alphabet)
          if (g.accepts(std::string_view(&c, 1))) ok += c;
        // Where no byte of the alphabet goes on, the string must be able to end.
        REQUIRE_MESSAGE((can_end || !ok.empty()), "a dead end after \"" << text << "\"");
        if (can_end && (ok.empty() || rng() % 6 == 0)) {
          ended = true;
          break;
        }
        const char c = ok[rng() % ok.size()];
        REQUIRE(g.feed(static_cast<uint8_t>(c)));
        text += c;
      }
      if (!ended) continue;
      CAPTURE(text);
      CHECK(format_ok(f, text));
      ++finished;
    }
    MESSAGE(f << ": " << finished << " of 2000 walks finished a string");
    CHECK(finished > 200);
  }
}

TEST_CASE("json schema formats as patterns: lengths beside them, and refusals") {
  // minLength/maxLength are kept with the format (pydantic's HttpUrl:
  // 1..2083); a hostname's own limit (253) holds without a maxLength.
  const auto url = format_schema("uri", 1, 2083);
  CHECK(takes(*url, "https://example.com/a"));
  const auto short_host = format_schema("hostname", 3, 5);
  CHECK(takes(*short_host, "ab.c"));
  CHECK_FALSE(takes(*short_host, "ab"));
  CHECK_FALSE(takes(*short_host, "abc.de"));
  const auto host = format_schema("hostname");
  // 255 characters, each label 63.
  const std::string label(63, 'a');
  const std::string long_host = label + '.' + label + '.' + label + '.' + label;
  CHECK_FALSE(takes(*host, long_host));
  CHECK(takes(*host, long_host.substr(0, 253)));
  // A pattern beside one of them, and a format we do not know.
  auto both = compile_json_schema(std::string_view(
      R"({"type":"string","format":"email","pattern":"^a"})"));
  REQUIRE_FALSE(both.has_value());
  CHECK(both.error().message ==
        "json schema: 'pattern' beside 'format' at the top level is not supported");
  auto other = compile_json_schema(std::string_view(R"({"type":"string","format":"idn-email"})"));
  REQUIRE_FALSE(other.has_value());
  CHECK(other.error().message.find("'format' \"idn-email\" at the top level is not supported "
                                   "(date, time, date-time, uuid, email, hostname, ipv4, ipv6, "
                                   "duration, uri, uri-reference, json-pointer and "
                                   "relative-json-pointer are)") != std::string::npos);
}
