#include "cli/cli.h"

#include <iostream>
#include <string>

namespace {

int failures = 0;

void check_eq(const std::string& got, const std::string& want, const char* what) {
  if (got != want) {
    std::cerr << "FAIL: " << what << ":\n--- got\n" << got << "--- want\n" << want << "---\n";
    ++failures;
  }
}

}  // namespace

int main() {
  check_eq(cli::format_report("Release Notes: v2!", "fixed the  build\nmatrix",
                              " Build.Example.org:8443 "),
           "report: release-notes-v2\nwords: 4\nserver: build.example.org:8443\n",
           "report with a valid endpoint");
  check_eq(cli::format_report("Empty", "", "nowhere"),
           "report: empty\nwords: 0\nserver: invalid (nowhere)\n",
           "report with an invalid endpoint");

  if (failures != 0) {
    std::cerr << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "cli: all checks passed\n";
  return 0;
}
