// Structured diagnostics: the registry's kinds, the Diagnostic value with its notes and fix-its,
// and the Diagnostics sink that every phase emits into. Rendering lives in render.h.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/source/source.h"

namespace jr2 {

enum class Severity : uint8_t { kError, kWarning, kNote };

namespace diag {

// One enumerator per line of diagnostic_kinds.def.
enum class Kind : uint16_t {
#define JR2_DIAG(Name, Code, Sev, Format, ...) Name,
#include "compiler/diag/diagnostic_kinds.def"
  kCount
};

// What the registry says about one kind.
struct KindInfo {
  const char* name;    // `UnknownName`
  const char* code;    // `E0100`
  Severity severity;   // as registered (before --Werror)
  const char* format;  // fmt format string
};

const KindInfo& Info(Kind kind);
// Every registered kind, in registry order.
std::vector<Kind> AllKinds();
// Every distinct code, sorted (`E0001`, `E0100`, …).
std::vector<std::string> AllCodes();

// An argument that names what a message is about: a bare name (`Ticket`, `ticket.meta`) is put in
// backticks, while a phrase that already says what it is (`the record`, `an Agent's invoke`,
// extern `page_team`, a `dispatch` worker) is printed as written, so that no name is quoted twice.
struct Subject {
  Subject(std::string t) : text(std::move(t)) {}  // NOLINT(google-explicit-constructor)
  Subject(const char* t) : text(t) {}             // NOLINT(google-explicit-constructor)
  std::string text;
  // True when `text` is a phrase rather than a name: it holds a backtick, or it starts with an
  // article or is `it`.
  bool isPhrase() const;
  std::string str() const { return isPhrase() ? text : "`" + text + "`"; }
};

// A typed handle on one kind: `Emit(diag::UnknownName, range, a, b, c)` only compiles with the
// argument types the registry lists.
template <typename... Args>
struct Def {
  Kind kind;
};

// One enumerator per line of note_kinds.def: every note is registered, as every diagnostic is.
enum class NoteKind : uint16_t {
#define JR2_NOTE(Name, Format, ...) Name,
#include "compiler/diag/note_kinds.def"
  kCount
};
const char* NoteFormat(NoteKind kind);
template <typename... Args>
struct NoteDef {
  NoteKind kind;
};

#define JR2_DIAG(Name, Code, Sev, Format, ...) inline constexpr Def<__VA_ARGS__> Name{Kind::Name};
#include "compiler/diag/diagnostic_kinds.def"
#define JR2_NOTE(Name, Format, ...) inline constexpr NoteDef<__VA_ARGS__> Name{NoteKind::Name};
#include "compiler/diag/note_kinds.def"

}  // namespace diag

// A replacement of `range` by `text` (an insertion when the range is empty, a removal when the
// text is).
struct FixIt {
  SourceRange range;
  std::string text;
};

struct Note {
  SourceRange range;  // may be invalid: a note with no place
  std::string message;
};

struct Diagnostic {
  diag::Kind kind;
  Severity severity;
  SourceRange range;
  std::string message;
  std::vector<Note> notes;
  std::vector<FixIt> fixits;

  const char* code() const { return diag::Info(kind).code; }
};

// Collects diagnostics from every phase; the driver sorts and renders them at the end.
class Diagnostics {
 public:
  // Adds notes and fix-its to the diagnostic it was returned for.
  class Builder {
   public:
    // A registered note (note_kinds.def) at `range`, with its arguments.
    template <typename... Args, typename... Given>
    Builder& note(const diag::NoteDef<Args...>& def, SourceRange range, Given&&... args) {
      static_assert(sizeof...(Args) == sizeof...(Given), "wrong number of note arguments");
      if (d_) {
        d_->notes.push_back({range, fmt::format(fmt::runtime(diag::NoteFormat(def.kind)),
                                                Args(std::forward<Given>(args))...)});
      }
      return *this;
    }
    Builder& fix(SourceRange range, std::string text) {
      if (d_) d_->fixits.push_back({range, std::move(text)});
      return *this;
    }

   private:
    friend class Diagnostics;
    explicit Builder(Diagnostic* d) : d_(d) {}
    Diagnostic* d_;
  };

  template <typename... Args, typename... Given>
  Builder emit(const diag::Def<Args...>& def, SourceRange range, Given&&... args) {
    static_assert(sizeof...(Args) == sizeof...(Given), "wrong number of diagnostic arguments");
    const auto& info = diag::Info(def.kind);
    return add(def.kind, range,
               fmt::format(fmt::runtime(info.format), Args(std::forward<Given>(args))...));
  }

  // Turns warnings into errors (`--Werror`).
  void setWarningsAsErrors(bool on) { werror_ = on; }

  size_t errorCount() const { return errors_; }
  size_t warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ > 0; }
  const std::vector<Diagnostic>& all() const { return diags_; }
  // Sorts by file, then offset, keeping emission order for ties.
  void sortByLocation();

 private:
  Builder add(diag::Kind kind, SourceRange range, std::string message);

  std::vector<Diagnostic> diags_;
  size_t errors_ = 0;
  size_t warnings_ = 0;
  bool werror_ = false;
};

// The long explanation of a code for `jr2c explain`, or empty when the code is unknown.
std::string_view Explanation(std::string_view code);

}  // namespace jr2

template <>
struct fmt::formatter<jr2::diag::Subject> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const jr2::diag::Subject& s, FormatContext& ctx) const {
    const std::string text = s.str();
    return fmt::formatter<std::string_view>::format(text, ctx);
  }
};
