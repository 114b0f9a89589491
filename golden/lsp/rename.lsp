// Rename: an event across the two files (from the importer), a state named by dotted targets, a
// parameter with its reads, and the refusals: the standard library's `backlog`, a name that is
// not one, a keyword, a name taken by a sibling, a place with no name, and names that would change
// what the program means: a built-in type, `std`, an import's stem, a declaration a `var` would
// hide, a name an expression reads (`item`).
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
{"id":2,"method":"textDocument/prepareRename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.app|rove}"}}
{"id":3,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.app|rove}","newName":"accept"}}
{"id":4,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:state dec|ided}","newName":"settled"}}
{"id":5,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:review(tic|ket}","newName":"t"}}
{"id":6,"method":"textDocument/prepareRename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:std.back|log}"}}
{"id":7,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.app|rove}","newName":"2fast"}}
{"id":8,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.app|rove}","newName":"state"}}
{"id":9,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:final state n|o}","newName":"yes"}}
{"id":10,"method":"textDocument/prepareRename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:cap: |2}"}}
{"id":11,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:var no|te}","newName":"ticket"}}
{"id":12,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:types.Tic|ket)}","newName":"string"}}
{"id":13,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:review(tic|ket}","newName":"std"}}
{"id":14,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:review(tic|ket}","newName":"types"}}
{"id":15,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:var no|te}","newName":"backlog"}}
{"id":16,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:machine rev|iew}","newName":"types"}}
{"id":17,"method":"textDocument/rename","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:var no|te}","newName":"item"}}
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
    "placeholder": "approve",
    "range": {"end":{"character":20,"line":12},"start":{"character":13,"line":12}}
  }
}
{
  "id": 3,
  "jsonrpc": "2.0",
  "result": {
    "changes": {
      "${ROOT}/main.jr2": [
        {
          "newText": "accept",
          "range": {"end":{"character":20,"line":12},"start":{"character":13,"line":12}}
        }
      ],
      "${ROOT}/types.jr2": [
        {
          "newText": "accept",
          "range": {"end":{"character":13,"line":7},"start":{"character":6,"line":7}}
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
        {
          "newText": "settled",
          "range": {"end":{"character":15,"line":19},"start":{"character":8,"line":19}}
        },
        {
          "newText": "settled",
          "range": {"end":{"character":31,"line":12},"start":{"character":24,"line":12}}
        },
        {
          "newText": "settled",
          "range": {"end":{"character":30,"line":15},"start":{"character":23,"line":15}}
        }
      ]
    }
  }
}
{
  "id": 5,
  "jsonrpc": "2.0",
  "result": {
    "changes": {
      "${ROOT}/main.jr2": [
        {"newText":"t","range":{"end":{"character":21,"line":7},"start":{"character":15,"line":7}}},
        {
          "newText": "t",
          "range": {"end":{"character":31,"line":11},"start":{"character":25,"line":11}}
        },
        {
          "newText": "t",
          "range": {"end":{"character":19,"line":13},"start":{"character":13,"line":13}}
        }
      ]
    }
  }
}
{
  "error": {
    "code": -32803,
    "message": "`backlog` is declared in the standard library, which cannot be renamed"
  },
  "id": 6,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32803,
    "message": "`2fast` is not a name: write letters, digits and `_`, not starting with a digit"
  },
  "id": 7,
  "jsonrpc": "2.0"
}
{
  "error": {"code":-32803,"message":"`state` is a keyword; choose another name"},
  "id": 8,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32803,
    "message": "`yes` is taken here already by the state `review.decided.yes` (line 21)"
  },
  "id": 9,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32803,
    "message": "nothing to rename here: put the cursor on the name of a declaration, a state, a field, a parameter or a `var`"
  },
  "id": 10,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32803,
    "message": "`ticket` is taken here already by the parameter `review.ticket` (line 8)"
  },
  "id": 11,
  "jsonrpc": "2.0"
}
{
  "error": {"code":-32803,"message":"`string` is a built-in type; choose another name"},
  "id": 12,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32803,
    "message": "`std` already means something in an expression; choose another name"
  },
  "id": 13,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32803,
    "message": "`types` names an imported file here (`import \"types.jr2\"`); choose another name"
  },
  "id": 14,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32803,
    "message": "`backlog` is declared in this file already; a parameter or `var` of that name would hide it"
  },
  "id": 15,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32803,
    "message": "`types` names an imported file here (`import \"types.jr2\"`); choose another name"
  },
  "id": 16,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32803,
    "message": "`item` already means something in an expression; choose another name"
  },
  "id": 17,
  "jsonrpc": "2.0"
}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
