// The `.jr2` abstract syntax tree: our own types, built by the syntax phase from ANTLR's parse
// tree (which never leaves compiler/syntax). Every node carries the SourceRange it came from.
// Nodes are plain structs owned through unique_ptr; expressions and declarations use LLVM-style
// RTTI (`llvm::dyn_cast<ast::MemberExpr>(e)`) so later phases can switch on their kind.
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/source/source.h"

namespace jr2::sema {
struct Type;
}  // namespace jr2::sema

namespace jr2::ast {

// The text of a name: a view (see Name) that reads as a std::string wherever code wants one (a
// map's key, a message). It is made from a string_view or a literal, never from a std::string,
// which could be a temporary the view would outlive.
class Text {
 public:
  Text() = default;
  Text(std::string_view view) : view_(view) {}   // NOLINT(google-explicit-constructor)
  Text(const char* literal) : view_(literal) {}  // NOLINT(google-explicit-constructor)
  Text(const std::string&) = delete;             // a view of a temporary would dangle

  operator std::string_view() const { return view_; }  // NOLINT(google-explicit-constructor)
  operator std::string() const { return str(); }       // NOLINT(google-explicit-constructor)
  std::string_view view() const { return view_; }
  std::string str() const { return std::string(view_); }

  bool empty() const { return view_.empty(); }
  size_t size() const { return view_.size(); }
  const char* data() const { return view_.data(); }
  char operator[](size_t i) const { return view_[i]; }
  char front() const { return view_.front(); }
  char back() const { return view_.back(); }
  std::string_view::const_iterator begin() const { return view_.begin(); }
  std::string_view::const_iterator end() const { return view_.end(); }
  std::string_view substr(size_t at, size_t n = std::string_view::npos) const {
    return view_.substr(at, n);
  }
  size_t find(std::string_view what, size_t at = 0) const { return view_.find(what, at); }
  size_t find(char what, size_t at = 0) const { return view_.find(what, at); }
  size_t rfind(char what, size_t at = std::string_view::npos) const {
    return view_.rfind(what, at);
  }

  friend bool operator==(Text a, Text b) { return a.view_ == b.view_; }
  friend bool operator!=(Text a, Text b) { return a.view_ != b.view_; }
  friend bool operator<(Text a, Text b) { return a.view_ < b.view_; }
  friend bool operator==(Text a, const char* b) { return a.view_ == b; }
  friend bool operator!=(Text a, const char* b) { return a.view_ != b; }
  friend bool operator==(const char* a, Text b) { return a == b.view_; }
  friend bool operator!=(const char* a, Text b) { return a != b.view_; }
  friend bool operator==(Text a, const std::string& b) { return a.view_ == b; }
  friend bool operator!=(Text a, const std::string& b) { return a.view_ != b; }
  friend bool operator==(const std::string& a, Text b) { return a == b.view_; }
  friend bool operator!=(const std::string& a, Text b) { return a != b.view_; }
  friend std::string operator+(const std::string& a, Text b) { return a + std::string(b.view_); }
  friend std::string operator+(const char* a, Text b) { return a + std::string(b.view_); }
  friend std::string operator+(Text a, const std::string& b) { return std::string(a.view_) + b; }
  friend std::string operator+(Text a, const char* b) { return std::string(a.view_) + b; }
  friend std::string operator+(Text a, char b) { return std::string(a.view_) + b; }
  friend std::ostream& operator<<(std::ostream& out, Text t) { return out << t.view_; }

 private:
  std::string_view view_;
};

// A name as written, with its place. The text is a view: of the source file, which outlives
// every tree made from it (the SourceManager owns it for the whole compilation), or, for a name
// that is not the source's bytes at its range (a token ANTLR's recovery made up, or a recovered
// name of several tokens), of the copy its File keeps (File::texts). 32 bytes; a
// std::string made it 48, in every node that names something, and the AST is most of a check's
// peak memory (#15).
struct Name {
  Text text;
  SourceRange range;
};

struct Decl;

// `a` or `a.b.c` (an imported `stem.name`, `std.backlog`, or a dotted state path).
struct QualName {
  std::vector<Name> parts;
  SourceRange range;
  // The declaration this name refers to, set by sema's name resolution (null for state paths,
  // undeclared externs, and names that did not resolve).
  const Decl* resolved = nullptr;

  std::string str() const;
  bool isSimple() const { return parts.size() == 1; }
};

// ---- types ------------------------------------------------------------------------------------

struct TypeRef {
  enum class Kind {
    kNamed,    // `string`, `Ticket`, `tickets.Ticket`, `list<T>`, `map<T>` (args filled)
    kLiteral,  // `"approved"`
    kUnion,    // `"a" | "b"` (members)
  };
  Kind kind = Kind::kNamed;
  SourceRange range;
  QualName name;                               // kNamed
  std::vector<std::unique_ptr<TypeRef>> args;  // kNamed: generic arguments; kUnion: members
  std::string literal;                         // kLiteral: the decoded string
  bool optional = false;                       // a trailing `?` applies to the whole type
  // The type sema's checker gave it (sema::CheckTypes, which checks a program once); null
  // before. In the node, as QualName::resolved is: a map beside the tree cost 48 bytes a
  // TypeRef at a check's peak, and the slot costs none (a TypeRef's allocation has room).
  mutable const sema::Type* checked = nullptr;
};

// ---- expressions ------------------------------------------------------------------------------

struct Expr {
  enum class Kind {
    kNull,
    kBool,
    kInt,
    kFloat,
    kString,
    kDuration,
    kName,
    kMember,
    kIndex,
    kCall,
    kObject,
    kList,
    kUnary,
    kBinary,
    kConditional,
    kNonNull,
  };
  explicit Expr(Kind k, SourceRange r) : kind(k), range(r) {}
  virtual ~Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;

  const Kind kind;
  SourceRange range;
};

using ExprPtr = std::unique_ptr<Expr>;

template <Expr::Kind K>
struct ExprOf : Expr {
  explicit ExprOf(SourceRange r) : Expr(K, r) {}
  static bool classof(const Expr* e) { return e->kind == K; }
};

struct NullLit : ExprOf<Expr::Kind::kNull> {
  using ExprOf::ExprOf;
};
struct BoolLit : ExprOf<Expr::Kind::kBool> {
  using ExprOf::ExprOf;
  bool value = false;
};
struct IntLit : ExprOf<Expr::Kind::kInt> {
  using ExprOf::ExprOf;
  int64_t value = 0;
};
struct FloatLit : ExprOf<Expr::Kind::kFloat> {
  using ExprOf::ExprOf;
  double value = 0;
};
struct StringLit : ExprOf<Expr::Kind::kString> {
  using ExprOf::ExprOf;
  std::string value;  // decoded (escapes applied, text-block indentation removed)
};
// `250ms 30s 5m 2h 1d`, held in milliseconds.
struct DurationLit : ExprOf<Expr::Kind::kDuration> {
  using ExprOf::ExprOf;
  int64_t millis = 0;
};
// A bare name: a parameter, a `var`, `item`, `input`, `event`, `done`, `std`, a declaration …
struct NameExpr : ExprOf<Expr::Kind::kName> {
  using ExprOf::ExprOf;
  Name name;
};
struct MemberExpr : ExprOf<Expr::Kind::kMember> {
  using ExprOf::ExprOf;
  ExprPtr object;
  Name member;
};
struct IndexExpr : ExprOf<Expr::Kind::kIndex> {
  using ExprOf::ExprOf;
  ExprPtr object;
  ExprPtr index;
};
// An argument: positional (`name` empty) or named (`name: expr`).
struct Arg {
  std::optional<Name> name;
  ExprPtr value;
};
struct CallExpr : ExprOf<Expr::Kind::kCall> {
  using ExprOf::ExprOf;
  ExprPtr callee;
  std::vector<Arg> args;
};
struct ObjectEntry {
  Name key;
  ExprPtr value;
};
struct ObjectExpr : ExprOf<Expr::Kind::kObject> {
  using ExprOf::ExprOf;
  std::vector<ObjectEntry> entries;
};
struct ListExpr : ExprOf<Expr::Kind::kList> {
  using ExprOf::ExprOf;
  std::vector<ExprPtr> elements;
};
enum class UnaryOp { kNot, kNeg };
struct UnaryExpr : ExprOf<Expr::Kind::kUnary> {
  using ExprOf::ExprOf;
  UnaryOp op = UnaryOp::kNot;
  SourceRange opRange;
  ExprPtr operand;
};
enum class BinaryOp {
  kMul,
  kDiv,
  kMod,
  kAdd,
  kSub,
  kLt,
  kLe,
  kGt,
  kGe,
  kEq,
  kNe,
  kAnd,
  kOr,
  kCoalesce
};
const char* Spelling(BinaryOp op);
// How tightly a binary operator binds (docs/language.md's precedence table): 1 for `??` up to 7
// for `* / %`. Each level groups to the left; `?:` binds looser than any, the prefix and postfix
// operators tighter. The parser groups by it, and printers bracket by it.
int Precedence(BinaryOp op);
struct BinaryExpr : ExprOf<Expr::Kind::kBinary> {
  using ExprOf::ExprOf;
  BinaryOp op = BinaryOp::kAdd;
  SourceRange opRange;
  ExprPtr lhs;
  ExprPtr rhs;
};
struct ConditionalExpr : ExprOf<Expr::Kind::kConditional> {
  using ExprOf::ExprOf;
  ExprPtr cond;
  ExprPtr then;
  ExprPtr otherwise;
};
// `x!`: x must not be null here; a null is a defect of the run.
struct NonNullExpr : ExprOf<Expr::Kind::kNonNull> {
  using ExprOf::ExprOf;
  ExprPtr operand;
};

// ---- shared pieces ----------------------------------------------------------------------------

// `name: TYPE ["description"] [= default]` in a type or an event.
struct Field {
  Name name;
  std::unique_ptr<TypeRef> type;
  std::optional<std::string> description;
  ExprPtr defaultValue;
  SourceRange range;
};

// `name: TYPE [= default]` in a parameter list.
struct Param {
  Name name;
  std::unique_ptr<TypeRef> type;
  ExprPtr defaultValue;
  SourceRange range;
};

// ---- actions ----------------------------------------------------------------------------------

struct Action {
  enum class Kind { kAssign, kFail, kLog };
  Kind kind = Kind::kAssign;
  SourceRange range;
  Name target;     // kAssign
  ExprPtr value;   // kAssign: the value; kFail: the reason; kLog: the logged value
  ExprPtr detail;  // kFail: the optional detail
};

// ---- machine members --------------------------------------------------------------------------

struct Transition {
  enum class Kind { kOn, kAlways, kAfter };
  enum class Trigger { kEvent, kDone, kError };
  Kind kind = Kind::kOn;
  SourceRange range;         // the whole transition
  SourceRange keywordRange;  // `on` / `always` / `after`
  Trigger trigger = Trigger::kEvent;
  QualName event;                  // kOn + kEvent
  std::optional<Name> invokeName;  // `on done as NAME` / `on error as NAME`
  SourceRange triggerRange;        // the event name, or `done`/`error` (with its `as NAME`)
  SourceRange delayRange;          // beside triggerRange: no padding between them
  int64_t delayMillis = 0;         // kAfter
  ExprPtr guard;
  std::optional<QualName> target;  // none: a targetless transition stays
  std::vector<Action> actions;
};

struct Invoke {
  enum class Kind {
    kGate,    // invoke gate [NAME] [{ META }]
    kNamed,   // invoke AGENT / MACHINE(ARGS) / POOL(ARGS) / std.EFFECT(ARGS): sema decides which
    kExtern,  // invoke extern FN(ARGS)
  };
  Kind kind = Kind::kNamed;
  SourceRange range;
  QualName target;               // kNamed / kExtern
  std::optional<Name> gateName;  // kGate: an authored Gate name
  std::vector<Arg> args;
  bool hasArgList = false;
  std::unique_ptr<ObjectExpr> object;  // kGate: meta; an Agent: `{ prompt: EXPR }`
  std::optional<Name> as;
};

struct State;

// The members of a state body (and of a machine body, which is the root state).
struct StateBody {
  std::vector<std::unique_ptr<State>> states;
  std::vector<Transition> transitions;
  std::vector<Invoke> invokes;
  std::vector<std::vector<Action>> entry;  // each `entry { … }` block in order
  std::vector<std::vector<Action>> exit;
};

struct State {
  Name name;
  SourceRange range;
  bool initial = false;
  bool final = false;
  bool parallel = false;
  bool hasBody = false;  // beside the other flags: a State fits malloc's 240-byte class
  SourceRange initialRange, finalRange, parallelRange;  // valid when the modifier is written
  SourceRange bodyRange;
  StateBody body;
};

struct Var {
  Name name;
  std::unique_ptr<TypeRef> type;
  ExprPtr init;
  SourceRange range;
};

// ---- declarations -----------------------------------------------------------------------------

struct Decl {
  enum class Kind { kType, kEvent, kAgent, kExtern, kSource, kMachine, kPool, kWorkflow };
  Decl(Kind k) : kind(k) {}
  virtual ~Decl() = default;
  Decl(const Decl&) = delete;
  Decl& operator=(const Decl&) = delete;

  const Kind kind;
  Name name;
  SourceRange range;         // the whole declaration
  SourceRange keywordRange;  // `type`, `machine`, …
};

template <Decl::Kind K>
struct DeclOf : Decl {
  DeclOf() : Decl(K) {}
  static bool classof(const Decl* d) { return d->kind == K; }
};

const char* KindWord(Decl::Kind kind);  // `type`, `event`, …
const char* KindNoun(Decl::Kind kind);  // `a type`, `an event`, …

struct TypeDecl : DeclOf<Decl::Kind::kType> {
  std::vector<Field> fields;
};

enum class Audience { kUnset, kAgent, kExternal, kAny };
struct EventDecl : DeclOf<Decl::Kind::kEvent> {
  Audience audience = Audience::kUnset;
  SourceRange audienceRange;
  std::optional<std::string> description;
  std::vector<Field> fields;
};

// `key: EXPR` in an agent body.
struct BodyEntry {
  Name key;
  ExprPtr value;
};
struct AgentDecl : DeclOf<Decl::Kind::kAgent> {
  std::vector<BodyEntry> entries;
};

struct ExternDecl : DeclOf<Decl::Kind::kExtern> {
  bool hasParams = false;
  std::vector<Param> params;
  std::unique_ptr<TypeRef> result;
  bool idempotent = false;
  std::optional<std::string> description;
};

// `next:` / `read:` take a call of a host function or a standard-library adapter.
struct SourceCall {
  bool isExtern = false;  // `extern NAME(ARGS)`; else `std.NAME(ARGS)` or another name
  QualName function;
  std::vector<Arg> args;
  bool idempotent = false;
  SourceRange idempotentRange;
  SourceRange range;
};

struct Hook {
  enum class Verdict { kReread, kCarry, kSkip };
  SourceRange range;
  Name service;          // `sentry`
  std::string eventKey;  // `issue.created`
  SourceRange eventKeyRange;
  Verdict verdict = Verdict::kReread;
  SourceRange verdictRange;
  ExprPtr value;  // kCarry: the item; kSkip: the reason
};

struct SourceDecl : DeclOf<Decl::Kind::kSource> {
  std::vector<Param> params;
  std::unique_ptr<TypeRef> itemType;
  enum class Form { kNone, kNext, kRead, kPush };
  Form form = Form::kNone;         // kNone only when the body names none of `next`, `read`, `push`
  SourceRange formRange;           // the `next` / `read` / `push` key
  std::optional<SourceCall> call;  // kNext / kRead
  std::optional<QualName> wake;
  ExprPtr pollEvery;
  ExprPtr items;
  ExprPtr hold;
  std::vector<Hook> hooks;
  // Every key as written, for duplicate checks and ranges: (key, range of the entry).
  std::vector<std::pair<Name, SourceRange>> keys;
};

struct MachineDecl : DeclOf<Decl::Kind::kMachine> {
  bool hasParams = false;
  std::vector<Param> params;
  std::unique_ptr<TypeRef> output;  // `-> TYPE`; null when the machine has no output
  std::vector<Var> vars;
  StateBody body;  // the machine root is a compound state
  ExprPtr outputExpr;
  SourceRange outputRange;
  SourceRange bodyRange;
};

struct Worker {
  bool dispatch = false;
  QualName target;
  std::unique_ptr<ObjectExpr> dispatchSpec;  // dispatch: `{ input: …, wait: true, target: … }`
  SourceRange range;
};

struct PoolDecl : DeclOf<Decl::Kind::kPool> {
  bool hasParams = false;
  std::vector<Param> params;
  Worker worker;
  ExprPtr source;      // a call of a source, `backlog(input.backlog_file)`, or its bare name
  QualName sourceRef;  // the source's name in `source`, resolved by sema
  ExprPtr itemId;
  ExprPtr cap;
  ExprPtr itemInput;
  ExprPtr standing;
  enum class Failures { kUnset, kFail, kReport };
  Failures failures = Failures::kUnset;
  SourceRange failuresRange;
  std::vector<std::pair<Name, SourceRange>> keys;
};

struct WorkflowDecl : DeclOf<Decl::Kind::kWorkflow> {
  QualName target;
  // `budget { workers: N, processes: N, runs: N }`: the most the workflow may have live at once
  // (the load walk checks it against what its caps allow, docs/checks.md#e0412). Empty: none.
  std::vector<BodyEntry> budget;
  SourceRange budgetRange;  // the word `budget` (invalid when none is written)
};

struct Import {
  std::string path;       // as written (decoded)
  SourceRange range;      // the whole import
  SourceRange pathRange;  // the string
};

// The keys each declaration body takes: what the parser accepts (an unknown one is E0001 with a
// did-you-mean among these) and what the language server completes. One list each, here.
inline constexpr std::initializer_list<const char*> kPoolKeys = {
    "source", "item_id", "cap", "item_input", "failures", "standing"};
inline constexpr std::initializer_list<const char*> kSourceKeys = {
    "next", "read", "push", "wake", "poll_every", "items", "hold", "hook"};
inline constexpr std::initializer_list<const char*> kAgentKeys = {"model", "instructions", "picks"};
inline constexpr std::initializer_list<const char*> kBudgetKeys = {"workers", "processes", "runs"};

// Whether `e` reads the bare name `name` anywhere (`item` in `item.id`, not `x.item`).
bool ReadsName(const Expr* e, const std::string& name);

// One parsed `.jr2` file.
struct File {
  FileId file = 0;
  std::vector<Import> imports;
  std::vector<std::unique_ptr<Decl>> decls;
  // The text of the names that are not the source's bytes at their range (see Name):
  // Name::text views these. A deque: views stay valid as it grows.
  std::deque<std::string> texts;
};

}  // namespace jr2::ast

template <>
struct fmt::formatter<jr2::ast::Text> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(jr2::ast::Text text, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(text.view(), ctx);
  }
};
