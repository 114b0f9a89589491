// Completion in a workflow's `budget { … }` (#36): its three keys, each with what it counts, on
// an empty line of the block and after a key's first letters.
// --- FILE main.jr2
machine build(id: string) {
  initial state running {
    invoke std.command({ argv: ["true"] })
    on done -> built
  }
  final state built
}

source ids(items: list<string>): string {
  next: std.queue(items)
}

pool builds(items: list<string>) of build {
  source: ids(input.items)
  item_id: item
  cap: 4
}

workflow all_builds = builds budget {
  processes: 4

}
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/main.jr2","languageId":"jr2","version":1,"text":"${TEXT:main.jr2}"}}}
{"id":2,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":20,"character":2}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":2},"contentChanges":[{"range":{"start":{"line":20,"character":0},"end":{"line":20,"character":0}},"text":"  wo"}]}}
{"id":3,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":20,"character":4}}}
{"id":4,"method":"shutdown"}
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
  "params": {"diagnostics":[],"uri":"${ROOT}/main.jr2","version":1}
}
{
  "id": 2,
  "jsonrpc": "2.0",
  "result": [
    {"detail":"a budget's key","kind":10,"label":"workers"},
    {"detail":"a budget's key","kind":10,"label":"processes"},
    {"detail":"a budget's key","kind":10,"label":"runs"}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "`wo` is not a key of the budget of workflow `all_builds`; its keys are `workers`, `processes` and `runs`",
        "range": {"end":{"character":4,"line":20},"start":{"character":2,"line":20}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 2
  }
}
{
  "id": 3,
  "jsonrpc": "2.0",
  "result": [
    {"detail":"a budget's key","kind":10,"label":"workers"},
    {"detail":"a budget's key","kind":10,"label":"processes"},
    {"detail":"a budget's key","kind":10,"label":"runs"}
  ]
}
{"id":4,"jsonrpc":"2.0","result":null}
exit: 0
