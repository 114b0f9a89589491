// The text printer the generators write through, in the manner of protobuf's io::Printer:
//
//   p.emit(R"gen(
//     int $name$() {
//       $body$
//     }
//   )gen",
//           {{"name", n}, {"body", [&] { EmitBody(p); }}});
//
// - A template is a string literal (the overload takes only arrays of char), so no text a user
//   wrote — a name, a string, a file name with a `$` in it — is ever read as a template. Such
//   text goes in through a substitution, or through raw().
// - `$name$` is replaced by a named value: a string, or a callback that prints in its place.
//   A callback alone on its template line prints at that line's indentation, and the line's own
//   newline is dropped when the callback ended a line itself. `$$` prints a dollar sign.
// - Templates use the raw-string delimiter `gen`: clang-format reformats `cc` and `cpp` raw
//   strings as C++, which would join a callback's line to the next.
// - emit() takes a block: a raw string that starts with a newline. The newline goes, and so does
//   the indentation its lines have in common, so a template is indented like the code around
//   it; print() takes a template as it is.
// - Every line is indented by the current level (indent()/outdent(), or a callback's place);
//   blank lines stay blank.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace jr2::codegen {

class Printer {
 public:
  struct Sub {
    Sub(const char* k, std::string v) : key(k), value(std::move(v)) {}
    Sub(const char* k, const char* v) : key(k), value(std::string(v)) {}
    Sub(const char* k, std::function<void()> f) : key(k), value(std::move(f)) {}
    template <typename F, typename = std::enable_if_t<std::is_invocable_r_v<void, F>>>
    Sub(const char* k, F f) : key(k), value(std::function<void()>(std::move(f))) {}

    std::string_view key;
    std::variant<std::string, std::function<void()>> value;
  };
  using Vars = std::initializer_list<Sub>;

  template <size_t N>
  void print(const char (&tmpl)[N], Vars vars = {}) {
    expand(std::string_view(tmpl, N - 1), vars);
  }
  // A block template: a raw string that starts with a newline, printed without that newline
  // and without the indentation its lines have in common.
  template <size_t N>
  void emit(const char (&tmpl)[N], Vars vars = {}) {
    expand(Dedent(std::string_view(tmpl, N - 1)), vars);
  }
  // Text printed as it is (indented like any other line): never read as a template.
  void raw(std::string_view text);

  void indent(int columns = 2) { level_ += columns; }
  void outdent(int columns = 2) { level_ -= columns; }
  const std::string& str() const { return out_; }

 private:
  static std::string Dedent(std::string_view block);
  void expand(std::string_view tmpl, Vars vars);
  void put(char c);

  std::string out_;
  int level_ = 0;
  bool atLineStart_ = true;
};

}  // namespace jr2::codegen
