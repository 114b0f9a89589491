#include "compiler/diag/diagnostics.h"

#include <algorithm>
#include <set>

namespace jr2 {
namespace diag {
namespace {

constexpr Severity Error = Severity::kError;
constexpr Severity Warning = Severity::kWarning;

const KindInfo kInfos[] = {
#define JR2_DIAG(Name, Code, Sev, Format, ...) {#Name, #Code, Sev, Format},
#include "compiler/diag/diagnostic_kinds.def"
};

}  // namespace

bool Subject::isPhrase() const {
  if (text.find('`') != std::string::npos || text == "it") return true;
  for (const char* article : {"the ", "a ", "an "}) {
    if (text.rfind(article, 0) == 0) return true;
  }
  return false;
}

const KindInfo& Info(Kind kind) { return kInfos[static_cast<size_t>(kind)]; }

const char* NoteFormat(NoteKind kind) {
  static const char* const kFormats[] = {
#define JR2_NOTE(Name, Format, ...) Format,
#include "compiler/diag/note_kinds.def"
  };
  return kFormats[static_cast<size_t>(kind)];
}

std::vector<Kind> AllKinds() {
  std::vector<Kind> kinds;
  for (size_t i = 0; i < static_cast<size_t>(Kind::kCount); ++i) kinds.push_back(Kind(i));
  return kinds;
}

std::vector<std::string> AllCodes() {
  std::set<std::string> codes;
  for (const auto& info : kInfos) codes.insert(info.code);
  return {codes.begin(), codes.end()};
}

}  // namespace diag

Diagnostics::Builder Diagnostics::add(diag::Kind kind, SourceRange range, std::string message) {
  Severity severity = diag::Info(kind).severity;
  if (severity == Severity::kWarning && werror_) severity = Severity::kError;
  if (severity == Severity::kError) ++errors_;
  if (severity == Severity::kWarning) ++warnings_;
  diags_.push_back({kind, severity, range, std::move(message), {}, {}});
  return Builder(&diags_.back());
}

void Diagnostics::sortByLocation() {
  std::stable_sort(diags_.begin(), diags_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.range.file != b.range.file) return a.range.file < b.range.file;
    return a.range.begin < b.range.begin;
  });
}

}  // namespace jr2
