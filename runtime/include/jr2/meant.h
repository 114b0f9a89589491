// What a person meant: the name closest to a typo ("did you mean …?") and the duration literal
// meant by a unit written out (`5min`, `1 minute`). One rule each, for the compiler's
// diagnostics (compiler/diag/suggest.h) and the runner's refusals (json_value.h, runner.cpp)
// alike: header-only and free of both, so that the two say the same about the same mistake.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace jr2::meant {

// The candidate closest to `word` by the optimal string alignment distance (Levenshtein with
// adjacent transpositions: `titel` is one step from `title`), when it is close enough to be a
// typo: at most a third of the word's letters (at least one, at most two); "" otherwise.
inline std::string Name(const std::string& word, const std::vector<std::string>& candidates) {
  auto distance = [](const std::string& a, const std::string& b) {
    const size_t n = a.size(), m = b.size();
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
    for (size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (size_t k = 0; k <= m; ++k) d[0][k] = k;
    for (size_t i = 1; i <= n; ++i) {
      for (size_t k = 1; k <= m; ++k) {
        const size_t cost = a[i - 1] == b[k - 1] ? 0 : 1;
        d[i][k] = std::min({d[i - 1][k] + 1, d[i][k - 1] + 1, d[i - 1][k - 1] + cost});
        if (i > 1 && k > 1 && a[i - 1] == b[k - 2] && a[i - 2] == b[k - 1])
          d[i][k] = std::min(d[i][k], d[i - 2][k - 2] + 1);
      }
    }
    return d[n][m];
  };
  const size_t limit = std::min<size_t>(2, std::max<size_t>(1, word.size() / 3));
  std::string best;
  size_t bestDistance = limit + 1;
  for (const std::string& c : candidates) {
    if (c == word) continue;
    // Lengths that differ by more than the limit cannot be close (and long words cost nothing).
    const size_t gap = c.size() > word.size() ? c.size() - word.size() : word.size() - c.size();
    if (gap > limit) continue;
    const size_t d = distance(word, c);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

// The milliseconds of one of a duration literal's units: `ms`, `s`, `m`, `h`, `d`, the only
// ones `.jr2` (LANGUAGE.md) and the runner's CLI take; 0 for any other word.
inline long long UnitMillis(const std::string& unit) {
  static const std::pair<const char*, long long> kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
  for (const auto& [name, ms] : kUnits) {
    if (unit == name) return ms;
  }
  return 0;
}

// A duration as a literal spells it, in the largest of those units that divides it: `30s`,
// `90m`, `1h` (`0ms` for none). One spelling for `jr2c graph`, `jr2c diff` and the runtime's
// refusals.
inline std::string DurationLiteral(long long ms) {
  static const std::pair<const char*, long long> kUnits[] = {
      {"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1000}};
  for (const auto& [name, unit] : kUnits) {
    if (ms != 0 && ms % unit == 0) return std::to_string(ms / unit) + name;
  }
  return std::to_string(ms) + "ms";
}

// The duration literal a person meant by `count` and a spelled-out unit (`5` and `min`, `1` and
// `minute`, `2` and `weeks`): `5m`, `1m`, `14d`; "" when `unit` names no unit of time or `count`
// is not a whole number of at most 9 digits. `.jr2` writes a duration as an integer followed by
// `ms`, `s`, `m`, `h` or `d` (LANGUAGE.md), and nothing else; so does the runner's CLI.
inline std::string Duration(const std::string& count, const std::string& unit) {
  if (count.empty() || count.size() > 9 ||
      !std::all_of(count.begin(), count.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return {};
  std::string u;
  for (char c : unit) u += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  struct Word {
    const char* word;
    const char* suffix;
    long long times;
  };
  static const Word kWords[] = {
      {"ms", "ms", 1},
      {"msec", "ms", 1},
      {"msecs", "ms", 1},
      {"millisecond", "ms", 1},
      {"milliseconds", "ms", 1},
      {"s", "s", 1},
      {"sec", "s", 1},
      {"secs", "s", 1},
      {"second", "s", 1},
      {"seconds", "s", 1},
      {"m", "m", 1},
      {"min", "m", 1},
      {"mins", "m", 1},
      {"minute", "m", 1},
      {"minutes", "m", 1},
      {"h", "h", 1},
      {"hr", "h", 1},
      {"hrs", "h", 1},
      {"hour", "h", 1},
      {"hours", "h", 1},
      {"d", "d", 1},
      {"day", "d", 1},
      {"days", "d", 1},
      {"w", "d", 7},
      {"wk", "d", 7},
      {"week", "d", 7},
      {"weeks", "d", 7},
  };
  for (const Word& w : kWords) {
    if (u == w.word) return std::to_string(std::stoll(count) * w.times) + w.suffix;
  }
  return {};
}

}  // namespace jr2::meant
