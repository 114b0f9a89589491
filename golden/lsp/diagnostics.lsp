// Diagnostics as `jr2c check` gives them: a misspelled event (E0100) with its code, its
// did-you-mean, the note at the declaration as related information, and the fix-it as a quick
// fix; an edit that fixes it clears them; a second open file that imports the first is checked
// again when the first changes.
// --- FILE types.jr2
event approve external "Accept the ticket."
event reject external
// --- FILE main.jr2
import "types.jr2"

event escalate

machine review() {
  initial state waiting {
    invoke gate
    on types.aprove -> decided
    on escalat -> decided
  }
  final state decided
}

workflow reviews = review
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/main.jr2","languageId":"jr2","version":1,"text":"${TEXT:main.jr2}"}}}
{"id":2,"method":"textDocument/codeAction","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"range":{"start":"${AT:main.jr2:on es|calat}","end":"${AT:main.jr2:on es|calat}"},"context":{"diagnostics":[]}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":2},"contentChanges":[{"range":{"start":"${AT:main.jr2:types.apr|ove}","end":"${AT:main.jr2:types.apr|ove}"},"text":"p"}]}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":3},"contentChanges":[{"range":{"start":{"line":8,"character":14},"end":{"line":8,"character":14}},"text":"e"}]}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/types.jr2","languageId":"jr2","version":1,"text":"${TEXT:types.jr2}"}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/types.jr2","version":2},"contentChanges":[{"range":{"start":{"line":0,"character":6},"end":{"line":0,"character":13}},"text":"accept"}]}}
{"method":"textDocument/didClose","params":{"textDocument":{"uri":"${ROOT}/types.jr2"}}}
{"id":3,"method":"shutdown"}
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
  "params": {
    "diagnostics": [
      {
        "code": "E0100",
        "message": "`types` has no declaration named `aprove`; did you mean `types.approve`?",
        "range": {"end":{"character":19,"line":7},"start":{"character":13,"line":7}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0100",
        "message": "unknown event `escalat`; did you mean `escalate`?",
        "range": {"end":{"character":14,"line":8},"start":{"character":7,"line":8}},
        "relatedInformation": [
          {
            "location": {
              "range": {"end":{"character":14,"line":2},"start":{"character":6,"line":2}},
              "uri": "${ROOT}/main.jr2"
            },
            "message": "`escalate` is declared here"
          }
        ],
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 1
  }
}
{
  "id": 2,
  "jsonrpc": "2.0",
  "result": [
    {
      "diagnostics": [
        {
          "code": "E0100",
          "message": "unknown event `escalat`; did you mean `escalate`?",
          "range": {"end":{"character":14,"line":8},"start":{"character":7,"line":8}},
          "relatedInformation": [
            {
              "location": {
                "range": {"end":{"character":14,"line":2},"start":{"character":6,"line":2}},
                "uri": "${ROOT}/main.jr2"
              },
              "message": "`escalate` is declared here"
            }
          ],
          "severity": 1,
          "source": "jr2c"
        }
      ],
      "edit": {
        "changes": {
          "${ROOT}/main.jr2": [
            {
              "newText": "escalate",
              "range": {"end":{"character":14,"line":8},"start":{"character":7,"line":8}}
            }
          ]
        }
      },
      "isPreferred": true,
      "kind": "quickfix",
      "title": "Change `escalat` to `escalate` (E0100)"
    }
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0100",
        "message": "`types` has no declaration named `aprpove`; did you mean `types.approve`?",
        "range": {"end":{"character":20,"line":7},"start":{"character":13,"line":7}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0100",
        "message": "unknown event `escalat`; did you mean `escalate`?",
        "range": {"end":{"character":14,"line":8},"start":{"character":7,"line":8}},
        "relatedInformation": [
          {
            "location": {
              "range": {"end":{"character":14,"line":2},"start":{"character":6,"line":2}},
              "uri": "${ROOT}/main.jr2"
            },
            "message": "`escalate` is declared here"
          }
        ],
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 2
  }
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0100",
        "message": "`types` has no declaration named `aprpove`; did you mean `types.approve`?",
        "range": {"end":{"character":20,"line":7},"start":{"character":13,"line":7}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 3
  }
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {"diagnostics":[],"uri":"${ROOT}/types.jr2","version":1}
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0100",
        "message": "`types` has no declaration named `aprpove`; check the name in `${ROOTPATH}/types.jr2`",
        "range": {"end":{"character":20,"line":7},"start":{"character":13,"line":7}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 3
  }
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {"diagnostics":[],"uri":"${ROOT}/types.jr2","version":2}
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {"diagnostics":[],"uri":"${ROOT}/types.jr2"}
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0100",
        "message": "`types` has no declaration named `aprpove`; did you mean `types.approve`?",
        "range": {"end":{"character":20,"line":7},"start":{"character":13,"line":7}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 3
  }
}
{"id":3,"jsonrpc":"2.0","result":null}
exit: 0
