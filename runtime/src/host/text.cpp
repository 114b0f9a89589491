// The host's small helpers for a person and a front (jr2/host.h): a wait as words, a local
// time, the working directory.
#include <unistd.h>

#include <cstdlib>
#include <ctime>

#include "jr2/host.h"

namespace jr2rt {

std::string CurrentDirectory() {
  std::string home = ".";
  if (char* cwd = getcwd(nullptr, 0)) {
    home = cwd;
    std::free(cwd);
  }
  return home;
}

std::string DurationText(int64_t ms) {
  if (ms < 1000) return std::to_string(ms) + " ms";
  const int64_t s = (ms + 500) / 1000;  // to the nearest second: 3,599.9 s reads "1 h"
  auto two = [](int64_t big, const char* bigUnit, int64_t small, const char* smallUnit) {
    std::string out = std::to_string(big) + " " + bigUnit;
    if (small != 0) out += " " + std::to_string(small) + " " + smallUnit;
    return out;
  };
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return two(s / 60, "min", s % 60, "s");
  if (s < 86400) return two(s / 3600, "h", s % 3600 / 60, "min");
  return two(s / 86400, "d", s % 86400 / 3600, "h");
}

std::string LocalTime(int64_t ms) {
  const auto t = static_cast<std::time_t>(ms / 1000);
  std::tm local{};
  localtime_r(&t, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

}  // namespace jr2rt
