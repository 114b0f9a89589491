// Documents a hostile client might send. A didChange with a bad part (a version that is not a
// number, a negative position in its second change) changes nothing, and the client's log says
// why; a didOpen whose text is not a string opens nothing. A second URI of an open file (`%74`
// for `t`, `sub/..`) is not checked, and a message says so. A file asked about without being
// open is read only when it is a regular file: not /dev/zero, not a folder. A position that is
// not a whole number is refused; one past the end of the text is the end.
// --- FILE tickets.jr2
type Ticket {
  id: string
}
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/tickets.jr2","languageId":"jr2","version":1,"text":"${TEXT:tickets.jr2}"}}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/tickets.jr2","version":"x"},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"\n\n\n"}]}}
{"method":"textDocument/didChange","params":{"textDocument":{"uri":"${ROOT}/tickets.jr2","version":2},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"\n"},{"range":{"start":{"line":-1,"character":0},"end":{"line":0,"character":0}},"text":"x"}]}}
{"id":2,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/tickets.jr2"},"position":"${AT:tickets.jr2:type T|icket}"}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/other.jr2","languageId":"jr2","version":1,"text":5}}}
{"id":3,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/other.jr2"},"position":{"line":0,"character":0}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/%74ickets.jr2","languageId":"jr2","version":1,"text":"type Tkt {\n  id: string\n}\n"}}}
{"id":4,"method":"textDocument/definition","params":{"textDocument":{"uri":"${ROOT}/tickets.jr2"},"position":"${AT:tickets.jr2:type T|icket}"}}
{"id":5,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/%74ickets.jr2"},"position":{"line":0,"character":6}}}
{"id":6,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///dev/zero"},"position":{"line":0,"character":0}}}
{"id":7,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}"},"position":{"line":0,"character":0}}}
{"id":8,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/tickets.jr2"},"position":{"line":1e300,"character":0}}}
{"id":9,"method":"textDocument/hover","params":{"textDocument":{"uri":"${ROOT}/tickets.jr2"},"position":{"line":18446744073709551615,"character":18446744073709551615}}}
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
  "params": {"diagnostics":[],"uri":"${ROOT}/tickets.jr2","version":1}
}
{
  "jsonrpc": "2.0",
  "method": "window/logMessage",
  "params": {
    "message": "jr2c lsp: `textDocument/didChange` was ignored: bad params for `textDocument/didChange`: [json.exception.type_error.302] type must be number, but is string",
    "type": 2
  }
}
{
  "jsonrpc": "2.0",
  "method": "window/logMessage",
  "params": {
    "message": "jr2c lsp: `textDocument/didChange` was ignored: bad params for `textDocument/didChange`: a negative position",
    "type": 2
  }
}
{
  "id": 2,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":11,"line":0},"start":{"character":5,"line":0}},
    "uri": "${ROOT}/tickets.jr2"
  }
}
{
  "jsonrpc": "2.0",
  "method": "window/logMessage",
  "params": {
    "message": "jr2c lsp: `textDocument/didOpen` was ignored: bad params for `textDocument/didOpen`: [json.exception.type_error.302] type must be string, but is number",
    "type": 2
  }
}
{
  "error": {
    "code": -32602,
    "message": "`${ROOT}/other.jr2` is not open and is not a file jr2c can read"
  },
  "id": 3,
  "jsonrpc": "2.0"
}
{
  "jsonrpc": "2.0",
  "method": "window/showMessage",
  "params": {
    "message": "jr2c lsp: `${ROOT}/%74ickets.jr2` is the file already open as `${ROOT}/tickets.jr2`; only that one is checked",
    "type": 2
  }
}
{
  "id": 4,
  "jsonrpc": "2.0",
  "result": {
    "range": {"end":{"character":11,"line":0},"start":{"character":5,"line":0}},
    "uri": "${ROOT}/tickets.jr2"
  }
}
{"id":5,"jsonrpc":"2.0","result":null}
{
  "error": {
    "code": -32602,
    "message": "`file:///dev/zero` is not open and is not a file jr2c can read"
  },
  "id": 6,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32602,
    "message": "`${ROOT}` is not open and is not a file jr2c can read"
  },
  "id": 7,
  "jsonrpc": "2.0"
}
{
  "error": {
    "code": -32602,
    "message": "bad params for `textDocument/hover`: a position's line and character are whole numbers"
  },
  "id": 8,
  "jsonrpc": "2.0"
}
{"id":9,"jsonrpc":"2.0","result":null}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
