// While the file does not parse, hover and definition answer from its last good analysis, at
// the places the edit did not touch (moved by what was inserted before them), and nothing
// inside the edit; rename waits for the file to parse. References are moved the same way, and a
// name the edit cut into answers nothing (never a range that ends before it starts).
// --- FILE main.jr2
type Ticket {
  id: string
}

machine review(ticket: Ticket) {
  initial state waiting {
    on go -> done_
  }
  final state done_
}

event go
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/main.jr2","languageId":"jr2","version":1,"text":"${TEXT:main.jr2}"}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":2},"contentChanges":[{"range":{"start":{"line":3,"character":0},"end":{"line":3,"character":0}},"text":"machine broken( {\n"}]}}
{"id":2,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":5,"character":25}}}
{"id":3,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":7,"character":15}}}
{"id":4,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":3,"character":10}}}
{"id":5,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":5,"character":25},"newName":"Item"}}
{"id":6,"method":"textDocument/references","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":5,"character":25},"context":{"includeDeclaration":true}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":3},"contentChanges":[{"range":{"start":{"line":12,"character":8},"end":{"line":13,"character":0}},"text":"{{{"}]}}
{"id":7,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":12,"character":7}}}
{"id":8,"method":"textDocument/prepareRename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":12,"character":7}}}
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
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "this `{` is never closed; add `}` where the block ends",
        "range": {"end":{"character":17,"line":3},"start":{"character":16,"line":3}},
        "relatedInformation": [
          {
            "location": {
              "range": {"end":{"character":8,"line":12},"start":{"character":6,"line":12}},
              "uri": "${ROOT}/main.jr2"
            },
            "message": "the file ends after this, with the bracket still open"
          }
        ],
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name or `)` in the parameters of machine `broken`; found `{`",
        "range": {"end":{"character":17,"line":3},"start":{"character":16,"line":3}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected `,` or `)` in the parameters of machine `broken`; found `review`",
        "range": {"end":{"character":14,"line":5},"start":{"character":8,"line":5}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "`machine` is a reserved word and cannot name a parameter; choose another name, such as `machine_`",
        "range": {"end":{"character":7,"line":5},"start":{"character":0,"line":5}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "the parameter `machine` needs a type; write `machine: TYPE`",
        "range": {"end":{"character":7,"line":5},"start":{"character":0,"line":5}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 2
  }
}
{
  "id": 2,
  "jsonrpc": "2.0",
  "result": {
    "contents": {"kind":"markdown","value":"```jr2\ntype Ticket\n```\n\nFields:\n- `id: string`\n"},
    "range": {"end":{"character":29,"line":5},"start":{"character":23,"line":5}}
  }
}
{
  "id": 3,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":19,"line":9},"start":{"character":14,"line":9}},
    "uri": "${ROOT}/main.jr2"
  }
}
{"id":4,"jsonrpc":"2.0","result":null}
{
  "error": {
    "code": -32803,
    "message": "the file does not parse now; fix its syntax errors, then rename"
  },
  "id": 5,
  "jsonrpc": "2.0"
}
{
  "id": 6,
  "jsonrpc": "2.0",
  "result": [
    {
      "range": {"end":{"character":11,"line":0},"start":{"character":5,"line":0}},
      "uri": "${ROOT}/main.jr2"
    },
    {
      "range": {"end":{"character":29,"line":5},"start":{"character":23,"line":5}},
      "uri": "${ROOT}/main.jr2"
    }
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "this `{` is never closed; add `}` where the block ends",
        "range": {"end":{"character":11,"line":12},"start":{"character":10,"line":12}},
        "relatedInformation": [
          {
            "location": {
              "range": {"end":{"character":11,"line":12},"start":{"character":10,"line":12}},
              "uri": "${ROOT}/main.jr2"
            },
            "message": "the file ends after this, with the bracket still open"
          }
        ],
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name or `)` in the parameters of machine `broken`; found `{`",
        "range": {"end":{"character":17,"line":3},"start":{"character":16,"line":3}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected `,` or `)` in the parameters of machine `broken`; found `review`",
        "range": {"end":{"character":14,"line":5},"start":{"character":8,"line":5}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name or `}` in the fields of event `go`; found `{`",
        "range": {"end":{"character":10,"line":12},"start":{"character":9,"line":12}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "`machine` is a reserved word and cannot name a parameter; choose another name, such as `machine_`",
        "range": {"end":{"character":7,"line":5},"start":{"character":0,"line":5}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "the parameter `machine` needs a type; write `machine: TYPE`",
        "range": {"end":{"character":7,"line":5},"start":{"character":0,"line":5}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 3
  }
}
{"id":7,"jsonrpc":"2.0","result":null}
{
  "error": {
    "code": -32803,
    "message": "nothing to rename here: put the cursor on the name of a declaration, a state, a field, a parameter or a `var`"
  },
  "id": 8,
  "jsonrpc": "2.0"
}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
