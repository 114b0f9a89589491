// A file whose imports do not check is never shown clean: what `jr2c check` reports in the
// files it imports (here an import cycle, reported in the imported file, and a mistake two
// imports away) is one diagnostic at each import that reaches it, with the first one's code,
// where it is, and a link to it.
// --- FILE a.jr2
import "b.jr2"
import "c.jr2"

type A {
  id: string
}
// --- FILE b.jr2
import "a.jr2"

type B {
  id: string
}
// --- FILE c.jr2
import "d.jr2"

type C {
  id: string
}
// --- FILE d.jr2
type D {
  id: strin
}
// --- IN
{"id":1,"method":"initialize","params":{"rootUri":"${ROOT}","capabilities":{}}}
{"method":"textDocument/didOpen","params":{"textDocument":{"uri":"${ROOT}/a.jr2","languageId":"jr2","version":1,"text":"${TEXT:a.jr2}"}}}
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
        "code": "E0103",
        "message": "`b.jr2` brings 1 error with it; the first, at b.jr2:1: import cycle: `${ROOTPATH}/a.jr2` → `${ROOTPATH}/b.jr2` → `${ROOTPATH}/a.jr2`; move what the files share into a file that both import",
        "range": {"end":{"character":14,"line":0},"start":{"character":7,"line":0}},
        "relatedInformation": [
          {
            "location": {
              "range": {"end":{"character":14,"line":0},"start":{"character":7,"line":0}},
              "uri": "${ROOT}/b.jr2"
            },
            "message": "import cycle: `${ROOTPATH}/a.jr2` → `${ROOTPATH}/b.jr2` → `${ROOTPATH}/a.jr2`; move what the files share into a file that both import"
          }
        ],
        "severity": 1,
        "source": "jr2c"
      },
      {
        "code": "E0100",
        "message": "`c.jr2` brings 1 error with it; the first, at d.jr2:2: unknown type `strin`; did you mean `string`?",
        "range": {"end":{"character":14,"line":1},"start":{"character":7,"line":1}},
        "relatedInformation": [
          {
            "location": {
              "range": {"end":{"character":11,"line":1},"start":{"character":6,"line":1}},
              "uri": "${ROOT}/d.jr2"
            },
            "message": "unknown type `strin`; did you mean `string`?"
          }
        ],
        "severity": 1,
        "source": "jr2c"
      }
    ],
    "uri": "${ROOT}/a.jr2",
    "version": 1
  }
}
{"id":99,"jsonrpc":"2.0","result":null}
exit: 0
