// The examples of `jr2c explain` are code, and are checked as code (#13, as rustc's error index
// does): for each code of explanations.def, its "Example:" must be refused with that code, and its
// "Fixed:" must check with no error and no warning. An example that imports another file, or is
// a command line, is skipped here (the test reads no file): golden cases cover E0102–E0104 and
// E0106. A `jr2c diff` code (D07xx) has an "Old:" too: OLD to "Example:" must give the code, OLD
// to "Fixed:" nothing, each version checking clean.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/diff/diff.h"
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

// `jr2c diff`: both versions must check clean; what Compare reports from one to the other.
std::vector<Diagnostic> Compare(const std::string& before, const std::string& after) {
  SourceManager sm;
  Diagnostics diags;
  sema::LoadResult a = sema::LoadText(sm, "old.jr2", before, diags, false);
  sema::LoadResult b = sema::LoadText(sm, "example.jr2", after, diags, false);
  const ir::Program ac = driver::Analyze(a.program, diags);
  const ir::Program bc = driver::Analyze(b.program, diags);
  if (!diags.all().empty()) return diags.all();  // a version that does not check: said as it is
  Diagnostics changes;
  diff::Compare({a.program, ac}, {b.program, bc}, changes);
  return changes.all();
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
    const std::string old = Snippet(text, "Old:");
    if (!old.empty()) {
      // A `jr2c diff` code: OLD to the example gives it; OLD to the fix gives nothing.
      const auto changes = Compare(old, example);
      bool found = false;
      for (const auto& d : changes) found = found || d.code() == std::string(e.code);
      EXPECT_TRUE(found) << e.code << ": its example gives " << Codes(changes) << "\n" << example;
      const auto none = Compare(old, fixed);
      EXPECT_TRUE(none.empty()) << e.code << ": its fix gives " << Codes(none) << "\n" << fixed;
      ++checked;
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
