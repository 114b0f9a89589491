// `jr2c fmt` (compiler/fmt/fmt.h, docs/editors.md#jr2c-fmt): the layout rules on small cases, and
// as a property over every `.jr2` file of the repository and the fuzz corpus: idempotent, the
// same tokens, the same comments, the same diagnostics.
#include "compiler/fmt/fmt.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "compiler/driver/driver.h"

namespace jr2 {
namespace {

namespace fs = std::filesystem;

std::string Fmt(const std::string& text) {
  const layout::Formatted f = layout::Format(text);
  EXPECT_TRUE(f.ok) << f.why;
  return f.text;
}

TEST(Fmt, IndentsByBracketsAndNormalizesSpaces) {
  EXPECT_EQ(
      Fmt("machine m{\ninitial state a{\non go->b{x=x+1}\n}\n      final state b\n}\n"),
      "machine m {\n  initial state a {\n    on go -> b { x = x + 1 }\n  }\n  final state b\n}\n");
  EXPECT_EQ(Fmt("type T {\n  a :string,b:int\n}\n"), "type T {\n  a: string, b: int\n}\n");
  EXPECT_EQ(Fmt("x = f( a , b )[ 0 ]\n"), "x = f(a, b)[0]\n");
}

TEST(Fmt, KeepsWhatDependsOnItsPlaceAsWritten) {
  // A unary minus, a postfix `!`, an optional `?`, a type's `<`, a ternary's `:`.
  EXPECT_EQ(Fmt("x = -1 + y!\nv: list<string?> = []\nz = a ? b : c\n"),
            "x = -1 + y!\nv: list<string?> = []\nz = a ? b : c\n");
}

TEST(Fmt, OneBlankLineAtMostAndNoneAtTheEnds) {
  EXPECT_EQ(Fmt("\n\n\nevent a\n\n\n\nevent b   \n\n\n"), "event a\n\nevent b\n");
}

TEST(Fmt, CommentsStayWhereTheyWere) {
  const std::string in =
      "// head\n"
      "machine m {   // after code, as far as the author put it\n"
      "    /* a block\n"
      "       over lines */\n"
      "  initial state a {} /* inline */ // last\n"
      "        // own line, indented as the code\n"
      "}\n"
      "// tail\n";
  const std::string out = Fmt(in);
  EXPECT_EQ(out,
            "// head\n"
            "machine m {   // after code, as far as the author put it\n"
            "  /* a block\n"
            "       over lines */\n"
            "  initial state a {} /* inline */ // last\n"
            "  // own line, indented as the code\n"
            "}\n"
            "// tail\n");
  EXPECT_EQ(layout::Comments(in), layout::Comments(out));
}

TEST(Fmt, CrlfByteOrderMarkAndTabsGiveTheSameOutput) {
  const std::string lf = "machine m {\n  initial state a {}\n}\n";
  EXPECT_EQ(Fmt("\xEF\xBB\xBFmachine m {\r\n\tinitial state a {}\r\n}\r\n"), Fmt(lf));
  EXPECT_EQ(Fmt(lf), lf);
}

TEST(Fmt, ALongLineStaysLongAndTextBlocksStayAsWritten) {
  std::string longLine =
      "x = \"" + std::string(200, 'a') + "\" + \"" + std::string(50, 'b') + "\"\n";
  EXPECT_EQ(Fmt(longLine), longLine);
  const std::string block = "agent a {\n  instructions: \"\"\"\n      keep   this\n    \"\"\"\n}\n";
  EXPECT_EQ(Fmt(block), block);
}

TEST(Fmt, AContinuedExpressionIsIndentedTwoMore) {
  EXPECT_EQ(Fmt("x {\n  p: a\n+ b\n    + c\n}\n"), "x {\n  p: a\n    + b\n    + c\n}\n");
  EXPECT_EQ(Fmt("m(a: int,\n       b: int) -> T {\nvar c: int = 0\n}\n"),
            "m(a: int,\n  b: int) -> T {\n  var c: int = 0\n}\n");
}

TEST(Fmt, TextThatIsNotTokensIsRefused) {
  EXPECT_FALSE(layout::Format("machine m { @ }\n").ok);
  EXPECT_FALSE(layout::Format("x = \"open\n").ok);
}

TEST(FmtDiff, IsUnifiedWithContext) {
  const std::string d = layout::UnifiedDiff("f.jr2", "a\nb\nc\nd\n", "a\nB\nc\nd\n");
  EXPECT_EQ(d, "--- f.jr2\n+++ f.jr2 (formatted)\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n d\n");
  EXPECT_EQ(layout::UnifiedDiff("f", "same\n", "same\n"), "");
}

// The codes and messages `jr2c check` gives for `path`, without their places.
std::multiset<std::string> Diagnostics(const std::string& path) {
  std::ostringstream out, err;
  driver::Run({"check", "--diagnostics-format", "json", path}, out, err);
  std::multiset<std::string> got;
  const auto j = nlohmann::json::parse(out.str(), nullptr, false);
  if (!j.is_object() && !j.is_array()) return got;
  const auto& list = j.is_object() ? j.value("diagnostics", nlohmann::json::array()) : j;
  for (const auto& d : list) got.insert(d.value("code", "") + " " + d.value("message", ""));
  return got;
}

TEST(FmtProperty, EveryJr2FileOfTheRepositoryAndTheFuzzCorpus) {
  const fs::path root = JR2_SOURCE_DIR;
  std::vector<fs::path> files;
  for (const char* dir : {"samples", "stdlib", "golden", "tests", "docs", "bench"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const std::string p = e.path().string();
      if (!e.is_regular_file() || p.find("node_modules") != std::string::npos) continue;
      if (e.path().extension() == ".jr2" || p.find("fuzz/corpus/") != std::string::npos)
        files.push_back(e.path());
    }
  }
  ASSERT_GT(files.size(), 300u);
  const fs::path tmp = fs::temp_directory_path() / ("jr2-fmt-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  int formatted = 0, refused = 0, diagsCompared = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string text = buf.str();
    const layout::Formatted once = layout::Format(text);
    if (!once.ok) {
      ++refused;
      continue;
    }
    ++formatted;
    SCOPED_TRACE(f.string());
    EXPECT_TRUE(layout::SameTokens(text, once.text)) << "the same tokens";
    EXPECT_EQ(layout::Comments(text), layout::Comments(once.text)) << "every comment, as it was";
    const layout::Formatted twice = layout::Format(once.text);
    ASSERT_TRUE(twice.ok);
    EXPECT_EQ(twice.text, once.text) << "idempotent";
    // The same diagnostics (a file that imports another is checked where it is, so only those
    // that import nothing are compared from a copy).
    if (f.extension() == ".jr2" && text.find("import") == std::string::npos) {
      const fs::path a = tmp / f.filename();
      const fs::path b = tmp / ("formatted_" + f.filename().string());
      std::ofstream(a, std::ios::binary) << text;
      std::ofstream(b, std::ios::binary) << once.text;
      auto da = Diagnostics(a.string());
      auto db = Diagnostics(b.string());
      // A message may name its file's stem.
      std::multiset<std::string> dbFixed;
      for (std::string d : db) {
        const std::string from = "formatted_" + f.stem().string();
        for (size_t at = d.find(from); at != std::string::npos; at = d.find(from))
          d.replace(at, from.size(), f.stem().string());
        dbFixed.insert(d);
      }
      EXPECT_EQ(da, dbFixed) << "the same diagnostics";
      ++diagsCompared;
    }
  }
  fs::remove_all(tmp);
  std::cout << "fmt property: " << files.size() << " files, " << formatted << " formatted, "
            << refused << " refused (not tokens), " << diagsCompared
            << " with their diagnostics compared\n";
}

}  // namespace
}  // namespace jr2
