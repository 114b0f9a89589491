// An `initialize` whose params are broken (a workspace folder that is not an object) is
// refused, and the server is not initialized by it: the next request is still refused, and a
// good `initialize` then works.
// --- IN
{"id":1,"method":"initialize","params":{"workspaceFolders":[5],"capabilities":{}}}
{"id":2,"method":"textDocument/hover","params":{}}
{"id":3,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"id":4,"method":"shutdown"}
{"method":"exit"}
// --- OUT
{
  "error": {
    "code": -32602,
    "message": "bad params for `initialize`: [json.exception.type_error.304] cannot use at() with number"
  },
  "id": 1,
  "jsonrpc": "2.0"
}
{"error":{"code":-32002,"message":"send `initialize` first"},"id":2,"jsonrpc":"2.0"}
{
  "id": 3,
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
{"id":4,"jsonrpc":"2.0","result":null}
exit: 0
