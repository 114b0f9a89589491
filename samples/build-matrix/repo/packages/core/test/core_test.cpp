#include "core/core.h"

#include <iostream>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::cerr << "FAIL: " << what << '\n';
    ++failures;
  }
}

void check_eq(const std::string& got, const std::string& want, const char* what) {
  if (got != want) {
    std::cerr << "FAIL: " << what << ": got \"" << got << "\", want \"" << want << "\"\n";
    ++failures;
  }
}

}  // namespace

int main() {
  check_eq(core::trim("  hello world \t\n"), "hello world", "trim both ends");
  check_eq(core::trim(""), "", "trim empty");
  check_eq(core::trim("   "), "", "trim blank");

  check(core::split("a,,b", ',') == std::vector<std::string>{"a", "", "b"},
        "split keeps empty parts");
  check(core::split("", ',') == std::vector<std::string>{""}, "split empty");
  check(core::split("host:80", ':') == std::vector<std::string>{"host", "80"}, "split on colon");

  check(core::split_words("  one two\tthree\n") == std::vector<std::string>{"one", "two", "three"},
        "split_words");
  check(core::split_words(" \t ").empty(), "split_words blank");

  check_eq(core::to_lower("Hello, WORLD"), "hello, world", "to_lower");

  check(core::is_digits("8080"), "is_digits 8080");
  check(!core::is_digits(""), "is_digits empty");
  check(!core::is_digits("80a"), "is_digits 80a");

  if (failures != 0) {
    std::cerr << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "core: all checks passed\n";
  return 0;
}
