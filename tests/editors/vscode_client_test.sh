#!/usr/bin/env bash
# The VS Code extension's client and its packaging (editors/vscode/, #35):
#  a. scripts/package_vsix.sh packages the extension into a temporary .vsix, which must hold
#     extension.js, server.js, package.json, the grammar, the language configuration and
#     node_modules/vscode-languageclient (with what it requires), and no test file, snapshot,
#     lockfile, TypeScript source, source map or development package (vsce);
#  b. vscode_client_test.js loads extension.js from that unpacked .vsix under Node, with a stub
#     of the `vscode` module and a fake jr2c that speaks minimal LSP: the server is started as
#     `<jr2.server.path> lsp <jr2.server.extraArgs…>` and the client reaches the running state;
#     the restart command and a changed setting restart it; a missing, non-executable or too-old
#     binary gives exactly one error message naming jr2.server.path; a crashed server is
#     restarted (4 times at most); deactivate shuts it down;
#  c. given a jr2c ($1), the same client starts its real `jr2c lsp`, reaches the running state
#     with hover, definition, rename, completion and formatting registered, and stops it.
# No VS Code is needed. The npm packages come from editors/vscode/package-lock.json
# (scripts/setup.sh installs them; package_vsix.sh does it itself the first time).
# Usage: vscode_client_test.sh [JR2C]   (from anywhere; ~10 s)
set -eu
jr2c="${1:-}"
if [ -n "$jr2c" ]; then jr2c="$(cd "$(dirname "$jr2c")" && pwd)/$(basename "$jr2c")"; fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
failed=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

vsix="$tmp/jr2.vsix"
if timeout 300 "$root/scripts/package_vsix.sh" "$vsix" > "$tmp/package.out" 2> "$tmp/package.err" &&
  [ "$(tail -n 1 "$tmp/package.out")" = "$vsix" ] && [ -f "$vsix" ]; then
  echo "PASS: scripts/package_vsix.sh packaged the extension and printed its path"
else
  cat "$tmp/package.out" "$tmp/package.err" | tail -40
  echo "FAIL: scripts/package_vsix.sh did not package the extension"
  echo "vscode client: 1 failed"
  exit 1
fi

unzip -Z1 "$vsix" > "$tmp/list.txt"
for f in extension/extension.js extension/server.js extension/package.json \
  extension/syntaxes/jr2.tmLanguage.json extension/language-configuration.json \
  extension/node_modules/vscode-languageclient/package.json \
  extension/node_modules/vscode-languageclient/node.js \
  extension/node_modules/vscode-languageserver-protocol/package.json \
  extension/node_modules/vscode-jsonrpc/package.json; do
  if grep -qxF "$f" "$tmp/list.txt"; then
    echo "PASS: the .vsix holds $f"
  else
    echo "FAIL: the .vsix lacks $f"; failed=$((failed + 1))
  fi
done
not_run='(^|/)(tests?|__tests__|snapshots)/|\.(test|spec)\.[a-z0-9]+$|\.snap$|\.map$|\.ts$'
not_run+='|package-lock\.json$|\.vscodeignore$|\.vsix$|/node_modules/(@vscode/vsce|\.bin)/'
if grep -E "$not_run" "$tmp/list.txt" > "$tmp/bad.txt"; then
  echo "FAIL: the .vsix holds files that do not run: $(head -5 "$tmp/bad.txt" | tr '\n' ' ')"
  failed=$((failed + 1))
else
  echo "PASS: the .vsix holds no test, snapshot, lockfile, source map, .ts or dev package ($(wc -l < "$tmp/list.txt") files)"
fi

mkdir "$tmp/unpacked"
unzip -q "$vsix" -d "$tmp/unpacked"
if JR2_VSCODE_TEST_JR2C="$jr2c" timeout 120 node "$here/vscode_client_test.js" "$tmp/unpacked/extension"; then
  echo "PASS: the client, run from the unpacked .vsix"
else
  echo "FAIL: the client, run from the unpacked .vsix"; failed=$((failed + 1))
fi
echo "vscode client: $failed failed"
[ "$failed" -eq 0 ]
