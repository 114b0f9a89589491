#include "compiler/diag/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace jr2 {
namespace {

const char* SeverityWord(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kNote:
      return "note";
  }
  return "error";
}

size_t CodePoints(std::string_view s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// A source line made safe to print: each byte that is not part of valid UTF-8, and each control
// character but a tab, becomes one `?`. `index[i]` is where byte i of the line went.
struct PrintableLine {
  std::string text;
  std::vector<uint32_t> index;
};

PrintableLine Printable(std::string_view line) {
  PrintableLine out;
  out.index.resize(line.size() + 1);
  size_t i = 0;
  while (i < line.size()) {
    const auto c = static_cast<unsigned char>(line[i]);
    size_t len = c < 0x80             ? 1
                 : (c & 0xE0) == 0xC0 ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 0;
    bool ok = len > 0 && i + len <= line.size();
    for (size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(line[i + k]) & 0xC0) == 0x80;
    if (ok && len == 1 && c < 0x20 && c != '\t') ok = false;
    if (!ok) len = 1;
    for (size_t k = 0; k < len; ++k) out.index[i + k] = static_cast<uint32_t>(out.text.size());
    if (ok) {
      out.text.append(line.substr(i, len));
    } else {
      out.text += '?';
    }
    i += len;
  }
  out.index[line.size()] = static_cast<uint32_t>(out.text.size());
  return out;
}

// Prints the source line of `range` with a caret line under it. A range that spans lines is
// underlined to the end of its first line. Tabs in the source stay tabs in the caret line so the
// caret lines up in any terminal.
void RenderSnippet(const SourceFile& file, SourceRange range, const std::string* fixText,
                   std::ostream& out) {
  const LineCol begin = file.lineCol(range.begin);
  const std::string_view raw = file.lineText(begin.line);
  const PrintableLine printable = Printable(raw);
  const std::string_view line = printable.text;
  const uint32_t lineStart = file.lineStart(begin.line);
  const std::string gutter = fmt::format("{:>5}", begin.line);
  out << gutter << " | " << line << "\n";
  std::string pad;
  // A range that begins before its line's text (at a file's byte order mark) is shown from it.
  const uint32_t from = std::max(range.begin, lineStart);
  const uint32_t caretByte =
      printable.index[std::min<uint32_t>(from - lineStart, static_cast<uint32_t>(raw.size()))];
  for (uint32_t i = 0; i < caretByte; ++i) {
    const unsigned char c = line[i];
    if ((c & 0xC0) == 0x80) continue;
    pad += c == '\t' ? '\t' : ' ';
  }
  const uint32_t endByte = printable.index[std::min<uint32_t>(
      range.end > lineStart ? range.end - lineStart : 0, static_cast<uint32_t>(raw.size()))];
  const size_t width =
      endByte > caretByte ? CodePoints(line.substr(caretByte, endByte - caretByte)) : 0;
  std::string caret = "^";
  if (width > 1) caret += std::string(width - 1, '~');
  const std::string blank(gutter.size(), ' ');
  out << blank << " | " << pad << caret << "\n";
  if (fixText != nullptr && !fixText->empty() && fixText->find('\n') == std::string::npos) {
    std::string text = pad + *fixText;
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
    out << blank << " | " << text << "\n";
  }
}

void RenderOne(const SourceManager& sm, SourceRange range, Severity severity, const char* code,
               const std::string& message, const std::string* fixText, std::ostream& out) {
  if (!range.valid()) {
    out << "jr2c: " << SeverityWord(severity);
    if (code) out << "[" << code << "]";
    out << ": " << message << "\n";
    return;
  }
  const SourceFile& file = sm.file(range.file);
  const LineCol lc = file.lineCol(range.begin);
  out << file.name() << ":" << lc.line << ":" << lc.column << ": " << SeverityWord(severity);
  if (code) out << "[" << code << "]";
  out << ": " << message << "\n";
  RenderSnippet(file, range, fixText, out);
}

nlohmann::json Position(const SourceFile& file, uint32_t offset) {
  const LineCol lc = file.lineCol(offset);
  return {{"line", lc.line}, {"column", lc.column}, {"offset", offset}};
}

nlohmann::json RangeJson(const SourceManager& sm, SourceRange range) {
  if (!range.valid()) return nullptr;
  const SourceFile& file = sm.file(range.file);
  return {{"file", file.name()},
          {"start", Position(file, range.begin)},
          {"end", Position(file, range.end)}};
}

nlohmann::json SarifRegion(const SourceManager& sm, SourceRange range) {
  const SourceFile& file = sm.file(range.file);
  const LineCol b = file.lineCol(range.begin);
  const LineCol e = file.lineCol(range.end);
  return {{"startLine", b.line},       {"startColumn", b.column},
          {"endLine", e.line},         {"endColumn", e.column},
          {"charOffset", range.begin}, {"charLength", range.end - range.begin}};
}

nlohmann::json SarifLocation(const SourceManager& sm, SourceRange range) {
  return {{"physicalLocation",
           {{"artifactLocation", {{"uri", sm.file(range.file).name()}}},
            {"region", SarifRegion(sm, range)}}}};
}

}  // namespace

void RenderText(const Diagnostics& diags, const SourceManager& sm, std::ostream& out) {
  for (const Diagnostic& d : diags.all()) {
    const std::string* fix = d.fixits.empty() ? nullptr : &d.fixits.front().text;
    // Show the fix-it under the caret only when it applies at the diagnostic's own place.
    if (fix && d.fixits.front().range.begin != d.range.begin) fix = nullptr;
    RenderOne(sm, d.range, d.severity, d.code(), d.message, fix, out);
    for (const Note& n : d.notes) {
      RenderOne(sm, n.range, Severity::kNote, nullptr, n.message, nullptr, out);
    }
  }
  if (diags.errorCount() > 0 || diags.warningCount() > 0) {
    out << fmt::format("{} error{}, {} warning{}\n", diags.errorCount(),
                       diags.errorCount() == 1 ? "" : "s", diags.warningCount(),
                       diags.warningCount() == 1 ? "" : "s");
  }
}

void RenderJson(const Diagnostics& diags, const SourceManager& sm, std::ostream& out) {
  nlohmann::json list = nlohmann::json::array();
  for (const Diagnostic& d : diags.all()) {
    nlohmann::json notes = nlohmann::json::array();
    for (const Note& n : d.notes)
      notes.push_back({{"message", n.message}, {"range", RangeJson(sm, n.range)}});
    nlohmann::json fixits = nlohmann::json::array();
    for (const FixIt& f : d.fixits)
      fixits.push_back({{"range", RangeJson(sm, f.range)}, {"text", f.text}});
    list.push_back({{"code", d.code()},
                    {"kind", diag::Info(d.kind).name},
                    {"severity", SeverityWord(d.severity)},
                    {"message", d.message},
                    {"range", RangeJson(sm, d.range)},
                    {"notes", notes},
                    {"fixits", fixits}});
  }
  const nlohmann::json doc = {{"version", 1},
                              {"diagnostics", list},
                              {"errors", diags.errorCount()},
                              {"warnings", diags.warningCount()}};
  out << doc.dump(2) << "\n";
}

void RenderSarif(const Diagnostics& diags, const SourceManager& sm, const std::string& version,
                 std::ostream& out) {
  nlohmann::json rules = nlohmann::json::array();
  std::vector<std::string> codes = diag::AllCodes();
  for (const std::string& code : codes) {
    std::string_view text = Explanation(code);
    const auto firstLine = text.substr(0, text.find('\n'));
    rules.push_back({{"id", code}, {"shortDescription", {{"text", std::string(firstLine)}}}});
  }
  nlohmann::json results = nlohmann::json::array();
  for (const Diagnostic& d : diags.all()) {
    nlohmann::json r = {
        {"ruleId", d.code()},
        {"ruleIndex", std::find(codes.begin(), codes.end(), d.code()) - codes.begin()},
        {"level", d.severity == Severity::kError ? "error" : "warning"},
        {"message", {{"text", d.message}}}};
    if (d.range.valid()) r["locations"] = nlohmann::json::array({SarifLocation(sm, d.range)});
    nlohmann::json related = nlohmann::json::array();
    int id = 0;
    for (const Note& n : d.notes) {
      if (!n.range.valid()) continue;
      nlohmann::json loc = SarifLocation(sm, n.range);
      loc["id"] = id++;
      loc["message"] = {{"text", n.message}};
      related.push_back(loc);
    }
    if (!related.empty()) r["relatedLocations"] = related;
    nlohmann::json fixes = nlohmann::json::array();
    for (const FixIt& f : d.fixits) {
      fixes.push_back({{"artifactChanges",
                        {{{"artifactLocation", {{"uri", sm.file(f.range.file).name()}}},
                          {"replacements",
                           {{{"deletedRegion", SarifRegion(sm, f.range)},
                             {"insertedContent", {{"text", f.text}}}}}}}}}});
    }
    if (!fixes.empty()) r["fixes"] = fixes;
    results.push_back(r);
  }
  const nlohmann::json log = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs",
       {{{"tool", {{"driver", {{"name", "jr2c"}, {"version", version}, {"rules", rules}}}}},
         {"columnKind", "unicodeCodePoints"},
         {"results", results}}}}};
  out << log.dump(2) << "\n";
}

}  // namespace jr2
