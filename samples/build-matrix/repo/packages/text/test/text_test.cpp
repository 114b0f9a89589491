#include "text/text.h"

#include <iostream>
#include <string>

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
  check(text::word_count("") == 0, "word_count empty");
  check(text::word_count("  one  two\tthree\n") == 3, "word_count three words");

  check_eq(text::slugify("  Hello, World! "), "hello-world", "slugify punctuation");
  check_eq(text::slugify("Build Matrix 2"), "build-matrix-2", "slugify digits");
  check_eq(text::slugify("--a--b--"), "a-b", "slugify dashes");
  check_eq(text::slugify("!!!"), "", "slugify nothing left");

  if (failures != 0) {
    std::cerr << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "text: all checks passed\n";
  return 0;
}
