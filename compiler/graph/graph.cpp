#include "compiler/graph/graph.h"

#include <fmt/format.h>
#include <llvm/Support/Casting.h>

#include <cctype>
#include <set>
#include <string_view>
#include <vector>

#include "runtime/include/jr2/meant.h"

namespace jr2::graph {
namespace {

using ir::StateId;
using Kind = ir::State::Kind;

// ---- labels -----------------------------------------------------------------------------------

// A guard, printed back from its tree: shown as `[attempts <= retries]` on its edge. Long guards
// are cut (they label an edge, not replace the source), and so is deep nesting, so printing is
// bounded however large the expression.
constexpr size_t kGuardMax = 48;     // bytes of a guard shown before `…`
constexpr size_t kGuardBudget = 96;  // stop printing once this much is written
constexpr int kMaxExprDepth = 12;
constexpr const char* kEllipsis = "\u2026";

int Precedence(const ast::Expr& e) {
  switch (e.kind) {
    case ast::Expr::Kind::kConditional:
      return 1;
    case ast::Expr::Kind::kBinary:
      return 1 + ast::Precedence(llvm::cast<ast::BinaryExpr>(e).op);
    case ast::Expr::Kind::kUnary:
      return 9;
    case ast::Expr::Kind::kMember:
    case ast::Expr::Kind::kIndex:
    case ast::Expr::Kind::kCall:
    case ast::Expr::Kind::kNonNull:
      return 10;
    default:
      return 11;
  }
}

class ExprPrinter {
 public:
  void print(const ast::Expr* e, int minPrec, int depth) {
    if (out_.size() > kGuardBudget) return;
    if (e == nullptr || depth > kMaxExprDepth) {
      out_ += kEllipsis;
      return;
    }
    const bool parens = Precedence(*e) < minPrec;
    if (parens) out_ += '(';
    printBare(*e, depth + 1);
    if (parens) out_ += ')';
  }

  // The text, cut at kGuardMax bytes (on a UTF-8 boundary).
  std::string take() {
    if (out_.size() <= kGuardMax) return std::move(out_);
    size_t cut = kGuardMax;
    while (cut > 0 && (static_cast<unsigned char>(out_[cut]) & 0xC0) == 0x80) --cut;
    return out_.substr(0, cut) + kEllipsis;
  }

 private:
  void printBare(const ast::Expr& e, int depth) {
    using EK = ast::Expr::Kind;
    switch (e.kind) {
      case EK::kNull:
        out_ += "null";
        return;
      case EK::kBool:
        out_ += llvm::cast<ast::BoolLit>(e).value ? "true" : "false";
        return;
      case EK::kInt:
        out_ += std::to_string(llvm::cast<ast::IntLit>(e).value);
        return;
      case EK::kFloat: {
        std::string text = fmt::format("{}", llvm::cast<ast::FloatLit>(e).value);
        if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
        out_ += text;
        return;
      }
      case EK::kString:
        out_ += '"';
        for (char c : llvm::cast<ast::StringLit>(e).value) {
          if (c == '"' || c == '\\') {
            out_ += '\\';
            out_ += c;
          } else if (c == '\n') {
            out_ += "\\n";
          } else if (c == '\t') {
            out_ += "\\t";
          } else if (static_cast<unsigned char>(c) < 0x20) {
            out_ += ' ';
          } else {
            out_ += c;
          }
          if (out_.size() > kGuardBudget) break;
        }
        out_ += '"';
        return;
      case EK::kDuration:
        out_ += meant::DurationLiteral(llvm::cast<ast::DurationLit>(e).millis);
        return;
      case EK::kName:
        out_ += llvm::cast<ast::NameExpr>(e).name.text;
        return;
      case EK::kMember: {
        const auto& m = llvm::cast<ast::MemberExpr>(e);
        print(m.object.get(), 10, depth);
        out_ += '.';
        out_ += m.member.text;
        return;
      }
      case EK::kIndex: {
        const auto& x = llvm::cast<ast::IndexExpr>(e);
        print(x.object.get(), 10, depth);
        out_ += '[';
        print(x.index.get(), 1, depth);
        out_ += ']';
        return;
      }
      case EK::kCall: {
        const auto& c = llvm::cast<ast::CallExpr>(e);
        print(c.callee.get(), 10, depth);
        out_ += '(';
        for (size_t i = 0; i < c.args.size() && out_.size() <= kGuardBudget; ++i) {
          if (i > 0) out_ += ", ";
          if (c.args[i].name) out_ += c.args[i].name->text + ": ";
          print(c.args[i].value.get(), 1, depth);
        }
        out_ += ')';
        return;
      }
      case EK::kObject:
        out_ += llvm::cast<ast::ObjectExpr>(e).entries.empty() ? "{}"
                                                               : std::string("{") + kEllipsis + "}";
        return;
      case EK::kList:
        out_ += llvm::cast<ast::ListExpr>(e).elements.empty() ? "[]"
                                                              : std::string("[") + kEllipsis + "]";
        return;
      case EK::kUnary: {
        const auto& u = llvm::cast<ast::UnaryExpr>(e);
        out_ += u.op == ast::UnaryOp::kNot ? "!" : "-";
        print(u.operand.get(), 9, depth);
        return;
      }
      case EK::kBinary: {
        const auto& b = llvm::cast<ast::BinaryExpr>(e);
        const int p = Precedence(e);
        print(b.lhs.get(), p, depth);  // left-associative: an equal left operand needs no parens
        out_ += ' ';
        out_ += ast::Spelling(b.op);
        out_ += ' ';
        print(b.rhs.get(), p + 1, depth);
        return;
      }
      case EK::kConditional: {
        const auto& c = llvm::cast<ast::ConditionalExpr>(e);
        print(c.cond.get(), 2, depth);
        out_ += " ? ";
        print(c.then.get(), 1, depth);
        out_ += " : ";
        print(c.otherwise.get(), 1, depth);
        return;
      }
      case EK::kNonNull:
        print(llvm::cast<ast::NonNullExpr>(e).operand.get(), 10, depth);
        out_ += '!';
        return;
    }
  }

  std::string out_;
};

// `approve`, `done as build`, `after 30s`, `always`, each with ` [GUARD]` when guarded.
std::string TransitionLabel(const ast::Transition& t) {
  std::string label;
  switch (t.kind) {
    case ast::Transition::Kind::kOn:
      switch (t.trigger) {
        case ast::Transition::Trigger::kEvent:
          label = t.event.str();
          break;
        case ast::Transition::Trigger::kDone:
          label = "done";
          break;
        case ast::Transition::Trigger::kError:
          label = "error";
          break;
      }
      if (t.trigger != ast::Transition::Trigger::kEvent && t.invokeName)
        label += " as " + t.invokeName->text;
      break;
    case ast::Transition::Kind::kAlways:
      label = "always";
      break;
    case ast::Transition::Kind::kAfter:
      label = "after " + meant::DurationLiteral(t.delayMillis);
      break;
  }
  if (t.guard) {
    ExprPrinter p;
    p.print(t.guard.get(), 0, 0);
    label += " [" + p.take() + "]";
  }
  return label;
}

// How a state is drawn apart from its shape: a Gate and an Agent slot each have a colour.
enum class Role { kPlain, kGate, kAgent };

Role RoleOf(const ir::State& s) {
  Role role = Role::kPlain;
  for (const ast::Invoke* inv : s.invokes) {
    if (inv->kind == ast::Invoke::Kind::kGate) return Role::kGate;
    if (inv->kind == ast::Invoke::Kind::kNamed && inv->target.resolved != nullptr &&
        inv->target.resolved->kind == ast::Decl::Kind::kAgent)
      role = Role::kAgent;
  }
  return role;
}

// One line per invoke: `‖ gate review`, `agent: triager`, `invoke review`, `invoke pool p`,
// `invoke std.command as build`, `invoke extern notify`.
std::vector<std::string> InvokeLines(const ir::State& s) {
  std::vector<std::string> lines;
  for (const ast::Invoke* inv : s.invokes) {
    std::string line;
    switch (inv->kind) {
      case ast::Invoke::Kind::kGate:
        line = "\u2016 gate";  // ‖, a pause sign that the common fonts have
        if (inv->gateName) line += " " + inv->gateName->text;
        break;
      case ast::Invoke::Kind::kExtern:
        line = "invoke extern " + inv->target.str();
        break;
      case ast::Invoke::Kind::kNamed: {
        const ast::Decl* d = inv->target.resolved;
        if (d != nullptr && d->kind == ast::Decl::Kind::kAgent)
          line = "agent: " + inv->target.str();
        else if (d != nullptr && d->kind == ast::Decl::Kind::kPool)
          line = "invoke pool " + inv->target.str();
        else
          line = "invoke " + inv->target.str();
        break;
      }
    }
    if (inv->as) line += " as " + inv->as->text;
    lines.push_back(std::move(line));
  }
  return lines;
}

// ---- the shared model: ids, anchors and edges ---------------------------------------------------

bool IsCluster(const ir::State& s) {
  return s.kind == Kind::kCompound || s.kind == Kind::kParallel;
}

// Words that Mermaid's lexer takes for keywords at the start of a statement, and the id it gives
// its own root: a state of that name gets a `_` after its id.
bool Reserved(const std::string& id) {
  static const std::set<std::string> kWords = {"accdescr",
                                               "acctitle",
                                               "as",
                                               "class",
                                               "classdef",
                                               "click",
                                               "default",
                                               "direction",
                                               "end",
                                               "hide",
                                               "href",
                                               "note",
                                               "root",
                                               "scale",
                                               "state",
                                               "statediagram",
                                               "statediagram-v2",
                                               "style"};
  std::string lower;
  for (char c : id) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return kWords.count(lower) > 0;
}

class Namer {
 public:
  std::string take(std::string base) {
    if (Reserved(base)) base += '_';
    while (used_.count(base) > 0) base += '_';
    used_.insert(base);
    return base;
  }

 private:
  std::set<std::string> used_;
};

struct Edge {
  StateId from = ir::kNoState;
  StateId to = ir::kNoState;
  // A compound end drawn at the cluster's border (DOT ltail/lhead; a Mermaid edge to the
  // composite). An end that is an ancestor of the other end cannot be: it is drawn at the
  // cluster's anchor, a small "any state" node inside it.
  bool fromBorder = false;
  bool toBorder = false;
  bool targetless = false;
  std::string label;
};

struct Model {
  explicit Model(const ir::Machine& machine) : m(machine) {
    const size_t n = m.states.size();
    ids.resize(n);
    initialIds.resize(n);
    anchorIds.resize(n);
    regionIds.resize(n);
    anchorUsed.assign(n, false);
    anchorVisible.assign(n, false);
    Namer namer;
    // Ids from paths (`review.waiting` → `review__waiting`); the root has none.
    for (size_t i = 1; i < n; ++i) {
      std::string id;
      for (char c : m.states[i].path) {
        if (c == '.')
          id += "__";
        else
          id += c;
      }
      ids[i] = namer.take(id);
    }
    auto prefix = [&](size_t i) { return i == 0 ? std::string() : ids[i] + "__"; };
    for (size_t i = 0; i < n; ++i) {
      const ir::State& s = m.states[i];
      if (s.kind == Kind::kCompound && s.initial != ir::kNoState)
        initialIds[i] = namer.take(prefix(i) + "initial");
      if (IsCluster(s)) anchorIds[i] = namer.take(prefix(i) + "any");
      if (s.parent != ir::kNoState && m.states[s.parent].kind == Kind::kParallel && !IsCluster(s))
        regionIds[i] = namer.take(ids[i] + "__region");
    }
    for (const ir::State& s : m.states) {
      // The initial marker points at the border of an initial child that is a cluster.
      if (s.kind == Kind::kCompound && s.initial != ir::kNoState) useAnchor(s.initial, true);
      for (const ir::Transition& t : s.transitions) {
        Edge e;
        e.from = t.source;
        e.targetless = t.target == ir::kNoState;
        e.to = e.targetless ? t.source : t.target;
        e.fromBorder = e.from != 0 && IsCluster(m.states[e.from]) && !m.contains(e.from, e.to);
        e.toBorder = e.to != 0 && IsCluster(m.states[e.to]) && !m.contains(e.to, e.from);
        e.label = TransitionLabel(*t.ast);
        useAnchor(e.from, e.fromBorder);
        useAnchor(e.to, e.toBorder);
        edges.push_back(std::move(e));
      }
    }
  }

  void useAnchor(StateId s, bool border) {
    if (!IsCluster(m.states[s])) return;
    anchorUsed[s] = true;
    if (!border) anchorVisible[s] = true;
  }

  std::string describe(StateId s) const {
    return s == 0 ? "machine " + m.decl->name.text : m.states[s].path;
  }

  const ir::Machine& m;
  std::vector<std::string> ids;
  std::vector<std::string> initialIds;  // compound states with an initial child
  std::vector<std::string> anchorIds;   // compound and parallel states (and the root)
  std::vector<std::string> regionIds;   // atomic and final regions of a parallel state
  std::vector<bool> anchorUsed;
  std::vector<bool> anchorVisible;
  std::vector<Edge> edges;
};

// The lines of a state's label: its name (with `(parallel)`), then one per invoke.
std::vector<std::string> LabelLines(const Model& md, StateId id) {
  const ir::State& s = md.m.states[id];
  std::vector<std::string> lines;
  lines.push_back(id == 0 ? "machine " + md.m.decl->name.text : s.name);
  if (s.kind == Kind::kParallel) lines.back() += " (parallel)";
  for (std::string& l : InvokeLines(s)) lines.push_back(std::move(l));
  return lines;
}

// ---- DOT --------------------------------------------------------------------------------------

// The body of a DOT quoted string: `"` and `\` escaped (so no `\n`, `\l` or `\N` of the text is
// taken for Graphviz's own escapes), line breaks as `\n`, other control characters dropped.
std::string DotEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) {
      out += c;
    }
  }
  return out;
}

std::string DotQuote(std::string_view text) { return "\"" + DotEscape(text) + "\""; }

std::string DotLabel(const std::vector<std::string>& lines) {
  std::string out = "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\\n";
    out += DotEscape(lines[i]);
  }
  return out + "\"";
}

constexpr const char* kGateFill = "#fff3c4";
constexpr const char* kGateLine = "#b8860b";
constexpr const char* kAgentFill = "#dbeafe";
constexpr const char* kAgentLine = "#1d4ed8";

class DotWriter {
 public:
  explicit DotWriter(const Model& md) : md_(md) {}

  std::string render() {
    const std::string& name = md_.m.decl->name.text;
    out_ +=
        fmt::format("// The statechart of machine `{}`, drawn by `jr2c graph`.\n", DotEscape(name));
    out_ += fmt::format("digraph {} {{\n", DotQuote(name));
    out_ += fmt::format(
        "  graph [compound=true, fontname=\"Helvetica\", fontsize=13, label={}, labelloc=t, "
        "nodesep=0.35, ranksep=0.45];\n",
        DotLabel(LabelLines(md_, 0)));
    out_ +=
        "  node [fontname=\"Helvetica\", fontsize=11, shape=box, style=rounded, "
        "margin=\"0.12,0.06\"];\n"
        "  edge [fontname=\"Helvetica\", fontsize=9, arrowsize=0.7];\n";
    content(0, 1);
    for (const Edge& e : md_.edges) edge(e);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  void line(int indent, const std::string& text) {
    out_.append(static_cast<size_t>(indent) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  // The node an edge ends at: the state itself, or a cluster's anchor.
  const std::string& endpoint(StateId s) const {
    return IsCluster(md_.m.states[s]) ? md_.anchorIds[s] : md_.ids[s];
  }

  static std::string roleAttrs(Role role) {
    switch (role) {
      case Role::kGate:
        return fmt::format("style=\"rounded,filled,bold\", fillcolor=\"{}\", color=\"{}\"",
                           kGateFill, kGateLine);
      case Role::kAgent:
        return fmt::format("style=\"rounded,filled\", fillcolor=\"{}\", color=\"{}\"", kAgentFill,
                           kAgentLine);
      case Role::kPlain:
        break;
    }
    return "";
  }

  // The inside of a cluster (or of the whole graph, for the root): its anchor, its initial
  // marker, its children.
  void content(StateId id, int indent) {
    const ir::State& s = md_.m.states[id];
    if (md_.anchorUsed[id]) {
      if (md_.anchorVisible[id]) {
        line(indent, fmt::format("{} [shape=circle, label=\"\", width=0.14, height=0.14, "
                                 "fixedsize=true, color=\"#555555\", tooltip={}];",
                                 DotQuote(md_.anchorIds[id]),
                                 DotQuote("any state of " + md_.describe(id))));
      } else {
        line(indent,
             fmt::format("{} [shape=point, style=invis, width=0.01, height=0.01, label=\"\"];",
                         DotQuote(md_.anchorIds[id])));
      }
    }
    if (!md_.initialIds[id].empty()) {
      line(indent, fmt::format("{} [shape=point, width=0.12, height=0.12, tooltip={}];",
                               DotQuote(md_.initialIds[id]),
                               DotQuote("initial state of " + md_.describe(id))));
    }
    for (StateId c : s.children) state(c, indent, s.kind == Kind::kParallel);
    if (!md_.initialIds[id].empty()) {
      const ir::State& init = md_.m.states[s.initial];
      std::string attrs;
      if (IsCluster(init))
        attrs = fmt::format(" [lhead={}]", DotQuote("cluster_" + md_.ids[s.initial]));
      line(indent, fmt::format("{} -> {}{};", DotQuote(md_.initialIds[id]),
                               DotQuote(endpoint(s.initial)), attrs));
    }
  }

  void state(StateId id, int indent, bool region) {
    const ir::State& s = md_.m.states[id];
    const Role role = RoleOf(s);
    if (IsCluster(s)) {
      line(indent, fmt::format("subgraph {} {{", DotQuote("cluster_" + md_.ids[id])));
      std::string style = "rounded";
      if (region) style += ",dashed";
      std::string colors;
      if (role == Role::kGate) {
        style += ",filled,bold";
        colors = fmt::format(" fillcolor=\"{}\"; color=\"{}\";", kGateFill, kGateLine);
      } else if (role == Role::kAgent) {
        style += ",filled";
        colors = fmt::format(" fillcolor=\"{}\"; color=\"{}\";", kAgentFill, kAgentLine);
      }
      line(indent + 1, fmt::format("label={}; tooltip={}; style=\"{}\";{}",
                                   DotLabel(LabelLines(md_, id)), DotQuote(s.path), style, colors));
      content(id, indent + 1);
      line(indent, "}");
      return;
    }
    int inner = indent;
    if (region) {
      // An atomic region of a parallel state still gets its dashed frame.
      line(indent, fmt::format("subgraph {} {{", DotQuote("cluster_" + md_.regionIds[id])));
      line(indent + 1, "label=\"\"; style=\"rounded,dashed\";");
      inner = indent + 1;
    }
    std::string attrs =
        fmt::format("label={}, tooltip={}", DotLabel(LabelLines(md_, id)), DotQuote(s.path));
    if (s.kind == Kind::kFinal) {
      attrs += ", shape=doublecircle, style=solid, margin=\"0.02\", fontsize=10";
    } else if (role != Role::kPlain) {
      attrs += ", " + roleAttrs(role);
    }
    line(inner, fmt::format("{} [{}];", DotQuote(md_.ids[id]), attrs));
    if (region) line(indent, "}");
  }

  void edge(const Edge& e) {
    std::string attrs = "label=" + DotQuote(e.label);
    if (e.fromBorder) attrs += ", ltail=" + DotQuote("cluster_" + md_.ids[e.from]);
    if (e.toBorder) attrs += ", lhead=" + DotQuote("cluster_" + md_.ids[e.to]);
    if (e.targetless) attrs += ", style=dotted";
    line(1, fmt::format("{} -> {} [{}];", DotQuote(endpoint(e.from)), DotQuote(endpoint(e.to)),
                        attrs));
  }

  const Model& md_;
  std::string out_;
};

// ---- Mermaid ----------------------------------------------------------------------------------

// Text for a Mermaid label. Mermaid has no backslash escapes: a character that its lexer, its
// HTML sanitizing or its Markdown would take for syntax is written as an entity code (`#60;`),
// which it decodes after parsing. That is `#`; `;` (it ends a statement); `<`; `*`, `` ` `` and
// `\` (Markdown); `_` where Markdown could read it as emphasis (not inside a word: `run_tests`
// stays); `&` before a name (an HTML entity); `"` in a state's quoted label; in an edge label a
// `:` that another `:` or the end follows (`::` would end the label); and in a note every `:`.
enum class Where { kState, kEdge, kNote };

std::string MermaidEscape(std::string_view text, Where where) {
  auto alnum = [&](size_t i) {
    return i < text.size() && std::isalnum(static_cast<unsigned char>(text[i])) != 0;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    bool escape = false;
    switch (c) {
      case '#':
      case ';':
      case '<':
      case '*':
      case '`':
      case '\\':
        escape = true;
        break;
      case '_':
        escape = !(i > 0 && alnum(i - 1) && alnum(i + 1));
        break;
      case '&':  // `&lt;` would be read as an HTML entity; `&&` is safe
        escape = alnum(i + 1) || (i + 1 < text.size() && text[i + 1] == '#');
        break;
      case '"':
        escape = where == Where::kState;
        break;
      case ':':
        escape = where == Where::kNote ||
                 (where == Where::kEdge && (i + 1 == text.size() || text[i + 1] == ':'));
        break;
      case '\n':
        out += where == Where::kEdge ? " " : "<br/>";
        continue;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) continue;
    }
    if (escape)
      out += fmt::format("#{};", static_cast<int>(c));
    else
      out += c;
  }
  return out;
}

// A state's label lines: on separate lines in a state's box; a composite's title has room for
// one line only, so there they are joined by ` · `.
std::string MermaidLabel(const std::vector<std::string>& lines, bool cluster,
                         Where where = Where::kState) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += cluster ? " \u00b7 " : "<br/>";
    out += MermaidEscape(lines[i], where);
  }
  return out;
}

class MermaidWriter {
 public:
  explicit MermaidWriter(const Model& md) : md_(md) {}

  std::string render() {
    out_ += "stateDiagram-v2\n";
    line(1, "%% The statechart of machine `" + MermaidEscape(md_.m.decl->name.text, Where::kState) +
                "`, drawn by `jr2c graph`.");
    content(0, 1);
    // The machine's own invokes have no state box to go in: a note on its initial state.
    const ir::State& root = md_.m.root();
    if (!root.invokes.empty() && root.initial != ir::kNoState) {
      std::vector<std::string> lines = LabelLines(md_, 0);
      line(1, fmt::format("note left of {} : {}", md_.ids[root.initial],
                          MermaidLabel(lines, false, Where::kNote)));
    }
    for (const Edge& e : md_.edges) {
      std::string label = MermaidEscape(e.label, Where::kEdge);
      if (e.targetless) label += " (stays)";
      line(1, fmt::format("{} --> {} : {}", endpoint(e.from, e.fromBorder),
                          endpoint(e.to, e.toBorder), label));
    }
    std::string gates, agents;
    for (size_t i = 1; i < md_.m.states.size(); ++i) {
      const Role role = RoleOf(md_.m.states[i]);
      std::string& list = role == Role::kGate ? gates : agents;
      if (role == Role::kPlain) continue;
      if (!list.empty()) list += ',';
      list += md_.ids[i];
    }
    bool anchors = false;
    for (size_t i = 0; i < md_.m.states.size(); ++i) anchors = anchors || md_.anchorVisible[i];
    if (!gates.empty()) {
      line(1,
           fmt::format("classDef gate fill:{},stroke:{},stroke-width:2px", kGateFill, kGateLine));
      line(1, "class " + gates + " gate");
    }
    if (!agents.empty()) {
      line(1, fmt::format("classDef agent fill:{},stroke:{}", kAgentFill, kAgentLine));
      line(1, "class " + agents + " agent");
    }
    if (anchors) {
      std::string list;
      for (size_t i = 0; i < md_.m.states.size(); ++i) {
        if (!md_.anchorVisible[i]) continue;
        if (!list.empty()) list += ',';
        list += md_.anchorIds[i];
      }
      line(1, "classDef anystate stroke-dasharray:4 3,font-style:italic");
      line(1, "class " + list + " anystate");
    }
    return std::move(out_);
  }

 private:
  void line(int indent, const std::string& text) {
    out_.append(static_cast<size_t>(indent) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  std::string endpoint(StateId s, bool border) const {
    if (!IsCluster(md_.m.states[s]) || border) return md_.ids[s];
    return md_.anchorIds[s];
  }

  void content(StateId id, int indent) {
    const ir::State& s = md_.m.states[id];
    if (md_.anchorVisible[id]) {
      line(indent,
           fmt::format("state \"{}\" as {}", id == 0 ? "any state" : "any state of " + s.name,
                       md_.anchorIds[id]));
    }
    if (s.kind == Kind::kCompound && s.initial != ir::kNoState)
      line(indent, "[*] --> " + md_.ids[s.initial]);
    for (size_t i = 0; i < s.children.size(); ++i) {
      if (i > 0 && s.kind == Kind::kParallel) line(indent, "--");
      state(s.children[i], indent);
    }
  }

  void state(StateId id, int indent) {
    const ir::State& s = md_.m.states[id];
    const std::string label = MermaidLabel(LabelLines(md_, id), IsCluster(s));
    if (IsCluster(s)) {
      line(indent, fmt::format("state \"{}\" as {} {{", label, md_.ids[id]));
      content(id, indent + 1);
      line(indent, "}");
      return;
    }
    line(indent, fmt::format("state \"{}\" as {}", label, md_.ids[id]));
    if (s.kind == Kind::kFinal) line(indent, md_.ids[id] + " --> [*]");
  }

  const Model& md_;
  std::string out_;
};

}  // namespace

namespace {

std::string ExprText(const ast::Expr* e) {
  if (e == nullptr) return {};
  ExprPrinter p;
  p.print(e, 0, 0);
  return p.take();
}

// The lines of each box of a Pool's picture, shared by both formats.
struct PoolPicture {
  std::string name;
  std::vector<std::string> source;  // empty: no `source:`
  std::vector<std::string> pool;
  std::vector<std::string> worker;
  std::string wake;  // the event the `source` Gate takes, or ""
};

PoolPicture DescribePool(const ast::PoolDecl& p) {
  PoolPicture pic;
  pic.name = p.name.text;
  if (p.source) {
    pic.source.push_back("source " + ExprText(p.source.get()));
    if (const auto* s = llvm::dyn_cast_or_null<ast::SourceDecl>(p.sourceRef.resolved)) {
      const char* form = s->form == ast::SourceDecl::Form::kNext   ? "next"
                         : s->form == ast::SourceDecl::Form::kRead ? "read"
                         : s->form == ast::SourceDecl::Form::kPush ? "push"
                                                                   : "";
      if (s->call) {
        std::string call = s->call->function.str() + "(";
        for (size_t i = 0; i < s->call->args.size(); ++i) {
          if (i > 0) call += ", ";
          call += ExprText(s->call->args[i].value.get());
        }
        pic.source.emplace_back(fmt::format("{}: {})", form, call));
      } else if (*form != '\0') {
        pic.source.emplace_back(form);
      }
      if (s->wake) pic.wake = s->wake->str();
    }
  }
  pic.pool.emplace_back("pool " + p.name.text);
  pic.pool.emplace_back("cap " + (p.cap ? ExprText(p.cap.get()) : std::string("(default)")));
  if (p.itemId) pic.pool.emplace_back("item_id " + ExprText(p.itemId.get()));
  if (p.failures == ast::PoolDecl::Failures::kReport) pic.pool.emplace_back("failures: report");
  if (const auto* b = llvm::dyn_cast_or_null<ast::BoolLit>(p.standing.get()); b && b->value) {
    pic.pool.emplace_back("standing");
  }
  pic.worker.emplace_back((p.worker.dispatch ? "dispatch " : "worker ") + p.worker.target.str());
  pic.worker.emplace_back(p.worker.dispatch ? "one run per item" : "one machine per item");
  return pic;
}

}  // namespace

std::string RenderPool(const ast::PoolDecl& pool, Format format) {
  const PoolPicture pic = DescribePool(pool);
  std::string out;
  if (format == Format::kDot) {
    out += fmt::format("// The Pool `{}`, drawn by `jr2c graph`.\n", DotEscape(pic.name));
    out += fmt::format("digraph {} {{\n", DotQuote(pic.name));
    out += fmt::format(
        "  graph [fontname=\"Helvetica\", fontsize=13, label={}, labelloc=t, rankdir=LR];\n",
        DotQuote("pool " + pic.name));
    out +=
        "  node [fontname=\"Helvetica\", fontsize=11, shape=box, style=rounded, "
        "margin=\"0.12,0.06\"];\n";
    out += "  edge [fontname=\"Helvetica\", fontsize=9, arrowsize=0.7];\n";
    if (!pic.source.empty()) {
      out += fmt::format("  \"source\" [label={}, shape=cylinder, style=solid];\n",
                         DotLabel(pic.source));
    }
    out += fmt::format("  \"pool\" [label={}, style=\"rounded,bold\"];\n", DotLabel(pic.pool));
    out += fmt::format("  \"worker\" [label={}, peripheries=2];\n", DotLabel(pic.worker));
    if (!pic.wake.empty()) {
      out += fmt::format(
          "  \"gate\" [label={}, style=\"rounded,filled\", fillcolor=\"{}\", color=\"{}\"];\n",
          DotLabel({"Gate source", "takes " + pic.wake}), kGateFill, kGateLine);
      out += "  \"gate\" -> \"source\" [label=\"wake\"];\n";
    }
    if (!pic.source.empty()) out += "  \"source\" -> \"pool\" [label=\"items\"];\n";
    out += "  \"pool\" -> \"worker\" [label=\"claim (under cap)\"];\n";
    out += "  \"worker\" -> \"pool\" [label=\"settled / failed\", style=dashed];\n";
    out += "}\n";
    return out;
  }
  auto label = [](const std::vector<std::string>& lines) {
    std::string l;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) l += "<br/>";
      l += MermaidEscape(lines[i], Where::kState);
    }
    return l;
  };
  out += "%% The Pool `" + MermaidEscape(pic.name, Where::kState) + "`, drawn by `jr2c graph`.\n";
  out += "flowchart LR\n";
  if (!pic.source.empty()) out += "  source[(\"" + label(pic.source) + "\")]\n";
  out += "  pool(\"" + label(pic.pool) + "\")\n";
  out += "  worker[[\"" + label(pic.worker) + "\"]]\n";
  if (!pic.wake.empty()) {
    out += "  gate{{\"" + label({"Gate source", "takes " + pic.wake}) + "\"}}\n";
    out += "  gate -- wake --> source\n";
  }
  if (!pic.source.empty()) out += "  source -- items --> pool\n";
  out += "  pool -- claim (under cap) --> worker\n";
  out += "  worker -. settled / failed .-> pool\n";
  return out;
}

std::string Render(const ir::Machine& machine, Format format) {
  const Model model(machine);
  switch (format) {
    case Format::kDot:
      return DotWriter(model).render();
    case Format::kMermaid:
      return MermaidWriter(model).render();
  }
  return {};
}

std::string WithCaption(std::string picture, const std::string& caption, Format format) {
  if (caption.empty()) return picture;
  if (format == Format::kMermaid) return picture + "%% " + caption + "\n";
  std::string escaped;
  for (char c : caption) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  // A second line of the picture's title (the graph's own label, at its top).
  const size_t graphLine = picture.find("  graph [");
  const size_t label =
      graphLine == std::string::npos ? graphLine : picture.find("label=\"", graphLine);
  if (label != std::string::npos && label < picture.find('\n', graphLine)) {
    size_t close = label + 7;
    while (close < picture.size() && picture[close] != '"') close += picture[close] == '\\' ? 2 : 1;
    picture.insert(close, "\\n" + escaped);
    return picture;
  }
  const size_t end = picture.rfind('}');
  if (end == std::string::npos) return picture;
  picture.insert(end, fmt::format("  label=\"{}\";\n", escaped));
  return picture;
}

}  // namespace jr2::graph
