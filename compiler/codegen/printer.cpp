#include "compiler/codegen/printer.h"

#include <algorithm>
#include <stdexcept>

namespace jr2::codegen {
std::string Printer::Dedent(std::string_view tmpl) {
  if (tmpl.empty() || tmpl[0] != '\n')
    throw std::logic_error("a block template starts with a newline: " + std::string(tmpl));
  tmpl.remove_prefix(1);
  size_t common = std::string_view::npos;
  for (size_t at = 0; at < tmpl.size();) {
    const size_t end = std::min(tmpl.find('\n', at), tmpl.size());
    const std::string_view line = tmpl.substr(at, end - at);
    const size_t text = line.find_first_not_of(' ');
    if (text != std::string_view::npos) common = std::min(common, text);
    at = end + 1;
  }
  if (common == std::string_view::npos) common = 0;
  std::string out;
  for (size_t at = 0; at < tmpl.size();) {
    const size_t end = std::min(tmpl.find('\n', at), tmpl.size());
    const std::string_view line = tmpl.substr(at, end - at);
    // The closing line of a block (`  )gen"`) holds only the indentation: it prints nothing.
    if (end == tmpl.size() && line.find_first_not_of(' ') == std::string_view::npos) break;
    if (line.size() > common) out.append(line.substr(common));
    if (end < tmpl.size()) out += '\n';
    at = end + 1;
  }
  return out;
}

void Printer::put(char c) {
  if (c == '\n') {
    out_ += c;
    atLineStart_ = true;
    return;
  }
  if (atLineStart_) {
    out_.append(static_cast<size_t>(level_), ' ');
    atLineStart_ = false;
  }
  out_ += c;
}

void Printer::raw(std::string_view text) {
  for (char c : text) put(c);
}

void Printer::expand(std::string_view tmpl, Vars vars) {
  // The spaces that begin a template line wait: before text they are printed, before a callback
  // alone on its line they become its indentation, before a newline they are dropped.
  size_t pending = 0;
  size_t lineIndent = 0;  // the leading spaces of the current template line
  bool lineHasText = false;
  auto flush = [&] {
    if (!lineHasText) lineIndent = pending;
    for (; pending > 0; --pending) put(' ');
    lineHasText = true;
  };
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if (c == '\n') {
      pending = 0;
      lineIndent = 0;
      lineHasText = false;
      put(c);
      continue;
    }
    if (c == ' ' && !lineHasText) {
      ++pending;
      continue;
    }
    if (c != '$') {
      flush();
      put(c);
      continue;
    }
    const size_t close = tmpl.find('$', i + 1);
    if (close == std::string_view::npos)
      throw std::logic_error("unclosed $ in a template: " + std::string(tmpl));
    const std::string_view name = tmpl.substr(i + 1, close - i - 1);
    i = close;
    if (name.empty()) {
      flush();
      put('$');
      continue;
    }
    const Sub* sub = nullptr;
    for (const Sub& s : vars) {
      if (s.key == name) sub = &s;
    }
    if (sub == nullptr)
      throw std::logic_error("no value for $" + std::string(name) + "$ in a template");
    if (const auto* text = std::get_if<std::string>(&sub->value)) {
      // A value of several lines: each of its lines is indented like the template's line.
      flush();
      level_ += static_cast<int>(lineIndent);
      raw(*text);
      level_ -= static_cast<int>(lineIndent);
      continue;
    }
    const auto& callback = std::get<std::function<void()>>(sub->value);
    if (lineHasText) {
      callback();
      continue;
    }
    const int pad = static_cast<int>(pending);
    pending = 0;
    level_ += pad;
    callback();
    level_ -= pad;
    lineHasText = !atLineStart_;
    // `$body$\n` where the body ended its own line: the template's newline would print a blank
    // line.
    if (atLineStart_ && i + 1 < tmpl.size() && tmpl[i + 1] == '\n') ++i;
  }
}

}  // namespace jr2::codegen
