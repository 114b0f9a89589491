# cmake -DFILE=Jr2Parser.cpp -P Jr2ParserAccessors.cmake: the parser ANTLR generated, its context
# accessors rewritten to find a node's children by their type's typeid (compiler/syntax/
# parse_tree.h) instead of a dynamic_cast on each child, as ANTLR 4.9's ParserRuleContext does: a
# fifth of a cold `jr2c check`'s instructions (#33, docs/performance.md). The same children are
# found; a generated file of another shape (another ANTLR version) is refused, not left slow.
file(READ ${FILE} text)
set(before "${text}")
string(REGEX REPLACE "return getRuleContexts<([A-Za-z0-9_:]+)>\\(\\);"
       "return jr2::syntax::gen::RuleChildren<\\1>(this);" text "${text}")
string(REGEX REPLACE "return getRuleContext<([A-Za-z0-9_:]+)>\\(([a-z0-9]+)\\);"
       "return jr2::syntax::gen::RuleChild<\\1>(this, \\2);" text "${text}")
string(REGEX REPLACE "return getTokens\\(([A-Za-z0-9_:]+)\\);"
       "return jr2::syntax::gen::TokenChildren(this, \\1);" text "${text}")
string(REGEX REPLACE "return getToken\\(([A-Za-z0-9_:]+), ([a-z0-9]+)\\);"
       "return jr2::syntax::gen::TokenChild(this, \\1, \\2);" text "${text}")
string(REPLACE "#include \"Jr2Parser.h\"\n"
       "#include \"Jr2Parser.h\"\n#include \"compiler/syntax/parse_tree.h\"\n" text "${text}")
string(FIND "${text}" "compiler/syntax/parse_tree.h" included)
string(REGEX MATCH "getRuleContexts?<|getTokens?\\(" left "${text}")
string(REGEX MATCH "jr2::syntax::gen::RuleChild<" rewritten "${text}")
if(included EQUAL -1 OR left OR NOT rewritten)
  message(FATAL_ERROR "${FILE}: ANTLR's generated accessors are not of the shape "
                      "cmake/Jr2ParserAccessors.cmake rewrites (another ANTLR version?)")
endif()
file(WRITE ${FILE} "${text}")
