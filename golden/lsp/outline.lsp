// The outline (document symbols: each declaration with its fields, parameters, `var`s and
// states, nested as written) and the folding ranges (declaration and state bodies, runs of
// comment lines, the imports) — and both for a file that stops parsing halfway.
// --- FILE other.jr2
type Other {
  id: string
}
// --- FILE more.jr2
event more
// --- FILE main.jr2
import "other.jr2"
import "more.jr2"

// A ticket,
// as the backlog holds it.
type Ticket {
  id: string
  title: string
}

machine review(ticket: Ticket) {
  var seen: bool = false

  initial state waiting {
    on more.more -> decided
  }
  state decided {
    initial state a
    final state b
  }
}
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/main.jr2","languageId":"jr2","version":1,"text":"${TEXT:main.jr2}"}}}
{"id":2,"method":"textDocument/documentSymbol","params":{"textDocument":{"uri":"${ROOT}/main.jr2"}}}
{"id":3,"method":"textDocument/foldingRange","params":{"textDocument":{"uri":"${ROOT}/main.jr2"}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":2},"contentChanges":[{"range":{"start":{"line":11,"character":0},"end":{"line":11,"character":0}},"text":"  var x: = \n"}]}}
{"id":4,"method":"textDocument/documentSymbol","params":{"textDocument":{"uri":"${ROOT}/main.jr2"}}}
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
  "params": {
    "diagnostics": [
      {
        "code": "W0600",
        "message": "state `decided.b` is never entered: it is not initial and no transition goes into it or into a state inside it; add a transition to it, or remove it",
        "range": {"end":{"character":17,"line":18},"start":{"character":16,"line":18}},
        "severity": 2,
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
      "children": [
        {
          "detail": "Ticket.id: string",
          "kind": 8,
          "name": "id",
          "range": {"end":{"character":12,"line":6},"start":{"character":2,"line":6}},
          "selectionRange": {"end":{"character":4,"line":6},"start":{"character":2,"line":6}}
        },
        {
          "detail": "Ticket.title: string",
          "kind": 8,
          "name": "title",
          "range": {"end":{"character":15,"line":7},"start":{"character":2,"line":7}},
          "selectionRange": {"end":{"character":7,"line":7},"start":{"character":2,"line":7}}
        }
      ],
      "detail": "type Ticket",
      "kind": 23,
      "name": "Ticket",
      "range": {"end":{"character":1,"line":8},"start":{"character":0,"line":5}},
      "selectionRange": {"end":{"character":11,"line":5},"start":{"character":5,"line":5}}
    },
    {
      "children": [
        {
          "detail": "(parameter) review.ticket: Ticket",
          "kind": 13,
          "name": "ticket",
          "range": {"end":{"character":29,"line":10},"start":{"character":15,"line":10}},
          "selectionRange": {"end":{"character":21,"line":10},"start":{"character":15,"line":10}}
        },
        {
          "detail": "var review.seen: bool",
          "kind": 13,
          "name": "seen",
          "range": {"end":{"character":24,"line":11},"start":{"character":2,"line":11}},
          "selectionRange": {"end":{"character":10,"line":11},"start":{"character":6,"line":11}}
        },
        {
          "detail": "state review.waiting",
          "kind": 22,
          "name": "waiting",
          "range": {"end":{"character":3,"line":15},"start":{"character":2,"line":13}},
          "selectionRange": {"end":{"character":23,"line":13},"start":{"character":16,"line":13}}
        },
        {
          "children": [
            {
              "detail": "state review.decided.a",
              "kind": 22,
              "name": "a",
              "range": {"end":{"character":19,"line":17},"start":{"character":4,"line":17}},
              "selectionRange": {
                "end": {"character":19,"line":17},
                "start": {"character":18,"line":17}
              }
            },
            {
              "detail": "final state review.decided.b",
              "kind": 22,
              "name": "b",
              "range": {"end":{"character":17,"line":18},"start":{"character":4,"line":18}},
              "selectionRange": {
                "end": {"character":17,"line":18},
                "start": {"character":16,"line":18}
              }
            }
          ],
          "detail": "compound state review.decided",
          "kind": 22,
          "name": "decided",
          "range": {"end":{"character":3,"line":19},"start":{"character":2,"line":16}},
          "selectionRange": {"end":{"character":15,"line":16},"start":{"character":8,"line":16}}
        }
      ],
      "detail": "machine review(ticket: Ticket)",
      "kind": 5,
      "name": "review",
      "range": {"end":{"character":1,"line":20},"start":{"character":0,"line":10}},
      "selectionRange": {"end":{"character":14,"line":10},"start":{"character":8,"line":10}}
    }
  ]
}
{
  "id": 3,
  "jsonrpc": "2.0",
  "result": [
    {"endLine":1,"kind":"imports","startLine":0},
    {"endLine":4,"kind":"comment","startLine":3},
    {"endLine":8,"startLine":5},
    {"endLine":20,"startLine":10},
    {"endLine":15,"startLine":13},
    {"endLine":19,"startLine":16}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "expected a name, `(` or a string in a `var`; found `=`",
        "range": {"end":{"character":10,"line":11},"start":{"character":9,"line":11}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected an expression or `event` in a `var`; found the keyword `var`",
        "range": {"end":{"character":5,"line":12},"start":{"character":2,"line":12}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a `var`, a state, a transition, an `invoke`, an `entry`/`exit` block, `output` or `}` in the body of machine `review`; found `:`",
        "range": {"end":{"character":11,"line":12},"start":{"character":10,"line":12}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 2
  }
}
{
  "id": 4,
  "jsonrpc": "2.0",
  "result": [
    {
      "children": [
        {
          "detail": "Ticket.id: string",
          "kind": 8,
          "name": "id",
          "range": {"end":{"character":12,"line":6},"start":{"character":2,"line":6}},
          "selectionRange": {"end":{"character":4,"line":6},"start":{"character":2,"line":6}}
        },
        {
          "detail": "Ticket.title: string",
          "kind": 8,
          "name": "title",
          "range": {"end":{"character":15,"line":7},"start":{"character":2,"line":7}},
          "selectionRange": {"end":{"character":7,"line":7},"start":{"character":2,"line":7}}
        }
      ],
      "detail": "type Ticket",
      "kind": 23,
      "name": "Ticket",
      "range": {"end":{"character":1,"line":8},"start":{"character":0,"line":5}},
      "selectionRange": {"end":{"character":11,"line":5},"start":{"character":5,"line":5}}
    },
    {
      "children": [
        {
          "detail": "(parameter) review.ticket: Ticket",
          "kind": 13,
          "name": "ticket",
          "range": {"end":{"character":29,"line":10},"start":{"character":15,"line":10}},
          "selectionRange": {"end":{"character":21,"line":10},"start":{"character":15,"line":10}}
        },
        {
          "detail": "var review.x: =",
          "kind": 13,
          "name": "x",
          "range": {"end":{"character":10,"line":12},"start":{"character":2,"line":11}},
          "selectionRange": {"end":{"character":7,"line":11},"start":{"character":6,"line":11}}
        },
        {
          "detail": "state review.waiting",
          "kind": 22,
          "name": "waiting",
          "range": {"end":{"character":3,"line":16},"start":{"character":2,"line":14}},
          "selectionRange": {"end":{"character":23,"line":14},"start":{"character":16,"line":14}}
        },
        {
          "children": [
            {
              "detail": "state review.decided.a",
              "kind": 22,
              "name": "a",
              "range": {"end":{"character":19,"line":18},"start":{"character":4,"line":18}},
              "selectionRange": {
                "end": {"character":19,"line":18},
                "start": {"character":18,"line":18}
              }
            },
            {
              "detail": "final state review.decided.b",
              "kind": 22,
              "name": "b",
              "range": {"end":{"character":17,"line":19},"start":{"character":4,"line":19}},
              "selectionRange": {
                "end": {"character":17,"line":19},
                "start": {"character":16,"line":19}
              }
            }
          ],
          "detail": "compound state review.decided",
          "kind": 22,
          "name": "decided",
          "range": {"end":{"character":3,"line":20},"start":{"character":2,"line":17}},
          "selectionRange": {"end":{"character":15,"line":17},"start":{"character":8,"line":17}}
        }
      ],
      "detail": "machine review(ticket: Ticket)",
      "kind": 5,
      "name": "review",
      "range": {"end":{"character":1,"line":21},"start":{"character":0,"line":10}},
      "selectionRange": {"end":{"character":14,"line":10},"start":{"character":8,"line":10}}
    }
  ]
}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
