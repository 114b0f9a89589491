#include "compiler/codegen/wrap.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace jr2::codegen {
namespace {

constexpr size_t kNone = std::string_view::npos;
// Continuation lines are indented this much more than the line they were broken from.
constexpr size_t kContinuationIndent = 4;
// A break just inside `[` is allowed only when the brackets hold more than this: lambda captures
// (`[&]`) and attributes (`[[maybe_unused]]`) read badly split, and gain little.
constexpr size_t kShortestSplitSquare = 20;

bool IsIdentChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '_' ||
         u >= 0x80;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t'; }
bool IsOpener(char c) { return c == '(' || c == '{' || c == '['; }
bool IsCloser(char c) { return c == ')' || c == '}' || c == ']'; }

// Columns of `s`: UTF-8 continuation bytes take none.
size_t Width(std::string_view s) {
  size_t w = 0;
  for (char c : s) w += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return w;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// A place a line may break: the first part ends at `cut` (exclusive), the continuation starts
// at `next`. A split of a string literal adds a closing quote to the first part and an opening
// one to the continuation.
struct Candidate {
  size_t cut;
  size_t next;
  int depth;      // bracket depth at the break, counted from the start of the line
  bool inString;  // splits a string literal
  bool usable;
};

// What a line's lexing found, and the lexer's state at its end.
enum class State { kCode, kBlockComment, kRawString };

struct Carry {
  State state = State::kCode;
  std::string rawEnd;    // `)delim"` that closes the open raw string
  bool spliced = false;  // the previous line ended with a backslash
};

class Wrapper {
 public:
  explicit Wrapper(size_t limit) : limit_(limit) {}

  std::string run(const std::string& text) {
    out_.reserve(text.size() + text.size() / 16);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t eol = text.find('\n', pos);
      const bool hasNewline = eol != std::string::npos;
      if (!hasNewline) eol = text.size();
      wrapLine(std::string_view(text).substr(pos, eol - pos));
      if (hasNewline) out_ += '\n';
      pos = eol + 1;
    }
    return std::move(out_);
  }

 private:
  // Lexes `line` far enough to know where code may break; returns false when the line must be
  // left alone (it starts or ends inside a multi-line comment or raw string, or is malformed).
  bool scan(std::string_view line) {
    cands_.clear();
    opens_.clear();
    comment_ = kNone;
    bool ok = true;
    size_t i = 0;
    const size_t n = line.size();
    if (carry_.state == State::kBlockComment) {
      ok = false;
      const size_t end = line.find("*/");
      if (end == kNone) return false;
      carry_.state = State::kCode;
      i = end + 2;
    } else if (carry_.state == State::kRawString) {
      ok = false;
      const size_t end = line.find(carry_.rawEnd);
      if (end == kNone) return false;
      carry_.state = State::kCode;
      i = end + carry_.rawEnd.size();
    }
    int depth = 0;
    while (i < n) {
      const char c = line[i];
      const char next = i + 1 < n ? line[i + 1] : '\0';
      if (c == '/' && next == '/') {
        comment_ = i;
        break;
      }
      if (c == '/' && next == '*') {
        const size_t end = line.find("*/", i + 2);
        if (end == kNone) {
          carry_.state = State::kBlockComment;
          return false;
        }
        i = end + 2;
        continue;
      }
      if (c == '"') {
        if (!scanString(line, i, depth)) {
          if (carry_.state == State::kRawString) return false;
          ok = false;
          break;
        }
        continue;
      }
      if (c == '\'') {
        size_t j = i + 1;
        while (j < n && line[j] != '\'') j += line[j] == '\\' ? 2 : 1;
        if (j >= n) {
          ok = false;
          break;
        }
        i = j + 1;
        continue;
      }
      if (IsDigit(c) || (c == '.' && IsDigit(next))) {
        // A pp-number, with its digit separators and exponent signs.
        size_t j = i + 1;
        while (j < n) {
          const char d = line[j];
          const bool exponentSign =
              (d == '+' || d == '-') && std::string_view("eEpP").find(line[j - 1]) != kNone;
          if (IsIdentChar(d) || d == '.' || exponentSign) {
            ++j;
          } else if (d == '\'' && j + 1 < n && IsIdentChar(line[j + 1])) {
            j += 2;
          } else {
            break;
          }
        }
        i = j;
        continue;
      }
      if (IsIdentChar(c)) {
        while (i < n && IsIdentChar(line[i])) ++i;
        continue;
      }
      if (IsOpener(c)) {
        ++depth;
        size_t k = i + 1;
        while (k < n && IsSpace(line[k])) ++k;
        size_t index = kNone;
        if (k < n && !IsCloser(line[k])) {
          index = cands_.size();
          cands_.push_back({i + 1, k, depth, false, true});
        }
        opens_.emplace_back(i, index);
        ++i;
        continue;
      }
      if (IsCloser(c)) {
        if (!opens_.empty()) {
          const auto [at, index] = opens_.back();
          opens_.pop_back();
          if (index != kNone && line[at] == '[' && i - at - 1 <= kShortestSplitSquare) {
            cands_[index].usable = false;
          }
        }
        --depth;
        ++i;
        continue;
      }
      if (c == ',' || c == ';') {
        size_t k = i + 1;
        while (k < n && IsSpace(line[k])) ++k;
        if (k > i + 1 && k < n) cands_.push_back({i + 1, k, depth, false, true});
        ++i;
        continue;
      }
      if (c == ' ') {
        for (std::string_view op : {" && ", " || ", " + ", " ? ", " : "}) {
          if (line.substr(i, op.size()) != op) continue;
          size_t cut = i;
          while (cut > 0 && IsSpace(line[cut - 1])) --cut;
          cands_.push_back({cut, i + 1, depth, false, true});
          break;
        }
      }
      ++i;
    }
    return ok;
  }

  // Lexes the string literal at line[i] and moves i past it; false if it does not end on the
  // line (then carry_ says whether a raw string stays open).
  bool scanString(std::string_view line, size_t& i, int depth) {
    const size_t n = line.size();
    size_t start = i;
    while (start > 0 && IsIdentChar(line[start - 1])) --start;
    const std::string_view prefix = line.substr(start, i - start);
    const bool raw =
        prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR";
    if (raw) {
      const size_t open = line.find('(', i + 1);
      if (open == kNone) return false;
      std::string end = ")";
      end.append(line.substr(i + 1, open - i - 1));
      end += '"';
      const size_t close = line.find(end, open + 1);
      if (close == kNone) {
        carry_.state = State::kRawString;
        carry_.rawEnd = std::move(end);
        return false;
      }
      i = close + end.size();
      return true;
    }
    // Only a plain literal may be split: "a" "b" is "ab", but a prefix or a user-defined suffix
    // would need repeating.
    const bool plain = prefix.empty();
    const size_t first = cands_.size();
    size_t j = i + 1;
    while (j < n && line[j] != '"') {
      if (line[j] == '\\') {
        j += 2;  // the escaped char, whatever it is, stays with its backslash
        continue;
      }
      if (line[j] == ' ' && plain && j + 1 < n && line[j + 1] != '"') {
        cands_.push_back({j + 1, j + 1, depth, true, true});
      }
      ++j;
    }
    if (j >= n) {
      cands_.resize(first);
      return false;
    }
    const size_t end = j + 1;
    if (end < n && IsIdentChar(line[end])) cands_.resize(first);
    // Adjacent literals may go on separate lines.
    size_t k = end;
    while (k < n && IsSpace(line[k])) ++k;
    if (k > end && k < n && line[k] == '"') cands_.push_back({end, k, depth, false, true});
    i = end;
    return true;
  }

  void wrapLine(std::string_view line) {
    const bool spliced = carry_.spliced;
    const bool inCode = carry_.state == State::kCode;
    carry_.spliced = !line.empty() && line.back() == '\\';
    const bool ok = scan(line);
    size_t indent = 0;
    while (indent < line.size() && IsSpace(line[indent])) ++indent;
    const bool fits = line.size() <= limit_ || Width(line) <= limit_;
    if (fits || spliced || !inCode || !ok || carry_.spliced || carry_.state != State::kCode ||
        (indent < line.size() && line[indent] == '#')) {
      out_.append(line);
      return;
    }
    const std::string_view pad = line.substr(0, indent);
    if (comment_ == indent) {
      wrapComment(pad, TrimRight(line.substr(indent)));
      return;
    }
    const size_t codeEnd =
        TrimRight(line.substr(0, comment_ == kNone ? line.size() : comment_)).size();
    if (comment_ != kNone) {
      wrapComment(pad, TrimRight(line.substr(comment_)));
      out_ += '\n';
    }
    wrapCode(line, pad, codeEnd);
  }

  // Prints a `//` comment at indentation `pad`, word-wrapped if it does not fit.
  void wrapComment(std::string_view pad, std::string_view comment) {
    const size_t padWidth = Width(pad);
    if (padWidth + Width(comment) <= limit_) {
      out_.append(pad).append(comment);
      return;
    }
    size_t slashes = 0;
    while (slashes < comment.size() && comment[slashes] == '/') ++slashes;
    std::string_view body = comment.substr(slashes);
    const bool spaced = !body.empty() && body[0] == ' ';
    const std::string_view prefix = comment.substr(0, slashes + (spaced ? 1 : 0));
    bool lineOpen = false;
    size_t width = 0;
    while (!body.empty()) {
      while (!body.empty() && IsSpace(body[0])) body.remove_prefix(1);
      if (body.empty()) break;
      size_t len = 0;
      while (len < body.size() && !IsSpace(body[len])) ++len;
      const std::string_view word = body.substr(0, len);
      body.remove_prefix(len);
      const size_t wordWidth = Width(word);
      if (lineOpen && width + 1 + wordWidth <= limit_) {
        out_ += ' ';
        out_.append(word);
        width += 1 + wordWidth;
        continue;
      }
      if (lineOpen) out_ += '\n';
      out_.append(pad).append(prefix).append(word);
      width = padWidth + Width(prefix) + wordWidth;
      lineOpen = true;
    }
    // A comment of slashes alone has no words to wrap.
    if (!lineOpen) out_.append(pad).append(comment);
  }

  // Prints line[pad.size(), codeEnd), breaking it where scan() allowed.
  void wrapCode(std::string_view line, std::string_view pad, size_t codeEnd) {
    cols_.resize(codeEnd + 1);
    cols_[0] = 0;
    for (size_t i = 0; i < codeEnd; ++i) {
      cols_[i + 1] = cols_[i] + ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80);
    }
    std::stable_sort(cands_.begin(), cands_.end(),
                     [](const Candidate& a, const Candidate& b) { return a.cut < b.cut; });
    // reach_[k]: where the first ordinary break after candidate k cuts. A literal is split only
    // when the code up to there cannot fit, whether the literal itself or what trails it (a
    // comma, closing brackets) crosses the limit.
    reach_.resize(cands_.size());
    size_t reach = codeEnd;
    for (size_t k = cands_.size(); k-- > 0;) {
      reach_[k] = reach;
      const Candidate& c = cands_[k];
      if (c.usable && !c.inString && c.next < codeEnd) reach = c.cut;
    }
    std::string contPad(pad);
    contPad.append(kContinuationIndent, ' ');
    size_t start = pad.size();
    bool quoted = false;  // the piece starts with the opening quote of a split literal
    size_t padWidth = Width(pad);
    size_t first = 0;  // the first candidate that may still lie after `start`
    std::string_view curPad = pad;
    while (true) {
      const size_t lead = padWidth + (quoted ? 1 : 0);
      const size_t avail = limit_ > lead ? limit_ - lead : 0;
      out_.append(curPad);
      if (quoted) out_ += '"';
      if (cols_[codeEnd] - cols_[start] <= avail) break;
      while (first < cands_.size() && cands_[first].cut <= start) ++first;
      const Candidate* best = choose(first, start, codeEnd, avail);
      if (best == nullptr) break;
      out_.append(line.substr(start, best->cut - start));
      if (best->inString) out_ += '"';
      out_ += '\n';
      start = best->next;
      quoted = best->inString;
      curPad = contPad;
      padWidth = Width(contPad);
    }
    out_.append(line.substr(start, codeEnd - start));
  }

  // The best break of the piece line[start, codeEnd) that has `avail` columns, or null.
  const Candidate* choose(size_t first, size_t start, size_t codeEnd, size_t avail) const {
    const size_t threshold = avail / 2;
    const Candidate* late = nullptr;    // shallowest, rightmost break in the second half
    const Candidate* early = nullptr;   // shallowest, rightmost break in the first half
    const Candidate* split = nullptr;   // rightmost split of the literal that crosses the limit
    const Candidate* beyond = nullptr;  // first break past the limit
    auto better = [](const Candidate* have, const Candidate& c) {
      return have == nullptr || c.depth <= have->depth;
    };
    for (size_t k = first; k < cands_.size(); ++k) {
      const Candidate& c = cands_[k];
      if (!c.usable || c.next >= codeEnd || c.cut <= start) continue;
      const size_t width = cols_[c.cut] - cols_[start] + (c.inString ? 1 : 0);
      if (width > avail) {
        beyond = &c;
        break;
      }
      if (c.inString) {
        if (cols_[reach_[k]] - cols_[start] > avail) split = &c;
      } else if (width >= threshold) {
        if (better(late, c)) late = &c;
      } else if (better(early, c)) {
        early = &c;
      }
    }
    if (late != nullptr) return late;
    if (split != nullptr) return split;
    if (early != nullptr) return early;
    return beyond;
  }

  size_t limit_;
  std::string out_;
  Carry carry_;
  std::vector<Candidate> cands_;
  std::vector<std::pair<size_t, size_t>> opens_;  // an open bracket, and its candidate
  std::vector<size_t> reach_;                     // see wrapCode()
  std::vector<size_t> cols_;                      // cols_[i]: the column of byte i
  size_t comment_ = kNone;                        // where the line's `//` comment starts
};

}  // namespace

std::string WrapLines(const std::string& text, size_t limit) { return Wrapper(limit).run(text); }

}  // namespace jr2::codegen
