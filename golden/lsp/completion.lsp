// Completion: events after `on` (the file's, an import's as `types.…`, `done` and `error`),
// states after `->` (nested ones by their path), fields after `x.` while the line being typed
// does not parse (from the last good analysis), `std.` and an import's `stem.`, `item.` in a
// pool, a pool's keys, the keywords of the top level, and the types in a field's type.
// --- FILE types.jr2
type Ticket {
  id: string
  title: string "What it is about."
}

event approve external
// --- FILE main.jr2
import "types.jr2"

event escalate

source tickets(items: list<types.Ticket>): types.Ticket {
  next: std.queue(items)
}

machine review(ticket: types.Ticket) {
  var note: string = ""

  initial state waiting {
    invoke gate
    on types.approve -> decided.yes {
      note = ticket.id
    }
    on escalate -> decided
  }
  state decided {
    initial final state yes
  }
}

pool reviews(items: list<types.Ticket>) of review {
  source: tickets(input.items)
  item_id: item.id
}
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/main.jr2","languageId":"jr2","version":1,"text":"${TEXT:main.jr2}"}}}
{"id":2,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:on types.ap|prove}"}}
{"id":3,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":"${AT:main.jr2:-> |decided.yes}"}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":2},"contentChanges":[{"range":{"start":{"line":15,"character":0},"end":{"line":15,"character":0}},"text":"      note = ticket.\n"}]}}
{"id":4,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":15,"character":20}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":3},"contentChanges":[{"range":{"start":{"line":15,"character":0},"end":{"line":16,"character":0}},"text":"      note = std.\n"}]}}
{"id":5,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":15,"character":17}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":4},"contentChanges":[{"range":{"start":{"line":15,"character":0},"end":{"line":16,"character":0}},"text":"      note = types.\n"}]}}
{"id":6,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":15,"character":19}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":5},"contentChanges":[{"range":{"start":{"line":15,"character":0},"end":{"line":16,"character":0}},"text":""}]}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":6},"contentChanges":[{"range":{"start":{"line":26,"character":0},"end":{"line":26,"character":0}},"text":"  ca\n"}]}}
{"id":7,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":26,"character":4}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":7},"contentChanges":[{"range":{"start":{"line":26,"character":0},"end":{"line":27,"character":0}},"text":""}]}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":8},"contentChanges":[{"range":{"start":{"line":27,"character":0},"end":{"line":27,"character":0}},"text":"ma"}]}}
{"id":8,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":27,"character":2}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":9},"contentChanges":[{"range":{"start":{"line":27,"character":0},"end":{"line":27,"character":2}},"text":"type Note {\n  body: \n}\n"}]}}
{"id":9,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":28,"character":8}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":10},"contentChanges":[{"range":{"start":{"line":17,"character":0},"end":{"line":17,"character":0}},"text":"    on \n"}]}}
{"id":10,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":17,"character":7}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":11},"contentChanges":[{"range":{"start":{"line":17,"character":0},"end":{"line":18,"character":0}},"text":"    on escalate -> \n"}]}}
{"id":11,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":17,"character":18}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/main.jr2","version":12},"contentChanges":[{"range":{"start":{"line":25,"character":0},"end":{"line":26,"character":0}},"text":"  item_id: item.\n"}]}}
{"id":12,"method":"textDocument/completion","params":{"textDocument":{"uri":"${ROOT}/main.jr2"},"position":{"line":25,"character":17}}}
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
    {"detail":"event escalate","kind":23,"label":"escalate"},
    {"detail":"event approve external","kind":23,"label":"types.approve"},
    {"detail":"the invoked child finished","kind":14,"label":"done"},
    {"detail":"the invoked child failed","kind":14,"label":"error"}
  ]
}
{
  "id": 3,
  "jsonrpc": "2.0",
  "result": [
    {"detail":"state review.waiting","kind":20,"label":"waiting"},
    {"detail":"compound state review.decided","kind":20,"label":"decided"},
    {"detail":"final state review.decided.yes","kind":20,"label":"decided.yes"}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "expected a name in the actions of a transition; found `}`",
        "range": {"end":{"character":5,"line":16},"start":{"character":4,"line":16}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name or `fail` in the actions of a transition; found `->`",
        "range": {"end":{"character":18,"line":17},"start":{"character":16,"line":17}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a `var`, a state, a transition, an `invoke`, an `entry`/`exit` block, `output` or `}` in the body of machine `review`; found the keyword `pool`",
        "range": {"end":{"character":4,"line":24},"start":{"character":0,"line":24}},
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
    {"detail":"string","kind":5,"label":"id"},
    {"detail":"string","documentation":"What it is about.","kind":5,"label":"title"}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "expected a name in the actions of a transition; found `}`",
        "range": {"end":{"character":5,"line":16},"start":{"character":4,"line":16}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name or `fail` in the actions of a transition; found `->`",
        "range": {"end":{"character":18,"line":17},"start":{"character":16,"line":17}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a `var`, a state, a transition, an `invoke`, an `entry`/`exit` block, `output` or `}` in the body of machine `review`; found the keyword `pool`",
        "range": {"end":{"character":4,"line":24},"start":{"character":0,"line":24}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 3
  }
}
{
  "id": 5,
  "jsonrpc": "2.0",
  "result": [
    {"detail":"type CommandResult","kind":22,"label":"CommandResult"},
    {"detail":"type CommandSpec","kind":22,"label":"CommandSpec"},
    {"detail":"type HttpRequest","kind":22,"label":"HttpRequest"},
    {"detail":"extern backlog(path: string) -> json","kind":3,"label":"backlog"},
    {"detail":"extern command(spec: CommandSpec) -> CommandResult","kind":3,"label":"command"},
    {
      "detail": "extern http_get(request: HttpRequest) -> json idempotent",
      "kind": 3,
      "label": "http_get"
    },
    {"detail":"extern queue(items: list<json>) -> json","kind":3,"label":"queue"}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "expected a name in the actions of a transition; found `}`",
        "range": {"end":{"character":5,"line":16},"start":{"character":4,"line":16}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name or `fail` in the actions of a transition; found `->`",
        "range": {"end":{"character":18,"line":17},"start":{"character":16,"line":17}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a `var`, a state, a transition, an `invoke`, an `entry`/`exit` block, `output` or `}` in the body of machine `review`; found the keyword `pool`",
        "range": {"end":{"character":4,"line":24},"start":{"character":0,"line":24}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 4
  }
}
{
  "id": 6,
  "jsonrpc": "2.0",
  "result": [
    {"detail":"type Ticket","kind":22,"label":"Ticket"},
    {"detail":"event approve external","kind":23,"label":"approve"}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {"diagnostics":[],"uri":"${ROOT}/main.jr2","version":5}
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "`ca` is not a key of pool `reviews`; did you mean `cap`?",
        "range": {"end":{"character":4,"line":26},"start":{"character":2,"line":26}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 6
  }
}
{
  "id": 7,
  "jsonrpc": "2.0",
  "result": [
    {"detail":"a pool's key","kind":10,"label":"source"},
    {"detail":"a pool's key","kind":10,"label":"item_id"},
    {"detail":"a pool's key","kind":10,"label":"cap"},
    {"detail":"a pool's key","kind":10,"label":"item_input"},
    {"detail":"a pool's key","kind":10,"label":"failures"},
    {"detail":"a pool's key","kind":10,"label":"standing"}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {"diagnostics":[],"uri":"${ROOT}/main.jr2","version":7}
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "expected a declaration or the end of the file at the top level of the file; found `ma`",
        "range": {"end":{"character":2,"line":27},"start":{"character":0,"line":27}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 8
  }
}
{
  "id": 8,
  "jsonrpc": "2.0",
  "result": [
    {"kind":14,"label":"import"},
    {"kind":14,"label":"type"},
    {"kind":14,"label":"event"},
    {"kind":14,"label":"agent"},
    {"kind":14,"label":"extern"},
    {"kind":14,"label":"source"},
    {"kind":14,"label":"machine"},
    {"kind":14,"label":"pool"},
    {"kind":14,"label":"workflow"}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "expected a name, `(` or a string in the body of type `Note`; found `}`",
        "range": {"end":{"character":1,"line":29},"start":{"character":0,"line":29}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 9
  }
}
{
  "id": 9,
  "jsonrpc": "2.0",
  "result": [
    {"detail":"a built-in type","kind":14,"label":"string"},
    {"detail":"a built-in type","kind":14,"label":"int"},
    {"detail":"a built-in type","kind":14,"label":"float"},
    {"detail":"a built-in type","kind":14,"label":"bool"},
    {"detail":"a built-in type","kind":14,"label":"duration"},
    {"detail":"a built-in type","kind":14,"label":"json"},
    {"detail":"a built-in type","kind":14,"label":"list"},
    {"detail":"a built-in type","kind":14,"label":"map"},
    {"detail":"type Ticket","kind":22,"label":"types.Ticket"}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "expected a name, `done` or `error` in a transition; found `}`",
        "range": {"end":{"character":3,"line":18},"start":{"character":2,"line":18}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name, `(` or a string in the body of type `Note`; found `}`",
        "range": {"end":{"character":1,"line":30},"start":{"character":0,"line":30}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 10
  }
}
{
  "id": 10,
  "jsonrpc": "2.0",
  "result": [
    {"detail":"event escalate","kind":23,"label":"escalate"},
    {"detail":"event approve external","kind":23,"label":"types.approve"},
    {"detail":"the invoked child finished","kind":14,"label":"done"},
    {"detail":"the invoked child failed","kind":14,"label":"error"}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "expected a name in a transition; found `}`",
        "range": {"end":{"character":3,"line":18},"start":{"character":2,"line":18}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name, `(` or a string in the body of type `Note`; found `}`",
        "range": {"end":{"character":1,"line":30},"start":{"character":0,"line":30}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 11
  }
}
{
  "id": 11,
  "jsonrpc": "2.0",
  "result": [
    {"detail":"state review.waiting","kind":20,"label":"waiting"},
    {"detail":"compound state review.decided","kind":20,"label":"decided"},
    {"detail":"final state review.decided.yes","kind":20,"label":"decided.yes"}
  ]
}
{
  "jsonrpc": "2.0",
  "method": "textDocument/publishDiagnostics",
  "params": {
    "diagnostics": [
      {
        "code": "E0001",
        "message": "expected a name in a transition; found `}`",
        "range": {"end":{"character":3,"line":18},"start":{"character":2,"line":18}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name or `}` in the body of pool `reviews`; found `:`",
        "range": {"end":{"character":10,"line":26},"start":{"character":9,"line":26}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "expected a name, `(` or a string in the body of type `Note`; found `}`",
        "range": {"end":{"character":1,"line":30},"start":{"character":0,"line":30}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "`item` is not a key of pool `reviews`; its keys are `source`, `item_id`, `cap`, `item_input`, `failures` and `standing`",
        "range": {"end":{"character":15,"line":26},"start":{"character":11,"line":26}},
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0001",
        "message": "`id` is not a key of pool `reviews`; its keys are `source`, `item_id`, `cap`, `item_input`, `failures` and `standing`",
        "range": {"end":{"character":18,"line":26},"start":{"character":16,"line":26}},
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/main.jr2",
    "version": 12
  }
}
{
  "id": 12,
  "jsonrpc": "2.0",
  "result": [
    {"detail":"string","kind":5,"label":"id"},
    {"detail":"string","documentation":"What it is about.","kind":5,"label":"title"}
  ]
}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
