// Rename reaches the keys of record literals the checker typed by their place: a machine's
// `output { … }` (its output type's fields), a pool's `item_input: { … }` (the worker's
// parameters), a dispatch's `input: { … }` (the dispatched workflow's parameters), nested
// literals included — so a rename of a clean program leaves it clean.
// --- FILE main.jr2
type Ref {
  id: string
}

type Out {
  id: string
  ref: Ref
}

event go external "Go."

machine work(thing: string, retries: int = 1) -> Out {
  initial state waiting {
    invoke gate
    on go -> finished
  }
  final state finished
  output { id: thing, ref: { id: thing } }
}

source things(list: list<Ref>): Ref {
  next: std.queue(list)
}

pool many(list: list<Ref>) of work {
  source: things(input.list)
  item_id: item.id
  item_input: { thing: item.id, retries: 2 }
}

workflow one = work

source feed: Ref {
  push
}

pool runs of dispatch one { input: { thing: item.id }, wait: true } {
  source: feed
  item_id: item.id
  cap: 2
  standing: true
}

workflow all = runs
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/main.jr2","languageId":"jr2","version":1,"text":"${TEXT:main.jr2}"}}}
{"id":2,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:type Out {\n  i|d}","newName":"ident"}}
{"id":3,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:work(th|ing}","newName":"what"}}
{"id":4,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:type Ref {\n  i|d}","newName":"key"}}
{"id":5,"method":"textDocument/references","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:re|tries: int}","context":{"includeDeclaration":true}}}
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
  "params": {"diagnostics":[],"uri":"${ROOT}/main.jr2","version":1}
}
{
  "id": 2,
  "jsonrpc": "2.0",
  "result": {
    "changes": {
      "${ROOT}/main.jr2": [
        {
          "newText": "ident",
          "range": {"end":{"character":4,"line":5},"start":{"character":2,"line":5}}
        },
        {
          "newText": "ident",
          "range": {"end":{"character":13,"line":17},"start":{"character":11,"line":17}}
        }
      ]
    }
  }
}
{
  "id": 3,
  "jsonrpc": "2.0",
  "result": {
    "changes": {
      "${ROOT}/main.jr2": [
        {
          "newText": "what",
          "range": {"end":{"character":18,"line":11},"start":{"character":13,"line":11}}
        },
        {
          "newText": "what",
          "range": {"end":{"character":20,"line":17},"start":{"character":15,"line":17}}
        },
        {
          "newText": "what",
          "range": {"end":{"character":38,"line":17},"start":{"character":33,"line":17}}
        },
        {
          "newText": "what",
          "range": {"end":{"character":21,"line":27},"start":{"character":16,"line":27}}
        },
        {
          "newText": "what",
          "range": {"end":{"character":42,"line":36},"start":{"character":37,"line":36}}
        }
      ]
    }
  }
}
{
  "id": 4,
  "jsonrpc": "2.0",
  "result": {
    "changes": {
      "${ROOT}/main.jr2": [
        {"newText":"key","range":{"end":{"character":4,"line":1},"start":{"character":2,"line":1}}},
        {
          "newText": "key",
          "range": {"end":{"character":31,"line":17},"start":{"character":29,"line":17}}
        },
        {
          "newText": "key",
          "range": {"end":{"character":18,"line":26},"start":{"character":16,"line":26}}
        },
        {
          "newText": "key",
          "range": {"end":{"character":30,"line":27},"start":{"character":28,"line":27}}
        },
        {
          "newText": "key",
          "range": {"end":{"character":51,"line":36},"start":{"character":49,"line":36}}
        },
        {
          "newText": "key",
          "range": {"end":{"character":18,"line":38},"start":{"character":16,"line":38}}
        }
      ]
    }
  }
}
{
  "id": 5,
  "jsonrpc": "2.0",
  "result": [
    {
      "range": {"end":{"character":35,"line":11},"start":{"character":28,"line":11}},
      "uri": "${ROOT}/main.jr2"
    },
    {
      "range": {"end":{"character":39,"line":27},"start":{"character":32,"line":27}},
      "uri": "${ROOT}/main.jr2"
    }
  ]
}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
