// Find references: an event from its use (both files), the same from its declaration in the
// imported file (the importer is found in the workspace, not open), without the declaration, a
// state that two targets name, and a field read in two places.
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
{"id":2,"method":"textDocument/references","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.app|rove}","context":{"includeDeclaration":true}}}
{"id":3,"method":"textDocument/references","params":{"textDocument":{"uri":"${ROOT}/types.jr2"},"position":"${AT:types.jr2:event app|rove}","context":{"includeDeclaration":true}}}
{"id":4,"method":"textDocument/references","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.app|rove}","context":{"includeDeclaration":false}}}
{"id":5,"method":"textDocument/references","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:state dec|ided}","context":{"includeDeclaration":true}}}
{"id":6,"method":"textDocument/references","params":{"textDocument":{"uri":"${ROOT}/types.jr2"},"position":"${AT:types.jr2:  i|d: string}","context":{"includeDeclaration":true}}}
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
  "result": [
    {
      "range": {"end":{"character":13,"line":7},"start":{"character":6,"line":7}},
      "uri": "${ROOT}/types.jr2"
    },
    {
      "range": {"end":{"character":20,"line":12},"start":{"character":13,"line":12}},
      "uri": "${ROOT}/main.jr2"
    }
  ]
}
{
  "id": 3,
  "jsonrpc": "2.0",
  "result": [
    {
      "range": {"end":{"character":13,"line":7},"start":{"character":6,"line":7}},
      "uri": "${ROOT}/types.jr2"
    },
    {
      "range": {"end":{"character":20,"line":12},"start":{"character":13,"line":12}},
      "uri": "${ROOT}/main.jr2"
    }
  ]
}
{
  "id": 4,
  "jsonrpc": "2.0",
  "result": [
    {
      "range": {"end":{"character":20,"line":12},"start":{"character":13,"line":12}},
      "uri": "${ROOT}/main.jr2"
    }
  ]
}
{
  "id": 5,
  "jsonrpc": "2.0",
  "result": [
    {
      "range": {"end":{"character":15,"line":19},"start":{"character":8,"line":19}},
      "uri": "${ROOT}/main.jr2"
    },
    {
      "range": {"end":{"character":31,"line":12},"start":{"character":24,"line":12}},
      "uri": "${ROOT}/main.jr2"
    },
    {
      "range": {"end":{"character":30,"line":15},"start":{"character":23,"line":15}},
      "uri": "${ROOT}/main.jr2"
    }
  ]
}
{
  "id": 6,
  "jsonrpc": "2.0",
  "result": [
    {
      "range": {"end":{"character":4,"line":2},"start":{"character":2,"line":2}},
      "uri": "${ROOT}/types.jr2"
    },
    {
      "range": {"end":{"character":22,"line":13},"start":{"character":20,"line":13}},
      "uri": "${ROOT}/main.jr2"
    },
    {
      "range": {"end":{"character":18,"line":29},"start":{"character":16,"line":29}},
      "uri": "${ROOT}/main.jr2"
    }
  ]
}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
