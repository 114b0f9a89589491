#!/usr/bin/env bash
# The VS Code extension's TextMate grammar (editors/vscode/syntaxes/jr2.tmLanguage.json, #35),
# with vscode-tmgrammar-test (npm, tests/editors/package-lock.json):
#  - the assertions of tests/editors/*.test.jr2 (each `//  ^^^ scope` line under the code it
#    marks): keywords, declarations, states and targets, keys, durations, strings, text blocks,
#    comments, and the mistakes the compiler refuses (`5min`, `'x'`, `;`) marked invalid;
#  - a snapshot of every `.jr2` file of samples/ and stdlib/ (tests/editors/snapshots/, updated
#    with JR2_AUTOUPDATE=1 like the other goldens), none of which may hold an `invalid` scope:
#    the samples are programs jr2c takes.
# Usage: grammar_test.sh   (from anywhere; ~3 s)
set -eu
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [ ! -x "$here/node_modules/.bin/vscode-tmgrammar-test" ]; then
  echo "FAIL: vscode-tmgrammar-test is missing: run scripts/setup.sh (it npm ci's tests/editors)"
  exit 1
fi
config="$root/editors/vscode/package.json"
failed=0
cd "$here"
if timeout 60 node_modules/.bin/vscode-tmgrammar-test --config "$config" "$here/*.test.jr2"; then
  echo "PASS: the grammar's assertions"
else
  echo "FAIL: the grammar's assertions"; failed=$((failed + 1))
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
n=0
while IFS= read -r f; do
  name="$(echo "${f#"$root"/}" | tr '/' '_')"
  cp "$f" "$tmp/$name"
  [ -f "$here/snapshots/$name.snap" ] && cp "$here/snapshots/$name.snap" "$tmp/$name.snap"
  n=$((n + 1))
done < <(find "$root/samples" "$root/stdlib" -name '*.jr2' | sort)
update=()
if [ "${JR2_AUTOUPDATE:-}" = 1 ]; then update=(-u); fi
if timeout 120 node_modules/.bin/vscode-tmgrammar-snap --config "$config" "${update[@]}" "$tmp/*.jr2" > "$tmp/out.txt" 2>&1; then
  echo "PASS: the snapshots of $n files of samples/ and stdlib/"
else
  cat "$tmp/out.txt" | head -60
  echo "FAIL: a snapshot differs (JR2_AUTOUPDATE=1 writes them anew; look at the diff first)"; failed=$((failed + 1))
fi
if [ "${JR2_AUTOUPDATE:-}" = 1 ]; then
  mkdir -p "$here/snapshots"
  rm -f "$here"/snapshots/*.snap
  cp "$tmp"/*.snap "$here/snapshots/"
fi
if grep -l "invalid\." "$tmp"/*.snap > "$tmp/bad.txt" 2>/dev/null; then
  echo "FAIL: an invalid scope in a sample: $(tr '\n' ' ' < "$tmp/bad.txt")"
  grep -n -B3 "invalid\." "$tmp"/*.snap | head -20
  failed=$((failed + 1))
else
  echo "PASS: no invalid scope in any of the $n files"
fi
echo "editors: $failed failed"
[ "$failed" -eq 0 ]
