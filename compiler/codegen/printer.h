// A small text printer with named substitutions, in the manner of protobuf's io::Printer:
//   p.print("int $name$ = $value$;\n", {{"name", n}, {"value", v}});
// Lines are indented by the current level; `$$` prints a dollar sign.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

namespace jr2::codegen {

class Printer {
 public:
  using Vars = std::initializer_list<std::pair<const char*, std::string>>;

  void print(const std::string& text, Vars vars = {});
  void indent() { level_ += 2; }
  void outdent() { level_ -= 2; }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
  int level_ = 0;
  bool atLineStart_ = true;
};

}  // namespace jr2::codegen
