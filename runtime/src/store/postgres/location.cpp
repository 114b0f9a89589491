// A PostgreSQL store's location (docs/scaling.md#pointing-a-runner-at-postgresql): told apart
// from a SQLite path, and named in messages without its password.
#include "store/postgres/location.h"

#include <cctype>
#include <string>
#include <vector>

#include "jr2/postgres_store.h"

namespace jr2rt {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool IsUrl(const std::string& location) {
  return StartsWith(location, "postgresql://") || StartsWith(location, "postgres://");
}

bool IsSecretKey(const std::string& key) { return key == "password" || key == "sslpassword"; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecoded(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A keyword string's pairs as libpq reads them (`key = value`, a value quoted with '…', a backslash
// escaping the next character); false when it is not one.
struct Pair {
  std::string key;
  std::string raw;    // as written
  std::string value;  // unquoted
};
bool Pairs(const std::string& s, std::vector<Pair>& out) {
  size_t i = 0;
  auto spaces = [&] {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  };
  for (;;) {
    spaces();
    if (i == s.size()) return true;
    Pair p;
    while (i < s.size() && s[i] != '=' && !std::isspace(static_cast<unsigned char>(s[i])))
      p.key += s[i++];
    spaces();
    if (i == s.size() || s[i] != '=' || p.key.empty()) return false;
    ++i;
    spaces();
    const size_t start = i;
    if (i < s.size() && s[i] == '\'') {
      ++i;
      bool closed = false;
      while (i < s.size()) {
        if (s[i] == '\\' && i + 1 < s.size()) {
          p.value += s[i + 1];
          i += 2;
        } else if (s[i] == '\'') {
          ++i;
          closed = true;
          break;
        } else {
          p.value += s[i++];
        }
      }
      if (!closed) return false;
    } else {
      while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        p.value += s[i++];
      }
    }
    p.raw = s.substr(start, i - start);
    out.push_back(std::move(p));
  }
}

// The parts of a URL: `scheme://[user[:password]@]hosts[/dbname][?params]`, split where libpq
// splits it (the credentials end at the first `@` before any `/`).
struct Url {
  std::string scheme;    // "postgresql://"
  std::string user;      // as written, "" for none
  std::string password;  // as written
  bool credentials = false;
  std::string rest;   // hosts and dbname
  std::string query;  // after `?`, "" for none
  bool hasQuery = false;
};
Url SplitUrl(const std::string& location) {
  Url u;
  const size_t afterScheme = location.find("://") + 3;
  u.scheme = location.substr(0, afterScheme);
  size_t at = afterScheme;
  while (at < location.size() && location[at] != '@' && location[at] != '/') ++at;
  size_t hosts = afterScheme;
  if (at < location.size() && location[at] == '@') {
    u.credentials = true;
    const std::string info = location.substr(afterScheme, at - afterScheme);
    const size_t colon = info.find(':');
    u.user = info.substr(0, colon);
    if (colon != std::string::npos) u.password = info.substr(colon + 1);
    hosts = at + 1;
  }
  const size_t q = location.find('?', hosts);
  u.rest = location.substr(hosts, q == std::string::npos ? std::string::npos : q - hosts);
  if (q != std::string::npos) {
    u.hasQuery = true;
    u.query = location.substr(q + 1);
  }
  return u;
}

}  // namespace

bool IsPostgresLocation(const std::string& location) {
  if (IsUrl(location)) return true;
  static const char* const kKeys[] = {"host", "hostaddr", "port",   "dbname",
                                      "user", "password", "service"};
  for (const char* key : kKeys) {
    if (!StartsWith(location, key)) continue;
    size_t i = std::string(key).size();
    while (i < location.size() && (location[i] == ' ' || location[i] == '\t')) ++i;
    if (i < location.size() && location[i] == '=') return true;
  }
  return false;
}

std::string PostgresLocationName(const std::string& location) {
  if (IsUrl(location)) {
    const Url u = SplitUrl(location);
    std::string out = u.scheme;
    if (u.credentials) out += u.user + "@";
    out += u.rest;
    if (u.hasQuery) {
      std::string kept;
      size_t start = 0;
      while (start <= u.query.size()) {
        size_t end = u.query.find('&', start);
        if (end == std::string::npos) end = u.query.size();
        const std::string param = u.query.substr(start, end - start);
        const std::string key = PercentDecoded(param.substr(0, param.find('=')));
        if (!param.empty() && !IsSecretKey(key)) kept += (kept.empty() ? "" : "&") + param;
        start = end + 1;
      }
      if (!kept.empty()) out += "?" + kept;
    }
    return out;
  }
  std::vector<Pair> pairs;
  if (!Pairs(location, pairs)) return "a PostgreSQL connection string libpq cannot read";
  std::string out;
  for (const Pair& p : pairs) {
    if (IsSecretKey(p.key)) continue;
    out += (out.empty() ? "" : " ") + p.key + "=" + p.raw;
  }
  return out;
}

namespace pg {

std::vector<std::string> LocationSecrets(const std::string& location) {
  std::vector<std::string> out;
  auto keep = [&](const std::string& s) {
    if (!s.empty()) out.push_back(s);
    const std::string decoded = PercentDecoded(s);
    if (!decoded.empty() && decoded != s) out.push_back(decoded);
  };
  if (IsUrl(location)) {
    const Url u = SplitUrl(location);
    keep(u.password);
    size_t start = 0;
    while (u.hasQuery && start <= u.query.size()) {
      size_t end = u.query.find('&', start);
      if (end == std::string::npos) end = u.query.size();
      const std::string param = u.query.substr(start, end - start);
      const size_t eq = param.find('=');
      if (eq != std::string::npos && IsSecretKey(PercentDecoded(param.substr(0, eq))))
        keep(param.substr(eq + 1));
      start = end + 1;
    }
    return out;
  }
  std::vector<Pair> pairs;
  Pairs(location, pairs);
  for (const Pair& p : pairs) {
    if (IsSecretKey(p.key)) {
      keep(p.raw);
      keep(p.value);
    }
  }
  return out;
}

}  // namespace pg
}  // namespace jr2rt
