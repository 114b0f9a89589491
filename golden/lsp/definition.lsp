// Go to definition: an event and a type across an import, a field through a parameter, a
// dotted state target (each part its own state), a `var` it assigns, an import's path (the
// file), a pool's `input.` parameter, and `std.backlog` into the standard library's text.
// --- FILE types.jr2
// A work item.
type Ticket {
  id: string
  title: string "What it is about."
  needs: list<string> = []
}

event approve external "Accept the ticket."
event reject external "Refuse the ticket." {
  reason: string "Why, in one sentence."
}
// --- FILE main.jr2
import "types.jr2"

source backlog(file: string): types.Ticket {
  next: std.backlog(file)
}

// One review a ticket.
machine review(ticket: types.Ticket) -> string {
  var note: string = ""

  initial state waiting {
    invoke gate { title: ticket.title }
    on types.approve -> decided.yes {
      note = ticket.id
    }
    on types.reject -> decided.no {
      note = event.reason
    }
  }
  state decided {
    initial final state yes
    final state no
  }

  output note
}

pool reviews(backlog_file: string) of review {
  source: backlog(input.backlog_file)
  item_id: item.id
  cap: 2
}

workflow tickets = reviews
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/main.jr2","languageId":"jr2","version":1,"text":"${TEXT:main.jr2}"}}}
{"id":2,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.app|rove}"}}
{"id":3,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.Tic|ket)}"}}
{"id":4,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:ticket.ti|tle}"}}
{"id":5,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:decided.y|es}"}}
{"id":6,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:de|cided.yes}"}}
{"id":7,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:      no|te = ticket}"}}
{"id":8,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:import "ty|pes}"}}
{"id":9,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:input.backlog|_file}"}}
{"id":10,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:std.back|log}"}}
{"id":11,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:event.rea|son}"}}
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
    "range": {"end":{"character":13,"line":7},"start":{"character":6,"line":7}},
    "uri": "${ROOT}/types.jr2"
  }
}
{
  "id": 3,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":11,"line":1},"start":{"character":5,"line":1}},
    "uri": "${ROOT}/types.jr2"
  }
}
{
  "id": 4,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":7,"line":3},"start":{"character":2,"line":3}},
    "uri": "${ROOT}/types.jr2"
  }
}
{
  "id": 5,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":27,"line":20},"start":{"character":24,"line":20}},
    "uri": "${ROOT}/main.jr2"
  }
}
{
  "id": 6,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":15,"line":19},"start":{"character":8,"line":19}},
    "uri": "${ROOT}/main.jr2"
  }
}
{
  "id": 7,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":10,"line":8},"start":{"character":6,"line":8}},
    "uri": "${ROOT}/main.jr2"
  }
}
{
  "id": 8,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":0,"line":0},"start":{"character":0,"line":0}},
    "uri": "${ROOT}/types.jr2"
  }
}
{
  "id": 9,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":25,"line":27},"start":{"character":13,"line":27}},
    "uri": "${ROOT}/main.jr2"
  }
}
{
  "id": 10,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":14,"line":9},"start":{"character":7,"line":9}},
    "uri": "${ROOT}/.cache/std-test.jr2"
  }
}
{
  "id": 11,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":8,"line":9},"start":{"character":2,"line":9}},
    "uri": "${ROOT}/types.jr2"
  }
}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
