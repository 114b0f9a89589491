// What the generators share (internal to codegen): the context of one module's generation, the
// C++ type of a value, and one pair of emitters per construct — its declaration for the header,
// its definition for the source:
//   expr.cpp            expressions, as C++ over the typed structs (ExprGen)
//   record.cpp          `type` and `event` records: a struct and its JSON conversions
//   machine.cpp         a machine: its class, its input, output and snapshot, its guards,
//                       actions, entries and exits, its fast path
//   machine_tables.cpp  a machine's tables: its states, its transitions and their sets
//   pool.cpp            a pool: its PoolSpec, with the Source, the hooks and the item's input
//   registration.cpp    host functions (externs) and RegisterWorkflows()
// codegen.cpp puts them together (Generate). Each reads what sema and ir::Build decided — the
// types, the record declarations, each transition's trigger and sets, the bound worker
// parameter — and decides nothing of the program's meaning again.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/printer.h"
#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"

namespace jr2::codegen {

// A `.jr2` name as a C++ identifier: C++ keywords, the names of the generated free functions
// (`from_json`, `to_json`, `read_json`) and names that start with `_` get a suffix.
std::string Ident(const std::string& name);
// Text as a C++ string literal.
std::string CppString(const std::string& s);
// Text a user wrote (a description, a file name) made safe to print after `//`: control
// characters become spaces, so it stays on its line, and it does not end with a backslash (a
// line splice would comment out the next line) or hold `??` (a trigraph to old compilers).
std::string CommentText(const std::string& s);

// A parameter or `var` of a literal union (`"low" | "high"`, or an optional one) is held as a
// string: once read into `member`, it is checked against its literals, as a record's field is,
// so that neither an input nor a saved run restored by a build whose union is narrower holds a
// value its type does not have. `root` is the reading's path root (a C++ string literal).
void CheckLiterals(Printer& p, const sema::TypePtr& t, const std::string& member,
                   const std::string& root, const std::string& name);

// The C++ type of a generated value. Two values of one type are used as they are; otherwise a
// conversion is inserted (ExprGen::convert).
struct CppType {
  enum class Kind {
    kJson,      // ::jr2rt::Json: `json`, std's records, anything loose
    kNull,      // std::nullopt_t: the `null` literal
    kString,    // std::string: `string` and literal unions
    kInt,       // int64_t
    kDouble,    // double
    kBool,      // bool
    kDuration,  // ::jr2rt::Duration
    kVector,    // std::vector<elem>
    kMap,       // std::map<std::string, elem>
    kOptional,  // std::optional<elem>
    kStruct,    // a generated record struct: `name`
  };
  Kind kind = Kind::kJson;
  std::shared_ptr<const CppType> elem;
  std::string name;

  static CppType Of(Kind k) { return CppType{k, nullptr, {}}; }
  static CppType Wrap(Kind k, CppType elem) {
    return CppType{k, std::make_shared<const CppType>(std::move(elem)), {}};
  }
  bool is(Kind k) const { return kind == k; }
  std::string spell() const;
  bool operator==(const CppType& o) const;
  bool operator!=(const CppType& o) const { return !(*this == o); }
};

// A value's code and its C++ type.
struct Code {
  std::string text;
  CppType type;
};

// The names an expression can use, as C++ expressions with their C++ types.
struct Scope {
  std::map<std::string, Code> names;
};

// A host function the module calls: `extern NAME` (invoked, or a Source's `call`) or a Source's
// `next: extern NAME`.
struct ExternUse {
  std::string name;
  enum Kind { kHost, kNext } kind;
  const ast::ExternDecl* decl;  // null for an extern declared by its use
};

// One module's generation: what every generator reads.
class Context {
 public:
  Context(const sema::Program& program, const sema::Module& module, const ir::Program& charts,
          std::string version, const Options& options);

  const sema::Program& program;
  const sema::Module& module;
  const ir::Program& charts;
  const sema::TypeInfo& info;
  const Options options;
  const std::string version;
  const std::string file;  // the module's file name, without its directory
  const std::string ns;    // `jr2gen::<stem>`

  // `// from FILE:LINE` text and a `"FILE:LINE:COL"` C++ literal for a place in the module.
  std::string from(SourceRange r) const;
  std::string where(SourceRange r) const;

  sema::TypePtr typeOf(const ast::Expr* e) const;
  sema::TypePtr typeOf(const ast::TypeRef* t) const;
  CppType cpp(const sema::TypePtr& t) const;
  // Whether a record declaration has a generated struct (std's records are plain JSON).
  bool hasStruct(const ast::Decl* d) const;
  // The C++ name of a record's struct, qualified when it is another module's.
  std::string structName(const ast::Decl* d) const;
  // `::jr2gen::<stem>::` for a declaration of another module, "" for this one's.
  std::string prefixOf(const ast::Decl* d) const;

  // This module's declarations of a kind, in order; its machines; the host functions it calls.
  std::vector<const ast::Decl*> decls(ast::Decl::Kind kind) const;
  std::vector<const ir::Machine*> machines() const;
  std::vector<ExternUse> externs() const;
};

// Expressions (expr.cpp).
class ExprGen {
 public:
  explicit ExprGen(const Context& cx) : cx_(cx) {}
  // `e` as a value of type `want`.
  std::string as(const ast::Expr* e, const sema::TypePtr& want, const Scope& scope) const;
  // `e` as type `t`, then as JSON.
  std::string asJson(const ast::Expr* e, const sema::TypePtr& t, const Scope& scope) const;
  // `e` in its own C++ type.
  Code emit(const ast::Expr* e, const Scope& scope) const;
  // The arguments of a call as a JSON object by parameter name (`arg0` … for positional ones
  // when the callee's parameters are unknown).
  std::string argsJson(const std::vector<ast::Arg>& args, const std::vector<ast::Param>* params,
                       const Scope& scope) const;

 private:
  Code binary(const ast::BinaryExpr& b, const Scope& scope) const;
  // The operands of a chain of string `+`, in order, each a C++ value a std::string_view can be
  // made from (a literal as a C++ literal, no std::string of it).
  // A record literal as a struct made at once (`T{a, b}`), when its entries are written in the
  // fields' order; false, and `out` untouched, when not.
  bool aggregate(const ast::ObjectExpr& o, const sema::TypePtr& target, const CppType& t,
                 const Scope& scope, std::string* out) const;
  void concatParts(const ast::Expr* e, const Scope& scope, std::vector<std::string>& out) const;
  std::string convert(const Code& code, const sema::TypePtr& to, SourceRange at) const;

  const Context& cx_;
};

// A `type` or `event` declaration's fields as written (record.cpp).
const std::vector<ast::Field>& FieldsOf(const ast::Decl& d);
// Records (record.cpp): in an order C++ accepts, a record after those its fields hold by value.
std::vector<const ast::Decl*> RecordOrder(const Context& cx);
void DeclareRecord(const Context& cx, Printer& p, const ast::Decl& d);
void DefineRecord(const Context& cx, Printer& p, const ast::Decl& d);

// Machines (machine.cpp).
void DeclareMachine(const Context& cx, Printer& p, const ir::Machine& m);
void DefineMachine(const Context& cx, Printer& p, const ir::Machine& m);
// A machine's tables (machine_tables.cpp), the runtime's MachineTables, and the constructor of
// its class `cls`, which hands them to ::jr2rt::Statechart. `transitions` are the machine's, state
// by state: the table's order, by which DefineMachine numbers each guard, action and fast-path
// case.
void DefineMachineTables(const Context& cx, Printer& p, const ir::Machine& m,
                         const std::vector<const ir::Transition*>& transitions,
                         const std::string& cls);
// What an invoke is for the runtime (::jr2rt::InvokeSpec): its kind (`kGate`…), its target and its
// name. One answer for the code that starts it and the table a restore matches it by.
struct InvokeShape {
  const char* kind;
  std::string target;
  std::string name;
};
InvokeShape ShapeOf(const ast::Invoke& inv);
// An event as a Gate lists it (an ::jr2rt::EventSpec initializer); the Source's wake event too.
std::string EventSpecOf(const Context& cx, const ast::Decl* ev);
// The same as an EventSpecRow's initializer; its fields, when it has any, go in an array named
// `fieldsName`, whose definition is left in *decl.
std::string EventSpecRowOf(const Context& cx, const ast::Decl* ev, const std::string& fieldsName,
                           std::string* decl);

// Pools (pool.cpp).
void DeclarePool(const Context& cx, Printer& p, const ast::PoolDecl& pool);
void DefinePool(const Context& cx, Printer& p, const ast::PoolDecl& pool);

// Host functions and registration (registration.cpp).
void DeclareExterns(const Context& cx, Printer& p);
void DefineRegistration(const Context& cx, Printer& p);

}  // namespace jr2::codegen
