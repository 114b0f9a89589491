// The token passes (token_passes.h), in the order PrepareTokens runs them after the scanner.

#include "compiler/syntax/token_passes.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "Jr2Lexer.h"
#include "compiler/diag/suggest.h"
#include "compiler/syntax/internal.h"
#include "compiler/syntax/parse.h"
#include "compiler/syntax/token_stream.h"

namespace jr2::syntax {

using gen::Jr2Lexer;

namespace {

// Reports the lexer's error tokens and rewrites them into the token the author meant, so the
// parse that follows sees a plausible program. Returns the tokens the parser should see.
// `swallowed` is set when a token ran to the end of the file (an unterminated text block or
// comment), so what follows it was never seen as code.
// Works in place (the kept tokens move down over the dropped ones): a second vector of tokens
// would double the peak.
void FilterTokens(TokenTable& table, const SourceFile& file, Diagnostics& diags, bool* swallowed) {
  std::vector<LexToken>& tokens = table.tokens;
  size_t kept = 0;
  auto keep = [&](size_t i) {
    if (kept != i) tokens[kept] = tokens[i];
    ++kept;
  };
  size_t hashLine = 0;  // the line of a `#` "comment": the rest of it is dropped, said once
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (hashLine != 0 && table.line(i) == hashLine) continue;
    const size_t type = table.type(i);
    // `1 minute`, `30 seconds`: a number and a unit word on one line is a duration written out.
    // Said once, with the literal to write, and read as that literal (the word is dropped).
    // (A word followed by `:` is the next key after a missing comma, not a unit.)
    if (type == Jr2Lexer::INT && i + 1 < tokens.size() && table.type(i + 1) == Jr2Lexer::IDENT &&
        table.line(i + 1) == table.line(i) &&
        (i + 2 >= tokens.size() || table.type(i + 2) != Jr2Lexer::COLON)) {
      if (const std::string meant = DurationMeant(table.text(i), table.text(i + 1));
          !meant.empty()) {
        Jr2Token count(&table, i);
        Jr2Token unit(&table, i + 1);
        const SourceRange both = RangeOf(file, &count).to(RangeOf(file, &unit));
        diags
            .emit(diag::SyntaxDurationWords, both,
                  std::string(file.text().substr(both.begin, both.end - both.begin)), meant)
            .fix(both, meant);
        count.setType(Jr2Lexer::DURATION);
        count.setText(meant);
        keep(i);
        ++i;
        continue;
      }
    }
    // Only the error tokens need a look at their text or range; most tokens pass straight on.
    if (type < Jr2Lexer::SEMI || (type > Jr2Lexer::SEMI && type < Jr2Lexer::BAD_NUMBER) ||
        type == Jr2Lexer::TEXT_BLOCK || type == Jr2Lexer::STRING || type == Jr2Lexer::IDENT) {
      keep(i);
      continue;
    }
    Jr2Token view(&table, i);
    Jr2Token* t = &view;
    const SourceRange range = RangeOf(file, t);
    const std::string text = t->getText();
    switch (type) {
      case Jr2Lexer::SEMI:
        diags.emit(diag::SyntaxSemicolon, range).fix(range, "");
        continue;
      case Jr2Lexer::UNTERMINATED_STRING:
        diags.emit(diag::SyntaxUnterminatedString, range)
            .fix(SourceRange::point(file.id(), range.end), "\"");
        t->setType(Jr2Lexer::STRING);
        t->setText(text + "\"");
        break;
      case Jr2Lexer::UNTERMINATED_TEXT_BLOCK:
        diags.emit(diag::SyntaxUnterminatedTextBlock, {file.id(), range.begin, range.begin + 3})
            .fix(SourceRange::point(file.id(), range.end), "\"\"\"");
        t->setType(Jr2Lexer::TEXT_BLOCK);
        t->setText(text + "\"\"\"");
        *swallowed = true;
        break;
      case Jr2Lexer::UNTERMINATED_COMMENT:
        diags.emit(diag::SyntaxUnterminatedComment, {file.id(), range.begin, range.begin + 2})
            .fix(SourceRange::point(file.id(), range.end), "*/");
        *swallowed = true;
        continue;
      case Jr2Lexer::BAD_NUMBER: {
        // `5min`, `2weeks`: a unit spelled out is said with the literal to write, and read as it.
        const size_t digits = text.find_first_not_of("0123456789");
        if (const std::string meant = DurationMeant(text.substr(0, digits), text.substr(digits));
            !meant.empty()) {
          diags.emit(diag::SyntaxDurationWords, range, text, meant).fix(range, meant);
          t->setType(Jr2Lexer::DURATION);
          t->setText(meant);
          break;
        }
        // Parse on as a number; the builder knows a number that is not all digits was reported.
        diags.emit(diag::SyntaxBadNumber, range, text);
        t->setType(Jr2Lexer::INT);
        break;
      }
      case Jr2Lexer::BAD_SQ_STRING: {
        diags.emit(diag::SyntaxSingleQuotes, range)
            .fix(range, "\"" + text.substr(1, text.size() - 2) + "\"");
        t->setType(Jr2Lexer::STRING);
        t->setText("\"" + text.substr(1, text.size() - 2) + "\"");
        break;
      }
      case Jr2Lexer::BAD_CHAR: {
        std::string hint;
        if (text == "#") {
          // Read the rest of the line as the comment the author meant, so its words are not
          // reported one by one.
          hint = "; comments start with `//`";
          hashLine = t->getLine();
        } else if (text == "'") {
          hint = "; strings are written in double quotes";
        } else if (text == "&" || text == "|") {
          hint = fmt::format("; did you mean `{0}{0}`?", text);
        } else if (text == "@" || text == "$" || text == "`" || text == "^" || text == "~" ||
                   text == "\\") {
          hint = "; remove it";
        } else {
          hint = "; remove it (names are ASCII letters, digits and `_`)";
        }
        auto d = diags.emit(diag::SyntaxBadChar, range, text, hint);
        if (text == "#") d.fix(range, "//");
        continue;
      }
      default:
        break;
    }
    keep(i);
  }
  tokens.erase(tokens.begin() + static_cast<ptrdiff_t>(kept), tokens.end());
}

// Mistakes that would otherwise be reported again at every later token, rewritten in the token
// stream so that each is one report (the builder or this pass gives it):
//  - a reserved word that names a parameter or a `var` (`machine handle(entry: Item)`): the
//    declaration is reported by the builder (SyntaxKeywordAsName); each later use of the word in
//    an expression of the same declaration (`entry.id`, `title: entry`) is read as the name.
//  - a reserved word that names a state (`state done { … }`): reported at the state by the
//    builder; each transition's target that names it in the same declaration (`-> done`,
//    `-> done.ok`, `-> review.done`) is read as the name.
//  - a Pool of runs that forgot `dispatch` (`pool p of w { input: …, wait: true } { … }`):
//    reported here, once, with the fix, and read as `of dispatch w { … }`.
void RecoverTokens(TokenTable& table, const SourceFile& file, Diagnostics& diags) {
  std::vector<LexToken>& tokens = table.tokens;  // in order, all on the default channel
  auto type = [&](size_t i) -> size_t {
    return i < tokens.size() ? table.type(i) : antlr4::Token::EOF;
  };
  // A keyword that can stand in an expression (`done`, `event`, `true` …) is left alone: the
  // parse reads it as what it is.
  auto expressionWord = [](size_t t) {
    return t == Jr2Lexer::DONE || t == Jr2Lexer::ERROR_KW || t == Jr2Lexer::EVENT ||
           t == Jr2Lexer::TRUE_KW || t == Jr2Lexer::FALSE_KW || t == Jr2Lexer::NULL_KW;
  };
  auto before = [](size_t t) {  // a token after which an expression starts
    switch (t) {
      case Jr2Lexer::COLON:
      case Jr2Lexer::ASSIGN:
      case Jr2Lexer::LPAREN:
      case Jr2Lexer::COMMA:
      case Jr2Lexer::LBRACK:
      case Jr2Lexer::EQ:
      case Jr2Lexer::NEQ:
      case Jr2Lexer::LE:
      case Jr2Lexer::GE:
      case Jr2Lexer::AND:
      case Jr2Lexer::OR:
      case Jr2Lexer::COALESCE:
      case Jr2Lexer::LT:
      case Jr2Lexer::GT:
      case Jr2Lexer::PLUS:
      case Jr2Lexer::MINUS:
      case Jr2Lexer::STAR:
      case Jr2Lexer::SLASH:
      case Jr2Lexer::PERCENT:
      case Jr2Lexer::BANG:
      case Jr2Lexer::QUESTION:
      case Jr2Lexer::OUTPUT:
      case Jr2Lexer::IF:
        return true;
      default:
        return false;
    }
  };
  auto topLevel = [](size_t t) {
    return t == Jr2Lexer::MACHINE || t == Jr2Lexer::POOL || t == Jr2Lexer::SOURCE ||
           t == Jr2Lexer::EXTERN || t == Jr2Lexer::TYPE || t == Jr2Lexer::EVENT ||
           t == Jr2Lexer::AGENT || t == Jr2Lexer::WORKFLOW || t == Jr2Lexer::IMPORT;
  };
  std::set<size_t> renamed;  // keywords that name a parameter or `var` of this declaration
  // Keywords that name a state, by declaration (its ordinal among the top-level ones): found
  // first, as a target may come before the state it names.
  std::set<std::pair<int, size_t>> stateWords;
  {
    int depth = 0, decl = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const size_t t = type(i);
      if (depth == 0 && topLevel(t)) ++decl;
      if (t == Jr2Lexer::LBRACE || t == Jr2Lexer::LPAREN) ++depth;
      if (t == Jr2Lexer::RBRACE || t == Jr2Lexer::RPAREN) depth = std::max(0, depth - 1);
      if (IsKeyword(t) && i > 0 && type(i - 1) == Jr2Lexer::STATE) stateWords.insert({decl, t});
    }
  }
  int decl = 0;
  // Whether token `i` stands in a transition's target: after `->`, or after a dot of a dotted
  // name that follows `->`.
  auto inTarget = [&](size_t i) {
    if (i == 0) return false;
    if (type(i - 1) == Jr2Lexer::ARROW) return true;
    size_t k = i;
    while (k >= 2 && type(k - 1) == Jr2Lexer::DOT) k -= 2;
    return k != i && k >= 1 && type(k - 1) == Jr2Lexer::ARROW;
  };
  int braces = 0;
  int parens = 0;
  bool paramList = false;                            // inside the parameter list of a declaration
  std::vector<std::pair<size_t, LexToken>> inserts;  // (index in `tokens`, token)
  for (size_t i = 0; i < tokens.size(); ++i) {
    const size_t t = type(i);
    if (braces == 0 && parens == 0 && topLevel(t)) {
      renamed.clear();
      ++decl;
      // `machine NAME (` / `pool NAME (` …: a parameter list follows.
      if (t != Jr2Lexer::EVENT && t != Jr2Lexer::TYPE && type(i + 2) == Jr2Lexer::LPAREN) {
        paramList = true;
      }
      // `pool NAME [(…)] of WORKFLOW { input|wait: … } {`: a Pool of runs without `dispatch`.
      if (t == Jr2Lexer::POOL) {
        size_t j = i + 2;
        if (type(j) == Jr2Lexer::LPAREN) {
          for (int depth = 0; j < tokens.size(); ++j) {
            if (type(j) == Jr2Lexer::LPAREN) ++depth;
            if (type(j) == Jr2Lexer::RPAREN && --depth == 0) break;
          }
          ++j;
        }
        if (type(j) == Jr2Lexer::OF && type(j + 1) == Jr2Lexer::IDENT) {
          const size_t name = j + 1;
          size_t k = name + 1;
          while (type(k) == Jr2Lexer::DOT) k += 2;
          const std::string key = k + 1 < tokens.size() ? table.text(k + 1) : "";
          if (type(k) == Jr2Lexer::LBRACE && (key == "input" || key == "wait") &&
              type(k + 2) == Jr2Lexer::COLON) {
            size_t close = k;
            for (int depth = 0; close < tokens.size(); ++close) {
              if (type(close) == Jr2Lexer::LBRACE) ++depth;
              if (type(close) == Jr2Lexer::RBRACE && --depth == 0) break;
            }
            if (type(close + 1) == Jr2Lexer::LBRACE) {
              std::string target;
              for (size_t n = name; n < k; ++n) target += table.text(n);
              const Jr2Token named(&table, name);
              const SourceRange at = RangeOf(file, &named);
              diags.emit(diag::SyntaxMissingDispatch, at, target)
                  .fix(SourceRange::point(file.id(), at.begin), "dispatch ");
              // Empty, where the name starts (so on its line and column), with its own text.
              table.texts.emplace_back("dispatch");
              const LexToken d{static_cast<uint32_t>(table.texts.size() - 1),
                               0,
                               tokens[name].start,
                               0,
                               Jr2Lexer::DISPATCH,
                               1};
              inserts.emplace_back(name, d);
            }
          }
        }
      }
    }
    switch (t) {
      case Jr2Lexer::LBRACE:
        ++braces;
        break;
      case Jr2Lexer::RBRACE:
        braces = std::max(0, braces - 1);
        break;
      case Jr2Lexer::LPAREN:
        ++parens;
        break;
      case Jr2Lexer::RPAREN:
        parens = std::max(0, parens - 1);
        if (parens == 0) paramList = false;
        break;
      default:
        break;
    }
    if (IsKeyword(t) && stateWords.count({decl, t}) != 0 && inTarget(i)) {
      table.setType(i, Jr2Lexer::IDENT);
      continue;
    }
    if (!IsKeyword(t) || expressionWord(t)) continue;
    const size_t prev = i > 0 ? type(i - 1) : antlr4::Token::INVALID_TYPE;
    // The declaration: `(KW:` or `, KW:` in a parameter list, or `var KW`.
    if ((paramList && parens == 1 && (prev == Jr2Lexer::LPAREN || prev == Jr2Lexer::COMMA) &&
         type(i + 1) == Jr2Lexer::COLON) ||
        prev == Jr2Lexer::VAR) {
      renamed.insert(t);
      continue;
    }
    if (renamed.count(t) == 0) continue;
    const size_t next = type(i + 1);
    if (before(prev) || next == Jr2Lexer::DOT || next == Jr2Lexer::LBRACK ||
        (next == Jr2Lexer::ASSIGN && !paramList)) {
      table.setType(i, Jr2Lexer::IDENT);
    }
  }
  // Insert the `dispatch` tokens, last first so the earlier positions stay right.
  for (auto it = inserts.rbegin(); it != inserts.rend(); ++it) {
    tokens.insert(tokens.begin() + static_cast<ptrdiff_t>(it->first), it->second);
  }
}

// Reports unclosed brackets (at the opener, with a fix-it at the end of the file) and refuses
// nesting deeper than kMaxNesting. Returns false when the file must not be parsed at all.
bool CheckNesting(TokenTable& table, const SourceFile& file, Diagnostics& diags, bool swallowed,
                  bool* eofReported) {
  const size_t count = table.tokens.size();
  auto range = [&](size_t i) {
    const Jr2Token token(&table, i);
    return RangeOf(file, &token);
  };
  struct Open {
    size_t type;
    size_t token;     // its index
    uint32_t indent;  // the indentation of the opener's line
  };
  // The indentation of the line a token stands on, and whether it is the first on that line.
  auto lineIndent = [&](size_t t, bool* first) {
    const SourceRange r = range(t);
    const uint32_t line = file.lineCol(r.begin).line;
    const uint32_t start = file.lineStart(line);
    const std::string_view text = file.text();
    uint32_t i = start;
    while (i < r.begin && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (first) *first = i == r.begin;
    return i - start;
  };
  std::vector<Open> stack;
  std::optional<Open> misplaced;  // an opener whose closer the indentation says is missing
  size_t closedBy = 0;
  int prefixRun = 0;
  // `?:` chains nest in the parse (`a ? b : c ? d : …`) as deeply as brackets do, and ANTLR's
  // recursion on a million of them took 20 s and 3 GB before any error. A line that starts
  // with anything but `:` or `?` starts the count again, so the optional types of a long list
  // of fields (`a: string?` on each line) never add up.
  int conditionalRun = 0;
  for (size_t token = 0; token < count; ++token) {
    const size_t type = table.type(token);
    if (type == Jr2Lexer::QUESTION) {
      if (++conditionalRun > kMaxNesting) {
        diags.emit(diag::SyntaxTooDeep, range(token), "conditional expressions (`?:`)",
                   kMaxNesting);
        return false;
      }
    } else if (conditionalRun > 0 && type != Jr2Lexer::COLON) {
      bool first = false;
      lineIndent(token, &first);
      if (first) conditionalRun = 0;
    }
    if (type == Jr2Lexer::BANG || type == Jr2Lexer::MINUS) {
      if (++prefixRun > kMaxNesting) {
        diags.emit(diag::SyntaxTooDeep, range(token), "prefix operators", kMaxNesting);
        return false;
      }
    } else {
      prefixRun = 0;
    }
    if (type == Jr2Lexer::LBRACE || type == Jr2Lexer::LPAREN || type == Jr2Lexer::LBRACK) {
      stack.push_back({type, token, lineIndent(token, nullptr)});
      if (stack.size() > static_cast<size_t>(kMaxNesting)) {
        diags.emit(diag::SyntaxTooDeep, range(token), "brackets", kMaxNesting);
        return false;
      }
    } else if (type == Jr2Lexer::RBRACE || type == Jr2Lexer::RPAREN || type == Jr2Lexer::RBRACK) {
      const size_t want = type == Jr2Lexer::RBRACE   ? Jr2Lexer::LBRACE
                          : type == Jr2Lexer::RPAREN ? Jr2Lexer::LPAREN
                                                     : Jr2Lexer::LBRACK;
      bool first = false;
      const uint32_t indent = lineIndent(token, &first);
      // A `}` that starts its line belongs to the nearest `{` whose line is indented no deeper:
      // an opener indented deeper than the closer, with such a `{` below it, lost its own `}`.
      if (type == Jr2Lexer::RBRACE && first && !misplaced) {
        while (stack.size() >= 2 && stack.back().type == Jr2Lexer::LBRACE &&
               stack.back().indent > indent &&
               std::any_of(stack.begin(), stack.end() - 1, [&](const Open& o) {
                 return o.type == Jr2Lexer::LBRACE && o.indent <= indent;
               })) {
          if (!misplaced) misplaced = stack.back(), closedBy = token;
          stack.pop_back();
        }
      }
      // A stray closer is the parser's to report; only pop what it closes.
      if (!stack.empty() && stack.back().type == want) stack.pop_back();
    }
  }
  // An unterminated string, text block or comment swallowed the closers after it; the error
  // reported for it is the one to fix, and an unclosed bracket here would only be its echo.
  if (swallowed) return true;
  if (misplaced) {
    // The block most likely ends before the first later line indented no deeper than its opener.
    size_t endsBefore = closedBy;
    for (size_t t = misplaced->token + 1; t < count; ++t) {
      bool first = false;
      const uint32_t indent = lineIndent(t, &first);
      if (first && indent <= misplaced->indent) {
        endsBefore = t;
        break;
      }
    }
    const SourceRange at = range(endsBefore);
    const uint32_t lineStart = file.lineStart(file.lineCol(at.begin).line);
    diags.emit(diag::SyntaxUnclosed, range(misplaced->token), "{", "}", "the block")
        .fix(SourceRange::point(file.id(), lineStart), std::string(misplaced->indent, ' ') + "}\n")
        .note(diag::NoteBlockEndsByIndentation, at);
    *eofReported = true;
    return true;
  }
  if (!stack.empty()) {
    // No indentation to go by: the innermost bracket still open at the end is the one to close.
    const Open& open = stack.back();
    const char* opener = open.type == Jr2Lexer::LBRACE   ? "{"
                         : open.type == Jr2Lexer::LPAREN ? "("
                                                         : "[";
    const char* closer = open.type == Jr2Lexer::LBRACE   ? "}"
                         : open.type == Jr2Lexer::LPAREN ? ")"
                                                         : "]";
    const char* what = open.type == Jr2Lexer::LBRACE ? "the block" : "the list";
    const auto end = static_cast<uint32_t>(file.text().size());
    // Point the note at the last token, not at the end of the file: trailing comments are not
    // where the author lost the bracket.
    const size_t last = count - 1;  // every token is on the default channel
    diags.emit(diag::SyntaxUnclosed, range(open.token), opener, closer, what)
        .fix(SourceRange::point(file.id(), end), closer)
        .note(diag::NoteFileEndsBracketOpen, range(last));
    *eofReported = true;
  }
  return true;
}

}  // namespace

// Lexes, filters, recovers and checks the nesting of `file`'s tokens, and ends them with EOF,
// frozen for the parse. None when the file must not be parsed at all (CheckNesting).
// `eofReported` is set when a diagnostic already speaks of the end of the file.
std::optional<TokenTable> PrepareTokens(const SourceFile& file, Diagnostics& diags,
                                        bool* eofReported) {
  bool swallowed = false;
  size_t codePoints = 0;
  TokenTable tokens = Lex(file, &codePoints);
  FilterTokens(tokens, file, diags, &swallowed);
  RecoverTokens(tokens, file, diags);
  *eofReported = swallowed;
  if (!CheckNesting(tokens, file, diags, swallowed, eofReported)) return std::nullopt;
  // The parser needs an EOF token at the end.
  tokens.tokens.push_back({0, 0, static_cast<uint32_t>(codePoints), 0, TokenTable::kEof, 0});
  tokens.setText(tokens.tokens.size() - 1, "<EOF>");
  tokens.freeze();
  return tokens;
}

}  // namespace jr2::syntax
