// What `jr2c lsp` knows of a program: the checks' result for one root file (the same front end
// and checks as `jr2c check`), and an index over it — every declaration, state, field, parameter
// and `var` (a Symbol), and every place a name refers to one (an Occurrence). Hover, definition,
// references, rename, completion and the outline all read this index; none of them resolves a
// name again. Names are bound by the phases (sema's QualName::resolved, the IR's transition
// targets, the checker's expression types): the index only records what they decided.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"
#include "compiler/source/source.h"

namespace jr2::lsp {

struct Symbol {
  enum class Kind {
    kType,
    kEvent,
    kAgent,
    kExtern,
    kSource,
    kMachine,
    kPool,
    kWorkflow,
    kState,
    kField,
    kParam,
    kVar,
  };
  Kind kind = Kind::kType;
  ast::Text name;
  SourceRange nameRange;  // where it is declared
  SourceRange range;      // the whole declaration (its body included)
  int parent = -1;        // the symbol it belongs to: a field's record, a state's machine or state
  // The node it was made from: exactly one is set, by kind.
  const ast::Decl* decl = nullptr;
  const ast::State* state = nullptr;
  const ast::Field* field = nullptr;
  const ast::Param* param = nullptr;
  const ast::Var* var = nullptr;
  const ir::Machine* machine = nullptr;  // kState: its machine's statechart
  ir::StateId stateId = ir::kNoState;    // kState
};

// A name, at one place, that means a symbol (its declaration is an occurrence too).
struct Occurrence {
  SourceRange range;
  int symbol = -1;
  bool declaration = false;
};

// An expression the checker typed, by its range (what hover and `x.` completion read).
struct TypedExpr {
  SourceRange range;
  const ast::Expr* expr = nullptr;
  sema::TypePtr type = nullptr;
};

class Analysis {
 public:
  SourceManager sm;
  Diagnostics diags;
  sema::Program program;
  ir::Program charts;
  const SourceFile* root = nullptr;  // null when the root could not be read
  // Whether the phases after the parse ran: false when any file of the program has a syntax
  // error (as for `jr2c check`, whose names, types and walk need whole trees).
  bool checked = false;

  std::vector<Symbol> symbols;
  std::vector<Occurrence> occurrences;  // sorted by file, then place
  std::vector<TypedExpr> typed;         // sorted by file, then place

  // The occurrence whose range holds `offset` in `file` (a name's end counts: the cursor just
  // after it), or null.
  const Occurrence* occurrenceAt(FileId file, uint32_t offset) const;
  // The innermost typed expression that ends exactly at `end` in `file`, or null.
  const TypedExpr* typedEndingAt(FileId file, uint32_t end) const;
  // The innermost typed expression holding `offset`, or null.
  const TypedExpr* typedAt(FileId file, uint32_t offset) const;
  // Every occurrence of a symbol (its declaration first).
  std::vector<const Occurrence*> occurrencesOf(int symbol) const;
  // The module a file belongs to, or null.
  const sema::Module* moduleOf(FileId file) const;
  // The symbol made of a node (a declaration, a state), or -1.
  int symbolOf(const void* node) const {
    auto it = byNode_.find(node);
    return it == byNode_.end() ? -1 : it->second;
  }

 private:
  friend class IndexBuilder;
  std::map<const void*, int> byNode_;
};

// Phase entry: loads `rootPath` (with its imports and the standard library; the overlay's texts
// stand for the files they name, by absolute normalized path), runs every check of `jr2c check`
// with expression types kept, and indexes the result.
std::unique_ptr<Analysis> Analyze(const std::string& rootPath,
                                  const std::map<std::string, std::string>& overlay);

// One line that says what a symbol is (`machine review(ticket: Ticket) -> Outcome`), and the
// markdown hover text of it: that line, its description or the comment above it, an event's
// payload schema, a state's Menu.
std::string Signature(const Analysis& a, const Symbol& s);
std::string HoverText(const Analysis& a, const Symbol& s);

// The path of a symbol from its top-level declaration (`review.waiting`, `Ticket.id`).
std::string QualifiedName(const Analysis& a, const Symbol& s);

}  // namespace jr2::lsp
