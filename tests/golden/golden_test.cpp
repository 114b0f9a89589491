// Golden diagnostics. Each case is a `.jr2` file under golden/diagnostics/ that carries its own
// expectations at its end:
//
//   // ARGS: --Werror                       (optional, anywhere: extra jr2c arguments)
//   // COMMAND: compile                     (optional, anywhere: `check` when not given)
//   // EXPECT: E0405                        (optional: the output must show this code)
//   // EXPECT-NOT: E0405                    (optional: the output must not show this code)
//   // CHECK:EXIT: 1
//   // CHECK:STDERR: case.jr2:3:5: error[E0100]: unknown event `aprove`; did you mean `approve`?
//   // CHECK:STDERR:     3 |     on aprove -> decided
//   // CHECK:STDERR:       |        ^~~~~~
//
// The case runs as `jr2c check [ARGS] case.jr2` from the case's folder, and stderr must match
// the STDERR lines exactly (positions, carets, messages). A case for what only `compile` reports
// runs as `jr2c compile [ARGS] case.jr2 -o TMP`, TMP a new temporary folder, removed after. A
// `.jr2` file with no `// CHECK:` line is a support file (an import target), not a case.
//
// A case whose input must not be followed by anything (an unterminated comment would swallow its
// own CHECK lines) says `// CHECK:SIDECAR` instead, and keeps its CHECK lines in
// `case.jr2.expected`.
//
// JR2_AUTOUPDATE=1 rewrites every case's CHECK lines from what jr2c prints now. Review the diff.
//
// The coverage test fails when a diagnostic kind in diagnostic_kinds.def has no case, unless it
// is on the allow-list below with the issue that will cover it.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "compiler/diag/diagnostics.h"
#include "compiler/driver/driver.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kCheckStderr = "// CHECK:STDERR:";
constexpr const char* kCheckExit = "// CHECK:EXIT:";
constexpr const char* kArgs = "// ARGS:";
constexpr const char* kCommand = "// COMMAND:";
constexpr const char* kSidecar = "// CHECK:SIDECAR";
constexpr const char* kExpect = "// EXPECT:";
constexpr const char* kExpectNot = "// EXPECT-NOT:";

// Kinds with no golden case yet, each with the issue that will add it. Keep this list short.
const std::map<std::string, std::string> kAllowList = {};

struct Case {
  fs::path path;
  bool sidecar = false;
  std::vector<std::string> body;  // the file without its CHECK lines
  std::vector<std::string> args;
  std::string command = "check";            // or `compile`
  std::vector<std::string> expectCodes;     // EXPECT: the intent of the case, held by hand
  std::vector<std::string> expectNotCodes;  // EXPECT-NOT: a near miss that must stay quiet
  std::vector<std::string> expectedStderr;
  int expectedExit = -1;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string Rest(const std::string& line, const char* prefix) {
  std::string rest = line.substr(std::string(prefix).size());
  if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
  return rest;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

fs::path SidecarOf(const fs::path& path) { return fs::path(path.string() + ".expected"); }

std::optional<Case> ReadCase(const fs::path& path) {
  Case c;
  c.path = path;
  bool isCase = false;
  std::vector<std::string> lines = Lines(ReadFile(path));
  for (const std::string& line : lines) {
    if (StartsWith(line, kSidecar)) c.sidecar = true;
    auto words = [&](const char* prefix, std::vector<std::string>& into) {
      std::istringstream in(Rest(line, prefix));
      std::string w;
      while (in >> w) into.push_back(w);
    };
    if (StartsWith(line, kExpect)) words(kExpect, c.expectCodes);
    if (StartsWith(line, kExpectNot)) words(kExpectNot, c.expectNotCodes);
  }
  if (c.sidecar) {
    c.body = lines;
    lines = Lines(ReadFile(SidecarOf(path)));
    isCase = true;
  }
  for (const std::string& line : lines) {
    if (StartsWith(line, kCheckStderr)) {
      c.expectedStderr.push_back(Rest(line, kCheckStderr));
      isCase = true;
    } else if (StartsWith(line, kCheckExit)) {
      c.expectedExit = std::stoi(Rest(line, kCheckExit));
      isCase = true;
    } else if (!c.sidecar) {
      if (StartsWith(line, kArgs)) {
        std::istringstream words(Rest(line, kArgs));
        std::string w;
        while (words >> w) c.args.push_back(w);
      }
      if (StartsWith(line, kCommand)) c.command = Rest(line, kCommand);
      c.body.push_back(line);
    }
  }
  if (!isCase) return std::nullopt;
  return c;
}

std::vector<fs::path> CasePaths() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::recursive_directory_iterator(JR2_GOLDEN_DIR)) {
    if (entry.is_regular_file() && entry.path().extension() == ".jr2")
      paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<fs::path> cases;
  for (const auto& p : paths) {
    if (ReadCase(p)) cases.push_back(p);
  }
  return cases;
}

struct Result {
  int exit;
  std::string stderrText;
};

Result RunCase(const Case& c) {
  const fs::path cwd = fs::current_path();
  fs::current_path(c.path.parent_path());
  std::vector<std::string> args = {c.command};
  args.insert(args.end(), c.args.begin(), c.args.end());
  args.push_back(c.path.filename().string());
  std::string outDir;  // compile: where it writes, never the case's folder
  if (c.command == "compile") {
    outDir = (fs::temp_directory_path() / "jr2-golden-XXXXXX").string();
    if (mkdtemp(outDir.data()) == nullptr) outDir.clear();
    args.emplace_back("-o");
    args.push_back(outDir);
  }
  std::ostringstream out, err;
  const int exit = jr2::driver::Run(args, out, err);
  fs::current_path(cwd);
  if (!outDir.empty()) fs::remove_all(outDir);
  return {exit, err.str()};
}

void Rewrite(const Case& c, const Result& r) {
  if (c.sidecar) {
    std::ofstream out(SidecarOf(c.path), std::ios::binary | std::ios::trunc);
    out << kCheckExit << " " << r.exit << "\n";
    for (const std::string& line : Lines(r.stderrText)) {
      out << kCheckStderr << (line.empty() ? "" : " ") << line << "\n";
    }
    return;
  }
  std::vector<std::string> body = c.body;
  while (!body.empty() && body.back().empty()) body.pop_back();
  std::ofstream out(c.path, std::ios::binary | std::ios::trunc);
  for (const std::string& line : body) out << line << "\n";
  out << "\n" << kCheckExit << " " << r.exit << "\n";
  for (const std::string& line : Lines(r.stderrText)) {
    out << kCheckStderr << (line.empty() ? "" : " ") << line << "\n";
  }
}

bool AutoUpdate() {
  const char* v = std::getenv("JR2_AUTOUPDATE");
  return v != nullptr && std::string(v) == "1";
}

class GoldenTest : public testing::TestWithParam<fs::path> {};

TEST_P(GoldenTest, MatchesExpectations) {
  const auto c = ReadCase(GetParam());
  ASSERT_TRUE(c.has_value());
  const Result r = RunCase(*c);
  // The intent of a case is checked even while autoupdating: a rewrite must not bless output
  // that lost the code the case is about.
  for (const std::string& code : c->expectCodes) {
    EXPECT_NE(r.stderrText.find("[" + code + "]"), std::string::npos)
        << GetParam() << ": expected " << code << " in:\n"
        << r.stderrText;
  }
  for (const std::string& code : c->expectNotCodes) {
    EXPECT_EQ(r.stderrText.find("[" + code + "]"), std::string::npos)
        << GetParam() << ": " << code << " must not fire (a near miss) in:\n"
        << r.stderrText;
  }
  if (AutoUpdate()) {
    Rewrite(*c, r);
    return;
  }
  ASSERT_NE(c->expectedExit, -1) << GetParam() << " has no `// CHECK:EXIT:` line";
  EXPECT_EQ(r.exit, c->expectedExit) << GetParam();
  const std::vector<std::string> actual = Lines(r.stderrText);
  std::ostringstream want;
  for (const auto& l : c->expectedStderr) want << l << "\n";
  std::ostringstream got;
  for (const auto& l : actual) got << l << "\n";
  EXPECT_EQ(got.str(), want.str())
      << GetParam() << ": stderr differs (run with JR2_AUTOUPDATE=1 to accept the new output)";
}

std::string CaseName(const testing::TestParamInfo<fs::path>& info) {
  std::string name = fs::relative(info.param, JR2_GOLDEN_DIR).replace_extension().string();
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Diagnostics, GoldenTest, testing::ValuesIn(CasePaths()), CaseName);

// A registered fmt format as a regex: everything escaped, each `{N}` argument read as "anything",
// `{{`/`}}` as braces.
std::string FormatRegex(const std::string& format) {
  std::string re;
  for (size_t i = 0; i < format.size(); ++i) {
    const char ch = format[i];
    if (ch == '{' && i + 1 < format.size() && format[i + 1] == '{') {
      re += "\\{";
      ++i;
    } else if (ch == '}' && i + 1 < format.size() && format[i + 1] == '}') {
      re += "\\}";
      ++i;
    } else if (ch == '{') {
      i = format.find('}', i);
      re += ".*";
    } else if (std::string("\\^$.|?*+()[]{}").find(ch) != std::string::npos) {
      re += '\\';
      re += ch;
    } else {
      re += ch;
    }
  }
  return re;
}

// Every diagnostic kind has a golden case that shows it, or an allow-list entry.
TEST(GoldenCoverage, EveryKindHasACase) {
  std::set<std::string> seenMessages;
  std::map<std::string, std::set<std::string>> codeToCases;
  std::vector<std::string> all;
  for (const auto& path : CasePaths()) {
    const auto c = ReadCase(path);
    for (const auto& l : c->expectedStderr) all.push_back(l);
  }
  // A kind is covered when some expected line has its code and matches its format (each `{N}`
  // argument read as "anything").
  std::vector<std::string> missing;
  for (const auto kind : jr2::diag::AllKinds()) {
    const auto& info = jr2::diag::Info(kind);
    const std::string re = FormatRegex(info.format);
    const std::regex pattern(std::string(".*(error|warning)\\[") + info.code + "\\]: " + re + "$");
    const bool covered = std::any_of(
        all.begin(), all.end(), [&](const std::string& l) { return std::regex_match(l, pattern); });
    const bool allowed = kAllowList.count(info.name) != 0;
    if (covered && allowed) {
      ADD_FAILURE() << info.name << " has a golden case now; remove it from the allow-list";
    }
    if (!covered && !allowed) missing.push_back(std::string(info.name) + " (" + info.code + ")");
  }
  std::string list;
  for (const auto& m : missing) list += "\n  " + m;
  EXPECT_TRUE(missing.empty()) << "diagnostic kinds with no golden case:" << list;
}

// Notes no golden case can show, each with the test that shows it instead. A golden case is a
// `.jr2` file and its arguments: a note that needs a store is shown by an end-to-end test.
const std::map<std::string, std::string> kNoteShownElsewhere = {
    {"{0} of {1} waiting runs in the store {2}",
     "`jr2c diff --store` counts a store's runs: tests/e2e/diff_store_test.sh"},
};

// Every registered note (note_kinds.def) is shown by some golden case, so its wording is seen
// where a person reads it.
TEST(GoldenCoverage, EveryNoteKindHasACase) {
  std::vector<std::string> all;
  for (const auto& path : CasePaths()) {
    const auto c = ReadCase(path);
    for (const auto& l : c->expectedStderr) all.push_back(l);
  }
  std::vector<std::string> missing;
  for (size_t k = 0; k < static_cast<size_t>(jr2::diag::NoteKind::kCount); ++k) {
    const char* format = jr2::diag::NoteFormat(static_cast<jr2::diag::NoteKind>(k));
    if (kNoteShownElsewhere.count(format) != 0) continue;
    const std::regex pattern(".*note: " + FormatRegex(format) + "$");
    if (!std::any_of(all.begin(), all.end(),
                     [&](const std::string& l) { return std::regex_match(l, pattern); }))
      missing.emplace_back(format);
  }
  std::string list;
  for (const auto& m : missing) list += "\n  " + m;
  EXPECT_TRUE(missing.empty()) << "notes no golden case shows:" << list;
}

// The allow-list names only kinds that exist.
TEST(GoldenCoverage, AllowListNamesRealKinds) {
  std::set<std::string> names;
  for (const auto kind : jr2::diag::AllKinds()) names.insert(jr2::diag::Info(kind).name);
  for (const auto& [name, issue] : kAllowList) EXPECT_TRUE(names.count(name)) << name;
}

// Every code has a `jr2c explain` text.
TEST(GoldenCoverage, EveryCodeIsExplained) {
  for (const std::string& code : jr2::diag::AllCodes()) {
    EXPECT_FALSE(jr2::Explanation(code).empty()) << code << " has no explanation";
  }
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
