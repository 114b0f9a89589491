// The renderers: text carets, JSON and SARIF shapes.
#include "compiler/diag/render.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace jr2 {
namespace {

struct Fixture {
  SourceManager sm;
  Diagnostics diags;
  const SourceFile* file = sm.add("t.jr2", "", "event approve\n\tmachine m é {\n");
};

TEST(RenderText, CaretUnderTheRangeWithNotesAndFix) {
  Fixture f;
  // `approve` is bytes 6..13 of line 1.
  f.diags.emit(diag::UnknownName, SourceRange{f.file->id(), 6, 13}, "event", "approve", "x")
      .note(diag::NoteDeclaredHere, SourceRange{f.file->id(), 0, 5}, "event")
      .fix(SourceRange{f.file->id(), 6, 13}, "approved");
  std::ostringstream out;
  RenderText(f.diags, f.sm, out);
  EXPECT_EQ(out.str(),
            "t.jr2:1:7: error[E0100]: unknown event `approve`; x\n"
            "    1 | event approve\n"
            "      |       ^~~~~~~\n"
            "      |       approved\n"
            "t.jr2:1:1: note: `event` is declared here\n"
            "    1 | event approve\n"
            "      | ^~~~~\n"
            "1 error, 0 warnings\n");
}

TEST(RenderText, TabsStayTabsAndColumnsCountCodePoints) {
  Fixture f;
  // `{` on line 2: "\tmachine m é {" — byte offsets: line starts at 14; `{` at 14+13=27.
  const uint32_t brace = 14 + static_cast<uint32_t>(std::string("\tmachine m é ").size());
  f.diags.emit(diag::SyntaxSemicolon, SourceRange{f.file->id(), brace, brace + 1});
  std::ostringstream out;
  RenderText(f.diags, f.sm, out);
  EXPECT_EQ(out.str(),
            "t.jr2:2:14: error[E0001]: unexpected `;`: a line break ends a statement in jr2; "
            "remove the `;`\n"
            "    2 | \tmachine m é {\n"
            "      | \t            ^\n"
            "1 error, 0 warnings\n");
}

TEST(RenderText, WarningsAsErrors) {
  Fixture f;
  f.diags.setWarningsAsErrors(true);
  f.diags.emit(diag::StateNeverEntered, SourceRange{f.file->id(), 0, 5}, "never entered");
  EXPECT_EQ(f.diags.errorCount(), 1u);
  EXPECT_EQ(f.diags.warningCount(), 0u);
  std::ostringstream out;
  RenderText(f.diags, f.sm, out);
  EXPECT_NE(out.str().find("error[W0600]"), std::string::npos);
}

TEST(RenderJson, HasEveryField) {
  Fixture f;
  f.diags.emit(diag::UnknownName, SourceRange{f.file->id(), 6, 13}, "event", "approve", "fix")
      .note(diag::NoteDeclaredHere, SourceRange{f.file->id(), 0, 5}, "event")
      .fix(SourceRange{f.file->id(), 6, 13}, "approved");
  std::ostringstream out;
  RenderJson(f.diags, f.sm, out);
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["errors"], 1);
  EXPECT_EQ(doc["warnings"], 0);
  const auto& d = doc["diagnostics"][0];
  EXPECT_EQ(d["code"], "E0100");
  EXPECT_EQ(d["kind"], "UnknownName");
  EXPECT_EQ(d["severity"], "error");
  EXPECT_EQ(d["message"], "unknown event `approve`; fix");
  EXPECT_EQ(d["range"]["file"], "t.jr2");
  EXPECT_EQ(d["range"]["start"]["line"], 1);
  EXPECT_EQ(d["range"]["start"]["column"], 7);
  EXPECT_EQ(d["range"]["end"]["column"], 14);
  EXPECT_EQ(d["range"]["start"]["offset"], 6);
  EXPECT_EQ(d["notes"][0]["message"], "`event` is declared here");
  EXPECT_EQ(d["fixits"][0]["text"], "approved");
}

TEST(RenderSarif, IsSarif210WithRulesFixesAndRelatedLocations) {
  Fixture f;
  f.diags.emit(diag::UnknownName, SourceRange{f.file->id(), 6, 13}, "event", "approve", "fix")
      .note(diag::NoteDeclaredHere, SourceRange{f.file->id(), 0, 5}, "event")
      .fix(SourceRange{f.file->id(), 6, 13}, "approved");
  std::ostringstream out;
  RenderSarif(f.diags, f.sm, "9.9.9", out);
  const auto log = nlohmann::json::parse(out.str());
  EXPECT_EQ(log["version"], "2.1.0");
  EXPECT_TRUE(log.contains("$schema"));
  const auto& run = log["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "jr2c");
  EXPECT_EQ(run["tool"]["driver"]["version"], "9.9.9");
  const auto& rules = run["tool"]["driver"]["rules"];
  EXPECT_EQ(rules.size(), diag::AllCodes().size());
  const auto& r = run["results"][0];
  EXPECT_EQ(r["ruleId"], "E0100");
  EXPECT_EQ(rules[r["ruleIndex"].get<size_t>()]["id"], "E0100");
  EXPECT_EQ(r["level"], "error");
  const auto& region = r["locations"][0]["physicalLocation"]["region"];
  EXPECT_EQ(region["startLine"], 1);
  EXPECT_EQ(region["startColumn"], 7);
  EXPECT_EQ(region["endColumn"], 14);
  EXPECT_EQ(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "t.jr2");
  EXPECT_EQ(r["relatedLocations"][0]["message"]["text"], "`event` is declared here");
  EXPECT_EQ(r["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"],
            "approved");
}

TEST(Diagnostics, SortsByFileThenOffsetKeepingTies) {
  SourceManager sm;
  const SourceFile* a = sm.add("a.jr2", "", "xxxxxxxxxx");
  const SourceFile* b = sm.add("b.jr2", "", "xxxxxxxxxx");
  Diagnostics d;
  d.emit(diag::SyntaxSemicolon, SourceRange{b->id(), 1, 2});
  d.emit(diag::SyntaxSemicolon, SourceRange{a->id(), 5, 6});
  d.emit(diag::SyntaxSemicolon, SourceRange{a->id(), 2, 3});
  d.sortByLocation();
  ASSERT_EQ(d.all().size(), 3u);
  EXPECT_EQ(d.all()[0].range.begin, 2u);
  EXPECT_EQ(d.all()[1].range.begin, 5u);
  EXPECT_EQ(d.all()[2].range.file, b->id());
}

}  // namespace
}  // namespace jr2
