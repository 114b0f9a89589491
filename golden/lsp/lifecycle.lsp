// The protocol's life cycle: a request before `initialize` is refused, `initialize` says what
// the server does (and is refused a second time), an unknown method is MethodNotFound, a
// notification the server does not know is ignored, and `shutdown` then `exit` ends it with 0.
// --- IN
{"id":1,"method":"textDocument/hover","params":{}}
{"id":2,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"initialized","params":{}}
{"id":3,"method":"initialize","params":{}}
{"id":4,"method":"workspace/symbol","params":{"query":"x"}}
{"method":"$/cancelRequest","params":{"id":4}}
{"method":"workspace/didChangeConfiguration","params":{"settings":{}}}
{"id":5,"method":"shutdown"}
{"id":6,"method":"textDocument/hover","params":{}}
{"method":"exit"}
{"id":7,"method":"shutdown"}
// --- OUT
{"error":{"code":-32002,"message":"send `initialize` first"},"id":1,"jsonrpc":"2.0"}
{
  "id": 2,
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
{"error":{"code":-32600,"message":"`initialize` was sent twice"},"id":3,"jsonrpc":"2.0"}
{
  "error": {"code":-32601,"message":"`workspace/symbol` is not a method jr2c lsp serves"},
  "id": 4,
  "jsonrpc": "2.0"
}
{"id":5,"jsonrpc":"2.0","result":null}
{
  "error": {"code":-32600,"message":"the server is shutting down; send `exit`"},
  "id": 6,
  "jsonrpc": "2.0"
}
exit: 0
