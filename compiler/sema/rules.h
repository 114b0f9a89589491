// Rules more than one phase needs, decided here once: name resolution, the type checker and the
// statechart lowering ask these functions rather than spelling the rule again.
#pragma once

#include <string_view>
#include <vector>

#include "compiler/ast/ast.h"

namespace jr2::sema {

// The invoke an `on done` / `on error` hears among its state's invokes: the one `on done NAME`
// names (`invoke … as NAME`), else the state's only invoke. Null when there is none to hear —
// no invoke, an unknown name, or several unnamed ones (E0305 and E0308 say which).
const ast::Invoke* HeardInvoke(const ast::Transition& t,
                               const std::vector<const ast::Invoke*>& invokes);

// The worker parameter a pool's item is bound to when the pool writes no `item_input`: the
// worker's only parameter, or its only parameter without a default (the others take their
// defaults). Null when there is none such: the item is then the worker's whole input.
const ast::Param* BoundParam(const std::vector<ast::Param>& params);

// The parameters of a declaration that takes arguments (a machine, a pool, an extern, a
// source); null for any other.
const std::vector<ast::Param>* ParamsOf(const ast::Decl* d);

// Whether a file stem can be written as a name (letters, digits and `_`, not starting with a
// digit): what an import's stem must be to qualify names (`stem.NAME`), and a compiled file's to
// name its generated code (`jr2gen::stem`). Both are E0104.
bool IsIdentifier(std::string_view s);

// The names the language gives meaning to without a declaration: the built-in types (`string`
// … `map`), the built-in functions (`len`, `contains`, `keys`, `str`, `min`), and the names an
// expression reads where it stands (`item`, `input`, `event`, `payload`, `answer`, `std`).
// Name resolution reads them, and the language server's rename refuses them as new names.
inline constexpr const char* kBuiltinTypes[] = {"string",   "int",  "float", "bool",
                                                "duration", "json", "list",  "map"};
inline constexpr const char* kBuiltinFunctions[] = {"len", "contains", "keys", "str", "min"};
inline constexpr const char* kContextNames[] = {"item",    "input",  "event",
                                                "payload", "answer", "std"};

// An Agent's picks at one opening of its Gate: `picks:` when the agent declaration writes it
// (from 1 to kMaxAgentPicks, E0504), else kDefaultAgentPicks. The runtime counts them.
inline constexpr int kDefaultAgentPicks = 3;
inline constexpr int kMaxAgentPicks = 10;

}  // namespace jr2::sema
