// Hover: a type with its comment and fields, a field with its description, an event with its
// payload's JSON Schema, an event with none, a state with its Menu (the events a Gate there
// accepts), a parameter, a `var`, a Source, a machine's signature, `item` and `input` (their
// types), the standard library's `backlog`, and a place with nothing to say (null).
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
{"id":2,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.Tic|ket)}"}}
{"id":3,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:ticket.ti|tle}"}}
{"id":4,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.rej|ect}"}}
{"id":5,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.app|rove}"}}
{"id":6,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:state wa|iting}"}}
{"id":7,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:review(tic|ket}"}}
{"id":8,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:var no|te}"}}
{"id":9,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:source: back|log}"}}
{"id":10,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:of rev|iew}"}}
{"id":11,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:item_id: it|em}"}}
{"id":12,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:std.back|log}"}}
{"id":13,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:cap: |2}"}}
{"id":14,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:decided.|no}"}}
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
    "contents": {
      "kind": "markdown",
      "value": "```jr2\ntype Ticket\n```\n\nA work item.\n\nFields:\n- `id: string`\n- `title: string` — What it is about.\n- `needs: list<string>`\n"
    },
    "range": {"end":{"character":35,"line":7},"start":{"character":29,"line":7}}
  }
}
{
  "id": 3,
  "jsonrpc": "2.0",
  "result": {
    "contents": {
      "kind": "markdown",
      "value": "```jr2\nTicket.title: string\n```\n\nWhat it is about.\n"
    },
    "range": {"end":{"character":37,"line":11},"start":{"character":32,"line":11}}
  }
}
{
  "id": 4,
  "jsonrpc": "2.0",
  "result": {
    "contents": {
      "kind": "markdown",
      "value": "```jr2\nevent reject external\n```\n\nRefuse the ticket.\n\nPayload schema:\n```json\n{\"type\": \"object\", \"properties\": {\"reason\": {\"type\": \"string\", \"description\": \"Why, in one sentence.\"}}, \"required\": [\"reason\"], \"additionalProperties\": false}\n```\n"
    },
    "range": {"end":{"character":19,"line":15},"start":{"character":13,"line":15}}
  }
}
{
  "id": 5,
  "jsonrpc": "2.0",
  "result": {
    "contents": {
      "kind": "markdown",
      "value": "```jr2\nevent approve external\n```\n\nAccept the ticket.\n\nNo payload.\n"
    },
    "range": {"end":{"character":20,"line":12},"start":{"character":13,"line":12}}
  }
}
{
  "id": 6,
  "jsonrpc": "2.0",
  "result": {
    "contents": {
      "kind": "markdown",
      "value": "```jr2\nstate review.waiting\n```\n\nInvokes `gate`.\n\nMenu: a Gate here accepts `types.approve`, `types.reject`.\n"
    },
    "range": {"end":{"character":23,"line":10},"start":{"character":16,"line":10}}
  }
}
{
  "id": 7,
  "jsonrpc": "2.0",
  "result": {
    "contents": {"kind":"markdown","value":"```jr2\n(parameter) review.ticket: Ticket\n```\n"},
    "range": {"end":{"character":21,"line":7},"start":{"character":15,"line":7}}
  }
}
{
  "id": 8,
  "jsonrpc": "2.0",
  "result": {
    "contents": {"kind":"markdown","value":"```jr2\nvar review.note: string\n```\n"},
    "range": {"end":{"character":10,"line":8},"start":{"character":6,"line":8}}
  }
}
{
  "id": 9,
  "jsonrpc": "2.0",
  "result": {
    "contents": {"kind":"markdown","value":"```jr2\nsource backlog(file: string): Ticket\n```\n"},
    "range": {"end":{"character":17,"line":28},"start":{"character":10,"line":28}}
  }
}
{
  "id": 10,
  "jsonrpc": "2.0",
  "result": {
    "contents": {
      "kind": "markdown",
      "value": "```jr2\nmachine review(ticket: Ticket) -> string\n```\n\nOne review a ticket.\n"
    },
    "range": {"end":{"character":44,"line":27},"start":{"character":38,"line":27}}
  }
}
{
  "id": 11,
  "jsonrpc": "2.0",
  "result": {
    "contents": {"kind":"markdown","value":"```jr2\nitem: Ticket\n```\n"},
    "range": {"end":{"character":15,"line":29},"start":{"character":11,"line":29}}
  }
}
{
  "id": 12,
  "jsonrpc": "2.0",
  "result": {
    "contents": {
      "kind": "markdown",
      "value": "```jr2\nextern backlog(path: string) -> json\n```\n\nA Work Source over a JSON file of items with `id` and `needs`.\n"
    },
    "range": {"end":{"character":19,"line":3},"start":{"character":12,"line":3}}
  }
}
{"id":13,"jsonrpc":"2.0","result":null}
{
  "id": 14,
  "jsonrpc": "2.0",
  "result": {
    "contents": {"kind":"markdown","value":"```jr2\nfinal state review.decided.no\n```\n"},
    "range": {"end":{"character":33,"line":15},"start":{"character":31,"line":15}}
  }
}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
