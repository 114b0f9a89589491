// Hostile and broken messages: each gets one error answer and changes nothing; the server goes
// on serving. Not JSON, JSON nested 1,000 deep, an array, a request without a method, an id that
// is an object, params of the wrong shape, a position past the end, a document that is neither
// open nor on disk, and text that is not UTF-8.
// --- FILE a.jr2
type A {
  id: string
}
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"id":2,"method":"textDocument/hover",
[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
[1,2,3]
{"id":3,"params":{}}
{"id":{"a":1},"method":"shutdown"}
{"id":4,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/a.jr2"},"position":"here"}}
{"id":5,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/nowhere.jr2"},"position":{"line":0,"character":0}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/a.jr2","languageId":"jr2","version":1,"text":"${TEXT:a.jr2}"}}}
{"id":6,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/a.jr2"},"position":{"line":900,"character":900}}}
{"id":7,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/a.jr2"},"position":{"line":-1,"character":0}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/a.jr2","version":2},"contentChanges":[{"text":"type A {\n  id: string \u00ff\u001b[31m\n}\n"}]}}
{"id":8,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/a.jr2"},"position":"${AT:a.jr2:type |A}"}}
{"id":9,"method":"shutdown"}
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
{"error":{"code":-32700,"message":"the message is not JSON"},"id":null,"jsonrpc":"2.0"}
{
  "error": {"code":-32700,"message":"the message nests deeper than 64 levels"},
  "id": null,
  "jsonrpc": "2.0"
}
{"error":{"code":-32600,"message":"a request needs a `method` string"},"id":null,"jsonrpc":"2.0"}
{
  "error": {"code":-32600,"message":"a request's `id` is a number or a string"},
  "id": null,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32602,
    "message": "bad params for `textDocument/hover`: [json.exception.type_error.304] cannot use at() with string"
  },
  "id": 4,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32602,
    "message": "`${ROOT}/nowhere.jr2` is not open and is not a file jr2c can read"
  },
  "id": 5,
  "jsonrpc": "2.0"
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {"diagnostics":[],"uri":"${ROOT}/a.jr2","version":1}
}
{"id":6,"jsonrpc":"2.0","result":null}
{
  "error": {"code":-32602,"message":"bad params for `textDocument/hover`: a negative position"},
  "id": 7,
  "jsonrpc": "2.0"
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "unexpected character `ÿ`; remove it (names are ASCII letters, digits and `_`)",
        "range": {"end":{"character":14,"line":1},"start":{"character":13,"line":1}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "unexpected character `\u001b`; remove it (names are ASCII letters, digits and `_`)",
        "range": {"end":{"character":15,"line":1},"start":{"character":14,"line":1}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "this `[` is never closed; add `]` where the list ends",
        "range": {"end":{"character":16,"line":1},"start":{"character":15,"line":1}},
        "relatedInformation": [
          {
            "location": {
              "range": {"end":{"character":1,"line":2},"start":{"character":0,"line":2}},
              "uri": "${ROOT}/a.jr2"
            },
            "message": "the file ends after this, with the bracket still open"
          }
        ],
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name or `}` in the body of type `A`; found `[`",
        "range": {"end":{"character":16,"line":1},"start":{"character":15,"line":1}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/a.jr2",
    "version": 2
  }
}
{
  "id": 8,
  "jsonrpc": "2.0",
  "result": {
    "contents": {"kind":"markdown","value":"```jr2\ntype A\n```\n\nFields:\n- `id: string`\n"},
    "range": {"end":{"character":6,"line":0},"start":{"character":5,"line":0}}
  }
}
{"id":9,"jsonrpc":"2.0","result":null}
exit: 0
