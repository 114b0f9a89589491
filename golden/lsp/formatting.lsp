// Formatting through `jr2c fmt`: one edit that replaces the file with its formatted text; none
// for a file already formatted; a refusal (RequestFailed, saying why) for one whose tokens are
// not a program's, which is left alone.
// --- FILE messy.jr2
type   Ticket{
      id:string
  title :  string   // kept
}
// --- FILE tidy.jr2
type Ticket {
  id: string
}
// --- FILE broken.jr2
type Ticket {
  id: "open
}
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/messy.jr2","languageId":"jr2","version":1,"text":"${TEXT:messy.jr2}"}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/tidy.jr2","languageId":"jr2","version":1,"text":"${TEXT:tidy.jr2}"}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/broken.jr2","languageId":"jr2","version":1,"text":"${TEXT:broken.jr2}"}}}
{"id":2,"method":"textDocument/formatting","params":{"textDocument":{"uri":"${ROOT}/messy.jr2"},"options":{"tabSize":4,"insertSpaces":true}}}
{"id":3,"method":"textDocument/formatting","params":{"textDocument":{"uri":"${ROOT}/tidy.jr2"},"options":{"tabSize":2,"insertSpaces":true}}}
{"id":4,"method":"textDocument/formatting","params":{"textDocument":{"uri":"${ROOT}/broken.jr2"},"options":{"tabSize":2,"insertSpaces":true}}}
{"id":99,"method":"shutdown"}
{"method":"exit"}
// --- OUT
{
  "id": 1,
  "jsonrpc": "2.0",
  "result": {
    "capabilities": {
      "codeActionProvider": {"codeActionKinds":["quickfix"]},
      "completionProvider": {"triggerCharacters":[".",">"]},
      "definitionProvider": true,
      "documentFormattingProvider": true,
      "documentSymbolProvider": true,
      "foldingRangeProvider": true,
      "hoverProvider": true,
      "positionEncoding": "utf-16",
      "referencesProvider": true,
      "renameProvider": {"prepareProvider":true},
      "textDocumentSync": {"change":2,"openClose":true,"save":{"includeText":false}}
    },
    "serverInfo": {"name":"jr2c","version":"test"}
  }
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {"diagnostics":[],"uri":"${ROOT}/messy.jr2","version":1}
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {"diagnostics":[],"uri":"${ROOT}/tidy.jr2","version":1}
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "this string has no closing `\"` on its line; add one (a string cannot span lines: use a `\"\"\"` text block)",
        "range": {"end":{"character":11,"line":1},"start":{"character":6,"line":1}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/broken.jr2",
    "version": 1
  }
}
{
  "id": 2,
  "jsonrpc": "2.0",
  "result": [
    {
      "newText": "type Ticket {\n  id: string\n  title: string   // kept\n}\n",
      "range": {"end":{"character":0,"line":4},"start":{"character":0,"line":0}}
    }
  ]
}
{"id":3,"jsonrpc":"2.0","result":[]}
{
  "error": {
    "code": -32803,
    "message": "jr2c fmt: the file has syntax errors (the diagnostics say where) and was not formatted"
  },
  "id": 4,
  "jsonrpc": "2.0"
}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
