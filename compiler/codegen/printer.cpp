#include "compiler/codegen/printer.h"

#include <stdexcept>

namespace jr2::codegen {

void Printer::print(const std::string& text, Vars vars) {
  std::string expanded;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') {
      expanded += text[i];
      continue;
    }
    const size_t close = text.find('$', i + 1);
    if (close == std::string::npos) throw std::logic_error("unclosed $ in a template: " + text);
    const std::string name = text.substr(i + 1, close - i - 1);
    if (name.empty()) {
      expanded += '$';
    } else {
      bool found = false;
      for (const auto& [k, v] : vars) {
        if (name == k) {
          expanded += v;
          found = true;
          break;
        }
      }
      if (!found) throw std::logic_error("no value for $" + name + "$ in a template");
    }
    i = close;
  }
  // Indent every line that has text; keep blank lines blank.
  for (char c : expanded) {
    if (c == '\n') {
      out_ += c;
      atLineStart_ = true;
      continue;
    }
    if (atLineStart_) {
      out_.append(static_cast<size_t>(level_), ' ');
      atLineStart_ = false;
    }
    out_ += c;
  }
}

}  // namespace jr2::codegen
