// The examples of `jr2c explain` are code, and are checked as code (#13, as rustc's error index
// does): for each code of explanations.def, its "Example:" must be refused with that code, and its
// "Fixed:" must check with no error and no warning. An example that imports another file, or is
// a command line, is skipped here (the test reads no file): golden cases cover E0102–E0104 and
// E0106.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/driver.h"
#include "compiler/sema/program.h"

namespace jr2 {
namespace {

struct Explained {
  const char* code;
  const char* text;
};

#define JR2_EXPLAIN(Code, Text) {#Code, Text},
const Explained kExplained[] = {
#include "compiler/diag/explanations.def"
};
#undef JR2_EXPLAIN

// The snippet after `marker` (a line of its own), its two-space indent taken off, up to the next
// line that is not indented (or the end).
std::string Snippet(const std::string& text, const std::string& marker) {
  const size_t at = text.find("\n" + marker + "\n");
  if (at == std::string::npos) return {};
  std::istringstream in(text.substr(at + marker.size() + 2));
  std::string line, out;
  while (std::getline(in, line)) {
    if (!line.empty() && line.rfind("  ", 0) != 0) break;
    out += (line.size() >= 2 ? line.substr(2) : line) + "\n";
  }
  return out;
}

std::vector<Diagnostic> Check(const std::string& text) {
  SourceManager sm;
  Diagnostics diags;
  sema::LoadResult loaded = sema::LoadText(sm, "example.jr2", text, diags, false);
  driver::Analyze(loaded.program, diags);
  return diags.all();
}

std::string Codes(const std::vector<Diagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) out += std::string(out.empty() ? "" : ", ") + d.code() + " " + d.message;
  return out.empty() ? "none" : out;
}

TEST(Explanations, EachExampleHasItsCodeAndEachFixChecksClean) {
  int checked = 0, skipped = 0;
  for (const Explained& e : kExplained) {
    const std::string text = e.text;
    const std::string example = Snippet(text, "Example:");
    const std::string fixed = Snippet(text, "Fixed:");
    ASSERT_FALSE(example.empty()) << e.code << " has no Example:";
    ASSERT_FALSE(fixed.empty()) << e.code << " has no Fixed:";
    // An import reads another file; a `$ jr2c …` line is a command line (E0106), not `.jr2`.
    if (example.find("import ") != std::string::npos || example.rfind("$ ", 0) == 0) {
      ++skipped;
      continue;
    }
    const auto before = Check(example);
    bool found = false;
    for (const auto& d : before) found = found || d.code() == std::string(e.code);
    EXPECT_TRUE(found) << e.code << ": its example gives " << Codes(before) << "\n" << example;
    const auto after = Check(fixed);
    EXPECT_TRUE(after.empty()) << e.code << ": its fix gives " << Codes(after) << "\n" << fixed;
    ++checked;
  }
  std::cout << "[ explain ] " << checked << " codes' examples and fixes checked, " << skipped
            << " that import a file or are a command line skipped\n";
  EXPECT_GE(checked, 35);
}

}  // namespace
}  // namespace jr2
