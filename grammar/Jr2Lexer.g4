// The `.jr2` lexer (docs/language.md#lexical-rules).
//
// Tokens whose names start with BAD_ or UNTERMINATED_ never reach the parser as they are: the
// syntax phase (compiler/syntax/token_filter.cpp) turns each into an E0001 diagnostic with a fix-it
// and, where the parse can go on, into the token the author meant.
lexer grammar Jr2Lexer;

// Keywords (reserved). After `.` and as a key before `:` the parser accepts them as names.
IMPORT    : 'import';
TYPE      : 'type';
EVENT     : 'event';
AGENT     : 'agent';
SOURCE    : 'source';
MACHINE   : 'machine';
POOL      : 'pool';
WORKFLOW  : 'workflow';
STATE     : 'state';
INITIAL   : 'initial';
FINAL     : 'final';
PARALLEL  : 'parallel';
ON        : 'on';
AFTER     : 'after';
ALWAYS    : 'always';
ENTRY     : 'entry';
EXIT      : 'exit';
INVOKE    : 'invoke';
GATE      : 'gate';
AS        : 'as';
IF        : 'if';
FAIL      : 'fail';
OUTPUT    : 'output';
VAR       : 'var';
EXTERN    : 'extern';
DISPATCH  : 'dispatch';
OF        : 'of';
DONE      : 'done';
ERROR_KW     : 'error';
TRUE_KW      : 'true';
FALSE_KW     : 'false';
NULL_KW      : 'null';

// Punctuation and operators.
ARROW     : '->';
FATARROW  : '=>';
EQ        : '==';
NEQ       : '!=';
LE        : '<=';
GE        : '>=';
AND       : '&&';
OR        : '||';
COALESCE  : '??';
ASSIGN    : '=';
LT        : '<';
GT        : '>';
PLUS      : '+';
MINUS     : '-';
STAR      : '*';
SLASH     : '/';
PERCENT   : '%';
BANG      : '!';
QUESTION  : '?';
COLON     : ':';
COMMA     : ',';
DOT       : '.';
PIPE      : '|';
LPAREN    : '(';
RPAREN    : ')';
LBRACE    : '{';
RBRACE    : '}';
LBRACK    : '[';
RBRACK    : ']';
SEMI      : ';';   // never valid: the token filter reports it and drops it

// Literals. DURATION comes before BAD_NUMBER so that `5m` is a duration, while the longest match
// makes `5min` one BAD_NUMBER token instead of `5m` followed by `in`.
DURATION  : [0-9]+ ('ms' | 's' | 'm' | 'h' | 'd');
DECIMAL   : [0-9]+ '.' [0-9]+;
INT       : [0-9]+;
BAD_NUMBER: [0-9]+ ('.' [0-9]+)? [A-Za-z_0-9]+;

TEXT_BLOCK: '"""' .*? '"""';
// The unterminated forms cannot match across a closing delimiter, so the longest match never
// prefers them over a closed text block or comment that has code after it.
UNTERMINATED_TEXT_BLOCK: '"""' (~'"' | '"' ~'"' | '""' ~'"')* ('"' | '""')? EOF;
STRING    : '"' (ESC | ~["\\\r\n])* '"';
UNTERMINATED_STRING: '"' (ESC | ~["\\\r\n])*;
BAD_SQ_STRING: '\'' ~['\r\n]* '\'';

IDENT     : [A-Za-z_] [A-Za-z0-9_]*;

LINE_COMMENT : '//' ~[\r\n]* -> channel(HIDDEN);
BLOCK_COMMENT: '/*' .*? '*/' -> channel(HIDDEN);
UNTERMINATED_COMMENT: '/*' (~'*' | '*'+ ~[*/])* '*'* EOF;
WS        : [ \t\r\n\f]+ -> channel(HIDDEN);

BAD_CHAR  : .;

fragment ESC: '\\' (["\\nt] | 'u{' [0-9A-Fa-f]+ '}' | .);
