// The loaded program: every file the roots import, transitively, plus the standard library.
// Produced by sema::Load, annotated in place by sema::ResolveNames.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/sema/types.h"
#include "compiler/source/source.h"

namespace jr2::sema {

struct Module {
  const SourceFile* source = nullptr;
  std::unique_ptr<ast::File> ast;
  std::string stem;  // `tickets` for tickets.jr2; `std` for the standard library
  bool isStd = false;
  // This file's imports by stem (only those that loaded).
  std::map<std::string, Module*> imports;
  // Stems of imports that failed (not found, a cycle, a bad stem): already reported, so names
  // qualified by them are not reported again.
  std::set<std::string> failedImports;
  // This file's declarations by name (the first one, when a name is declared twice).
  std::map<std::string, const ast::Decl*> decls;
};

// What the checks keep for the command after them. `jr2c check` keeps what the checks report
// from; a command that goes on (`compile`, `graph`, `workflows`) keeps too the type of every
// expression, which code generation reads and nothing else does.
enum class Keep { kReports, kCodegen };

// The type of every expression the checker typed, kept for code generation (Keep::kCodegen):
// (expression, type) pairs in the order it typed them, sorted once when it is done (seal).
// 16 bytes an expression, where a std::map took 64 with malloc's share (#15: that map, kept for
// `check` too, had been a tenth of its peak memory).
class ExprTypes {
 public:
  explicit ExprTypes(Keep keep) : kept_(keep == Keep::kCodegen) {}
  void set(const ast::Expr* e, TypePtr t) {
    if (kept_) pairs_.emplace_back(e, t);
  }
  // Sorts by expression; when one was typed twice, the last type set wins.
  void seal();
  // After seal, and only when kept: the expression's type, or null when the checker did not
  // type it.
  TypePtr find(const ast::Expr* e) const;
  size_t size() const { return pairs_.size(); }

 private:
  std::vector<std::pair<const ast::Expr*, TypePtr>> pairs_;
  bool kept_;
  bool sealed_ = false;
};

// What the type checker learned, for the load walk and code generation.
struct TypeInfo {
  explicit TypeInfo(Keep keep) : exprTypes(keep) {}
  Types types;
  std::map<const ast::Decl*, TypePtr> declTypes;  // type/event records; a pool's input record
  // The input record of each machine and pool (its parameters): a workflow's input schema.
  std::map<const ast::Decl*, TypePtr> inputTypes;
  ExprTypes exprTypes;  // every expression the checker typed
  // The `type` or `event` each declared record comes from.
  std::map<const Record*, const ast::Decl*> recordDecls;
  // The worker parameter each pool without `item_input` binds its item to (sema::BoundParam);
  // a pool not here passes the item as the worker's whole input.
  std::map<const ast::PoolDecl*, const ast::Param*> boundParams;
};

struct Program {
  std::vector<std::unique_ptr<Module>> modules;
  std::vector<Module*> roots;  // in command-line order
  Module* std = nullptr;
  std::unique_ptr<TypeInfo> typeInfo;  // set by CheckTypes
  // The module each top-level declaration belongs to (filled by Load).
  std::map<const ast::Decl*, const Module*> owners;

  const Module* moduleOf(const ast::Decl* d) const {
    auto it = owners.find(d);
    return it == owners.end() ? nullptr : it->second;
  }
};

// What Load gives: the program (a root file that cannot be read is E0106 in the diagnostics).
struct LoadResult {
  Program program;
};

// Phase entry: reads and parses each root file and, depth first, every file it imports; loads
// the embedded standard library. Reports E0102 (import not found), E0103 (import cycle),
// E0104 (an import stem that cannot be written) and E0106 (a root file that cannot be read) as
// well as every syntax error.
LoadResult Load(SourceManager& sm, const std::vector<std::string>& paths, Diagnostics& diags);

// Like Load, for one root whose text is in memory (tests, benchmarks, the fuzzer). With
// `followImports` false its imports are not read: nothing touches the file system.
LoadResult LoadText(SourceManager& sm, const std::string& name, std::string text,
                    Diagnostics& diags, bool followImports = true);

// Phase entry: binds every name in the program to its declaration (ast::QualName::resolved) and
// checks names in expressions against their scopes. Reports E0100, E0101, E0105 and E0406.
void ResolveNames(Program& program, Diagnostics& diags);

// Phase entry: types every expression against the declared types (E02xx), checks `output`
// (E0304) and what `on done` / `on error` refer to (E0305). Fills program.typeInfo.
// `keep` says whether expression types are kept for code generation (TypeInfo::exprTypes).
void CheckTypes(Program& program, Diagnostics& diags, Keep keep = Keep::kCodegen);

}  // namespace jr2::sema
