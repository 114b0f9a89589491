#include "plugins/plugins.h"

#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::cerr << "FAIL: " << what << '\n';
    ++failures;
  }
}

}  // namespace

int main() {
  plugins::Registry registry;
  check(registry.add("Shout", [](std::string_view s) { return std::string(s) + "!"; }),
        "add shout");
  check(registry.add(" echo ", [](std::string_view s) { return std::string(s); }), "add echo");
  check(!registry.add("SHOUT", [](std::string_view s) { return std::string(s); }),
        "duplicate name refused");
  check(!registry.add("   ", [](std::string_view s) { return std::string(s); }),
        "blank name refused");
  check(!registry.add("empty", plugins::Callback{}), "empty callback refused");

  check(registry.names() == std::vector<std::string>{"echo", "shout"},
        "names sorted and normalized");

  const auto shouted = registry.run("  shout", "hi");
  check(shouted && *shouted == "hi!", "run shout");
  check(!registry.run("missing", "hi"), "run missing plugin");

  check(registry.remove("ECHO"), "remove echo");
  check(!registry.remove("echo"), "remove twice");
  check(registry.names() == std::vector<std::string>{"shout"}, "names after remove");

  if (failures != 0) {
    std::cerr << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "plugins: all checks passed\n";
  return 0;
}
