// The formatter (fmt.h): the scanner's tokens, and the gaps between them rewritten.
#include "compiler/fmt/fmt.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "Jr2Lexer.h"
#include "compiler/source/source.h"
#include "compiler/syntax/scanner.h"

namespace jr2::layout {
namespace {

using syntax::gen::Jr2Lexer;

// What a gap between two tokens holds: its comments, each with whether a line break comes
// before it, and the line breaks after the last one.
struct Comment {
  std::string text;
  int breaksBefore = 0;    // line breaks between what came before (a token or a comment) and it
  size_t spaceBefore = 0;  // with no break before it: the spaces and tabs before it
};
struct Gap {
  std::vector<Comment> comments;
  int breaksAfter = 0;  // line breaks between the last comment (or the token before) and the next
  bool space = false;   // a space or tab, with no break and no comment
};

Gap ReadGap(std::string_view s) {
  Gap g;
  int breaks = 0;
  size_t spaces = 0;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '\n') {
      ++breaks;
      spaces = 0;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
      ++spaces;
      ++i;
    } else if (s.compare(i, 2, "//") == 0) {
      size_t end = s.find('\n', i);
      if (end == std::string_view::npos) end = s.size();
      std::string text(s.substr(i, end - i));
      while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
        text.pop_back();
      g.comments.push_back({std::move(text), breaks, spaces});
      breaks = 0;
      spaces = 0;
      i = end;
    } else if (s.compare(i, 2, "/*") == 0) {
      size_t end = s.find("*/", i + 2);
      end = end == std::string_view::npos ? s.size() : end + 2;
      g.comments.push_back({std::string(s.substr(i, end - i)), breaks, spaces});
      breaks = 0;
      spaces = 0;
      i = end;
    } else {
      ++i;  // not in a gap the scanner made
    }
  }
  g.breaksAfter = breaks;
  g.space = g.comments.empty() && breaks == 0 && spaces > 0;
  return g;
}

bool Opens(const std::string& t) { return t == "{" || t == "[" || t == "("; }

// A binary operator: a line that starts with one, or follows a line that ends with one, goes on
// the expression before it, and is indented two more.
bool Binary(const std::string& t) {
  static const char* const kOps[] = {
      "+", "*", "/", "%", "&&", "||", "??", "==", "!=", "<=", ">=", "?", ":", ".", "-", "="};
  for (const char* op : kOps)
    if (t == op) return true;
  return false;
}
bool Closes(const std::string& t) { return t == "}" || t == "]" || t == ")"; }

// The space between two tokens of one line: "" or " ". `ternary`: a `?` with a space before it
// (not an optional type's) was written earlier in this line's expression.
std::string Between(const std::string& a, const std::string& b, bool authorSpace, bool ternary) {
  // `:` ends a key or a parameter's name (none before it), or is a ternary's (one).
  if (b == ":") return ternary ? " " : "";
  if (b == "," || b == "." || b == ")" || b == "]") return "";
  if (a == "(" || a == "[" || a == ".") return "";
  if (a == "," || a == ":") return " ";
  if (a == "{") return b == "}" ? "" : " ";
  if (b == "}") return " ";
  // Where a token's role depends on its place (unary or binary `-`, prefix or postfix `!`, an
  // optional `?`, a type's `<` or a comparison, a union's `|`, a call's or an index's bracket),
  // what the author wrote.
  static const char* const kAsWritten[] = {"-", "!", "?", "<", ">", "|"};
  for (const char* t : kAsWritten) {
    if (a == t || b == t) return authorSpace ? " " : "";
  }
  // A call's or an index's bracket follows a name, a literal or a closing bracket: as written.
  // After an operator or a keyword that takes an expression, a bracket opens a value: one space.
  if (b == "(" || b == "[") {
    const char c = a.empty() ? ' ' : a[0];
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                      (c >= '0' && c <= '9') || c == '"';
    return word || a == ")" || a == "]" ? (authorSpace ? " " : "") : " ";
  }
  return " ";
}

// A bracket left open, and the indentation of the line that opened it.
struct Open {
  std::string bracket;
  size_t lineIndent;
};

// CRLF and a lone CR read as LF; the byte order mark goes.
std::string Normalized(std::string_view input) {
  std::string text;
  text.reserve(input.size());
  const size_t from = input.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  for (size_t i = from; i < input.size(); ++i) {
    if (input[i] == '\r') {
      text += '\n';
      if (i + 1 < input.size() && input[i + 1] == '\n') ++i;
    } else {
      text += input[i];
    }
  }
  return text;
}

std::vector<std::string> Lines(std::string_view s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find('\n', at);
    if (end == std::string_view::npos) end = s.size();
    out.emplace_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// Walks a file's tokens with the gap before each: `each(gap, &token)` for every token up to the
// end (stopping when it returns false), then `each(gap, nullptr)` for what follows the last
// (the table may end with or without an EOF token). Format and Comments read gaps the same way.
template <typename F>
void WalkGaps(std::string_view s, const syntax::TokenTable& table, F&& each) {
  size_t prevEnd = 0;
  for (size_t i = 0; i < table.size() && table.type(i) != syntax::kEofType; ++i) {
    const syntax::LexToken& t = table.at(i);
    if (!each(ReadGap(s.substr(prevEnd, t.byteBegin - prevEnd)), &t, i)) return;
    prevEnd = t.byteEnd;
  }
  each(ReadGap(s.substr(prevEnd)), nullptr, table.size());
}

}  // namespace

Formatted Format(std::string_view input) {
  const std::string text = Normalized(input);
  Formatted out;
  std::string why;
  if (FindInvalidUtf8(text, &why)) {
    out.why = "the file is not UTF-8 text (" + why + ")";
    return out;
  }
  SourceManager sm;
  const SourceFile* file = sm.add("fmt.jr2", "", text);
  size_t codePoints = 0;
  const syntax::TokenTable table = syntax::Lex(*file, &codePoints);
  const std::string_view s = file->text();

  std::string& o = out.text;
  o.reserve(text.size() + text.size() / 8);
  std::vector<Open> open;
  std::string prev;      // the token written last
  bool ternary = false;  // a ternary's `?` is waiting for its `:` (Between)
  size_t lineIndent = 0;
  // The indentation a bracket opened now belongs to: the line's, or, once this line closed a
  // bracket an earlier line opened (`prior: Ticket?) -> Seen {`), that line's.
  size_t baseIndent = 0;  // the indentation of the line being written
  // Starts a new line (after `breaks` line breaks, at most one of them blank) indented for a line
  // whose first token is `first` ("" for a comment).
  auto newLine = [&](int breaks, const std::string& first) {
    while (!o.empty() && o.back() == ' ') o.pop_back();
    if (!o.empty()) o += breaks >= 2 ? "\n\n" : "\n";
    if (!first.empty() && Closes(first) && !open.empty()) {
      lineIndent = open.back().lineIndent;
    } else {
      lineIndent = open.empty() ? 0 : open.back().lineIndent + 2;
      // A line that goes on an expression (it starts with a binary operator, or the line before
      // ended with one) is indented two more; a comment is not.
      const bool key = prev == ":" && !open.empty() && open.back().bracket == "{";
      // (`?` and `:` end a line as an optional type and a key, `.` never does: only a line that
      // starts with them goes on.)
      const bool endsOpen = Binary(prev) && prev != "?" && prev != ":" && prev != ".";
      if (!first.empty() && (Binary(first) || (endsOpen && !key))) lineIndent += 2;
    }
    o.append(lineIndent, ' ');
    baseIndent = lineIndent;
  };
  // Writes a comment of a gap; `atStart` when nothing was written yet.
  auto comment = [&](const Comment& c) {
    if (c.breaksBefore > 0 || o.empty()) {
      newLine(o.empty() ? 0 : c.breaksBefore, "");
    } else {
      o.append(c.spaceBefore == 0 ? 1 : c.spaceBefore, ' ');
    }
    o += c.text;
  };

  bool refused = false;
  WalkGaps(s, table, [&](const Gap& gap, const syntax::LexToken* t, size_t i) {
    for (const Comment& c : gap.comments) comment(c);
    if (t == nullptr) return false;
    const size_t type = table.type(i);
    if (type == Jr2Lexer::BAD_CHAR || type == Jr2Lexer::UNTERMINATED_STRING ||
        type == Jr2Lexer::UNTERMINATED_TEXT_BLOCK || type == Jr2Lexer::UNTERMINATED_COMMENT) {
      const LineCol at = file->lineCol(t->byteBegin);
      out.why = "line " + std::to_string(at.line) + " has text that is not a token (`jr2c check` " +
                "says what); nothing was formatted";
      refused = true;
      return false;
    }
    const std::string tok = table.text(i);
    if (o.empty()) {
      newLine(0, tok);
    } else if (gap.breaksAfter > 0 ||
               (!gap.comments.empty() && gap.comments.back().text[1] == '/')) {
      // A line comment always ends its line.
      newLine(gap.breaksAfter > 0 ? gap.breaksAfter : 1, tok);
    } else if (!gap.comments.empty()) {
      o += ' ';  // a block comment within the line
    } else {
      o += Between(prev, tok, gap.space, ternary);
    }
    if (tok == "?" && !o.empty() && o.back() == ' ') ternary = true;
    if (tok == ":" || tok == "," || Opens(tok) || Closes(tok)) ternary = false;
    o += tok;
    if (Opens(tok)) open.push_back({tok, baseIndent});
    if (Closes(tok) && !open.empty()) {
      baseIndent = std::min(baseIndent, open.back().lineIndent);
      open.pop_back();
    }
    prev = tok;
    return true;
  });
  if (refused) {
    out.text.clear();
    return out;
  }
  while (!o.empty() && (o.back() == ' ' || o.back() == '\n')) o.pop_back();
  if (!o.empty()) o += '\n';
  out.ok = true;
  return out;
}

std::vector<std::string> Comments(std::string_view text) {
  const std::string normalized = Normalized(text);
  SourceManager sm;
  const SourceFile* file = sm.add("c.jr2", "", normalized);
  size_t cp = 0;
  const syntax::TokenTable table = syntax::Lex(*file, &cp);
  std::vector<std::string> out;
  WalkGaps(file->text(), table, [&](Gap gap, const syntax::LexToken*, size_t) {
    for (Comment& c : gap.comments) out.push_back(std::move(c.text));
    return true;
  });
  return out;
}

bool SameTokens(std::string_view a, std::string_view b) {
  SourceManager sm;
  const SourceFile* fa = sm.add("a.jr2", "", Normalized(a));
  const SourceFile* fb = sm.add("b.jr2", "", Normalized(b));
  size_t cp = 0;
  const syntax::TokenTable ta = syntax::Lex(*fa, &cp);
  const syntax::TokenTable tb = syntax::Lex(*fb, &cp);
  if (ta.size() != tb.size()) return false;
  for (size_t i = 0; i < ta.size(); ++i) {
    if (ta.type(i) != tb.type(i)) return false;
    if (ta.type(i) != syntax::kEofType && ta.text(i) != tb.text(i)) return false;
  }
  return true;
}

std::string UnifiedDiff(const std::string& name, std::string_view a, std::string_view b) {
  const std::vector<std::string> x = Lines(a);
  const std::vector<std::string> y = Lines(b);
  const int n = static_cast<int>(x.size());
  const int m = static_cast<int>(y.size());
  // Myers: v[k] is the furthest x on diagonal k; each step's v is kept to walk the path back.
  const int max = n + m;
  std::vector<int> v(2 * static_cast<size_t>(max) + 2, 0);
  std::vector<std::vector<int>> trace;
  auto at = [&](std::vector<int>& vec, int k) -> int& {
    const int index = k + max + 1;  // never negative: k >= -max
    return vec[static_cast<size_t>(index)];
  };
  bool done = n == 0 && m == 0;
  for (int d = 0; d <= max && !done; ++d) {
    trace.push_back(v);
    for (int k = -d; k <= d; k += 2) {
      int xi =
          (k == -d || (k != d && at(v, k - 1) < at(v, k + 1))) ? at(v, k + 1) : at(v, k - 1) + 1;
      int yi = xi - k;
      while (xi < n && yi < m && x[static_cast<size_t>(xi)] == y[static_cast<size_t>(yi)]) {
        ++xi;
        ++yi;
      }
      at(v, k) = xi;
      if (xi >= n && yi >= m) {
        done = true;
        break;
      }
    }
  }
  // The edit script, from the end back: ' ' kept, '-' from a, '+' from b.
  std::vector<std::pair<char, int>> script;  // (op, line index in a or b)
  int xi = n;
  int yi = m;
  for (int d = static_cast<int>(trace.size()) - 1; d >= 0 && (xi > 0 || yi > 0); --d) {
    std::vector<int>& tv = trace[static_cast<size_t>(d)];
    const int k = xi - yi;
    const bool down = k == -d || (k != d && at(tv, k - 1) < at(tv, k + 1));
    const int pk = down ? k + 1 : k - 1;
    const int px = d == 0 ? 0 : at(tv, pk);
    const int py = px - pk;
    while (xi > px && yi > py && xi > 0 && yi > 0) {
      --xi;
      --yi;
      script.emplace_back(' ', xi);
    }
    if (d == 0) break;
    if (down) {
      --yi;
      script.emplace_back('+', yi);
    } else {
      --xi;
      script.emplace_back('-', xi);
    }
  }
  while (xi > 0 && yi > 0) {
    --xi;
    --yi;
    script.emplace_back(' ', xi);
  }
  std::reverse(script.begin(), script.end());
  bool differs = false;
  for (const auto& [op, i] : script) differs = differs || op != ' ';
  if (!differs) return {};
  // Hunks: each change with 3 lines of context around it.
  std::string out = "--- " + name + "\n+++ " + name + " (formatted)\n";
  constexpr int kContext = 3;
  const int count = static_cast<int>(script.size());
  int i = 0;
  while (i < count) {
    while (i < count && script[static_cast<size_t>(i)].first == ' ') ++i;
    if (i >= count) break;
    int start = std::max(0, i - kContext);
    int end = i;
    // Extend while changes come within 2 * context of each other.
    for (int j = i; j < count; ++j) {
      if (script[static_cast<size_t>(j)].first != ' ')
        end = j;
      else if (j - end > 2 * kContext)
        break;
    }
    end = std::min(count - 1, end + kContext);
    int aStart = 0, bStart = 0, aLen = 0, bLen = 0;
    // Line numbers: count a- and b-lines before `start`.
    for (int j = 0; j < start; ++j) {
      const char op = script[static_cast<size_t>(j)].first;
      if (op != '+') ++aStart;
      if (op != '-') ++bStart;
    }
    std::string body;
    for (int j = start; j <= end; ++j) {
      const auto& [op, li] = script[static_cast<size_t>(j)];
      const std::string& line = op == '+' ? y[static_cast<size_t>(li)] : x[static_cast<size_t>(li)];
      if (op != '+') ++aLen;
      if (op != '-') ++bLen;
      body += op;
      body += line;
      body += '\n';
    }
    out += "@@ -" + std::to_string(aLen == 0 ? aStart : aStart + 1) + "," + std::to_string(aLen) +
           " +" + std::to_string(bLen == 0 ? bStart : bStart + 1) + "," + std::to_string(bLen) +
           " @@\n" + body;
    i = end + 1;
  }
  return out;
}

}  // namespace jr2::layout
