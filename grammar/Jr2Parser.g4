// The `.jr2` parser (docs/language.md). This grammar accepts a little more than the language: the
// alternatives marked "mistake" match what people commonly write by accident (`=>` for `->`, `=`
// where a body wants `:`, a missing `->`, a keyword as a name, commas in declaration bodies …) so
// that the AST builder can say exactly what is wrong and attach a fix-it, instead of ANTLR's
// generic "no viable alternative". Everything the grammar lets through that is not the language
// is refused in compiler/syntax/build_ast.cpp with an E0001 diagnostic.
parser grammar Jr2Parser;

options { tokenVocab = Jr2Lexer; }

file        : importDecl* decl* EOF;

importDecl  : IMPORT STRING;

decl        : typeDecl
            | eventDecl
            | agentDecl
            | externDecl
            | sourceDecl
            | machineDecl
            | poolDecl
            | workflowDecl
            ;

// --- names -------------------------------------------------------------------------------------

// A declared name. `keyword` is a mistake the builder reports (a reserved word used as a name).
declName    : IDENT | keyword;
qualName    : IDENT (DOT anyWord)*;
// After `.` and as a key before `:`, any word is a name (docs/language.md#keywords).
anyWord     : IDENT | keyword;
keyword     : IMPORT | TYPE | EVENT | AGENT | SOURCE | MACHINE | POOL | WORKFLOW | STATE | INITIAL
            | FINAL | PARALLEL | ON | AFTER | ALWAYS | ENTRY | EXIT | INVOKE | GATE | AS | IF | FAIL
            | OUTPUT | VAR | EXTERN | DISPATCH | OF | DONE | ERROR_KW | TRUE_KW | FALSE_KW | NULL_KW;

// --- types -------------------------------------------------------------------------------------

typeDecl    : TYPE declName typeBody;
typeBody    : LBRACE fieldDecl* RBRACE;
// `name: TYPE ["description"] [= default]`; a trailing comma is a mistake.
fieldDecl   : anyWord COLON typeRef STRING? (ASSIGN expr)? COMMA?
            | anyWord typeRef STRING? (ASSIGN expr)? COMMA?     // mistake: missing `:`
            ;
typeRef     : typeAtom (PIPE typeAtom)* QUESTION?;
typeAtom    : qualName (LT typeRef GT)?
            | STRING
            | LPAREN typeRef RPAREN
            ;

// --- events and agents -------------------------------------------------------------------------

eventDecl   : EVENT declName audience=eventAudience? STRING? typeBody?;
eventAudience : AGENT | IDENT;

agentDecl   : AGENT declName bodyBlock?;
// A declaration body of `key: value` entries. `=` for `:` and a trailing comma are mistakes.
bodyBlock   : LBRACE bodyEntry* RBRACE;
bodyEntry   : anyWord sep=(COLON | ASSIGN) expr COMMA?;

// `extern NAME(PARAMS) [-> TYPE] [idempotent] ["description"]`: the typed signature of a host
// function. Optional for users (an undeclared `extern NAME` takes its signature from its use);
// the standard library declares each of its functions this way.
externDecl  : EXTERN declName paramList? (ARROW typeRef)? idempotentMark? STRING?;

// --- sources -----------------------------------------------------------------------------------

sourceDecl  : SOURCE declName paramList? COLON typeRef sourceBody?;
sourceBody  : LBRACE sourceEntry* RBRACE;
sourceEntry : IDENT IDENT STRING FATARROW hookVerdict COMMA?            // hook KIND "event" => …
            | IDENT COMMA?                                              // push, or `idempotent`
            | anyWord sep=(COLON | ASSIGN) sourceValue COMMA?
            ;
sourceValue : EXTERN qualName argList?                                  // extern fn
            | expr                                                      // std.fn(args), …
            ;
// `idempotent` is not reserved. After an extern's signature a predicate makes the word mean this
// only there. In a source body the word stands as an entry of its own, and the builder gives it
// to the `key: value` entry just before it: the predicate had sat after every expression, and
// kept ANTLR from choosing any of their loops on one token (#33). (After an extern it still sits
// after a type, where a word that is not `idempotent` must be read as the next declaration's.)
idempotentMark : { _input->LT(1)->getText() == "idempotent" }? IDENT;
// `reread`, or `carry EXPR`, or `skip "why"`. Only `reread` takes no argument, so the next line's
// `hook` is never read as one; any other word takes its argument here, and the builder says
// when the word is not a verdict.
hookVerdict : IDENT ({ _input->LT(-1)->getText() != "reread" }? expr)?;

// --- machines ----------------------------------------------------------------------------------

machineDecl : MACHINE declName paramList? (ARROW typeRef)? stateBlock;
paramList   : LPAREN (param (COMMA param)* COMMA?)? RPAREN;
param       : declName COLON typeRef (ASSIGN expr)?
            | declName                                                 // mistake: no type
            ;

stateBlock  : LBRACE member* RBRACE;
member      : varDecl
            | stateDecl
            | transition
            | invoke
            | entryExit
            | outputDecl
            ;

varDecl     : VAR declName (COLON typeRef)? (ASSIGN expr)?;
stateDecl   : stateModifier* STATE declName stateBlock?;
stateModifier : INITIAL | FINAL | PARALLEL;
entryExit   : (ENTRY | EXIT) actionBlock;
outputDecl  : OUTPUT expr;

// `on`'s three forms share `on trigger guard?` and part after it: written as three alternatives,
// the parser had to look past the whole guard to choose one, and kept a quarter of its
// prediction cache for that choice alone (#15).
transition  : ON trigger guard? ( arrow=(ARROW | FATARROW) target actionBlock?
                                | target actionBlock?                  // mistake: missing `->`
                                | actionBlock                          // targetless: stays
                                )
            | ALWAYS guard? arrow=(ARROW | FATARROW) target actionBlock?
            | AFTER afterDelay guard? arrow=(ARROW | FATARROW) target actionBlock?
            ;
trigger     : DONE (AS IDENT)?
            | ERROR_KW (AS IDENT)?
            | qualName
            ;
afterDelay  : DURATION | INT | DECIMAL;
guard       : IF expr (ASSIGN expr)?;                                  // `=` in a guard: a mistake
target      : qualName;

invoke      : INVOKE GATE IDENT? objectLit?
            | INVOKE EXTERN qualName argList? (AS declName)?
            | INVOKE qualName argList? objectLit? (AS declName)?
            ;
argList     : LPAREN (arg (COMMA arg)* COMMA?)? RPAREN;
arg         : (anyWord COLON)? expr;

actionBlock : LBRACE action* RBRACE;
action      : IDENT sep=(ASSIGN | COLON) expr COMMA?                   // assign (`:` is a mistake)
            | FAIL LPAREN expr (COMMA expr)? COMMA? RPAREN
            | IDENT LPAREN (expr (COMMA expr)* COMMA?)? RPAREN         // log(…)
            ;

// --- pools and workflows -----------------------------------------------------------------------

poolDecl    : POOL declName paramList? OF worker poolBody?;
worker      : DISPATCH qualName objectLit
            | qualName
            ;
poolBody    : LBRACE poolEntry* RBRACE;
poolEntry   : anyWord sep=(COLON | ASSIGN) (FAIL | expr) COMMA?;

// `budget { processes: 16 }` after the machine: the most the workflow may run at once (the
// word `budget` is an IDENT here, not a keyword: names like `budget` stay free elsewhere).
workflowDecl: WORKFLOW declName ASSIGN? qualName budgetBlock?;
budgetBlock : IDENT bodyBlock;

// --- expressions -------------------------------------------------------------------------------
// Precedence, loosest first: `?:`, `??`, `||`, `&&`, `== !=`, `< <= > >=`, `+ -`, `* / %`,
// prefix `! -`, postfix `.x [i] (args) !`.
//
// The binary operators are one flat chain here, `a + b * c` three operands and two operators, and
// the AST builder groups it by precedence (ast::Precedence). Written as ANTLR's
// left-recursive rule, the choice "does the expression go on" had a prediction state for each
// precedence level and each next token, each computed the first time it is met by a closure over
// everything that may follow an expression: three quarters of a cold check's prediction (#33).

expr        : unaryExpr (binaryOp unaryExpr)* (QUESTION expr COLON expr)?;  // `?:` to the right
binaryOp    : STAR | SLASH | PERCENT | PLUS | MINUS | LT | LE | GT | GE | EQ | NEQ | AND | OR
            | COALESCE;
unaryExpr   : op=(BANG | MINUS) unaryExpr
            | atom postfix*
            | listLit postfix*
            | LPAREN expr RPAREN postfix*
            ;
postfix     : DOT anyWord
            | LBRACK expr RBRACK
            | argList
            | BANG
            ;
atom        : INT
            | DECIMAL
            | DURATION
            | STRING
            | TEXT_BLOCK
            | TRUE_KW
            | FALSE_KW
            | NULL_KW
            | IDENT
            | DONE
            | ERROR_KW
            | EVENT                // `event` is reserved, and also the name of the firing event
            | objectLit
            ;

objectLit   : LBRACE (objectEntry (COMMA? objectEntry)* COMMA?)? RBRACE;
objectEntry : anyWord COLON expr;
listLit     : LBRACK (expr (COMMA expr | gluedExpr)* COMMA?)? RBRACK;
// mistake: an element straight after the one before it, without its `,`. It cannot start with
// what would go on that element (`-` `!` `(` `[`): `[a -1]` is `a - 1` and `[f (x)]` a call, as
// anywhere else. Were it any expression, the parser could not tell where an expression ends
// without reading far ahead, and did so for every expression (#33). Past its first operand it is
// an expression like `expr`.
gluedExpr   : gluedHead (binaryOp unaryExpr)* (QUESTION expr COLON expr)?;
gluedHead   : atom postfix*;
