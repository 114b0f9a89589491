#!/usr/bin/env bash
# End-to-end tests of the real `jr2c` binary: exit codes, refusals of bad input, the samples.
# Usage: cli_test.sh JR2C SOURCE_DIR
set -u
jr2c=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

source "$(dirname "$0")/lib.sh"

cd "$src" || exit 1

# The samples check clean: no error, no warning (W0602, which warned that standing Pools did not
# run, is retired).
expect "samples check clean" 0 '' -- "$jr2c" check samples/*/*.jr2
if "$jr2c" check samples/*/*.jr2 2>&1 | grep -qE 'warning|error'; then
  echo "FAIL samples: a warning or an error"; failed=$((failed + 1))
else
  passed=$((passed + 1))
fi
expect "help" 0 'usage: jr2c' -- "$jr2c" --help
expect "version" 0 '^jr2c [0-9]+\.[0-9]+\.[0-9]+$' -- "$jr2c" --version
expect "no args is usage" 2 'usage' -- "$jr2c"
expect "unknown command" 2 'unknown command `frob`' -- "$jr2c" frob
expect "unknown option" 2 'unknown option `--frob`' -- "$jr2c" check --frob samples/tickets/tickets.jr2
# A typo of a command or an option: the one it was likely meant to be.
expect "a misspelled command" 2 'unknown command `chek`; did you mean `check`?' -- "$jr2c" chek samples/tickets/tickets.jr2
expect "a misspelled option" 2 'unknown option `--Wreror`; did you mean `--Werror`?' -- "$jr2c" check --Wreror samples/tickets/tickets.jr2
expect "check needs files" 2 'needs at least one' -- "$jr2c" check
expect "bad format" 2 'unknown diagnostics format' -- "$jr2c" check --diagnostics-format xml samples/tickets/tickets.jr2
expect "missing file" 1 "^jr2c: error\\[E0106\\]: cannot read \`$tmp/nope.jr2\`: no such file$" -- "$jr2c" check "$tmp/nope.jr2"
expect "directory" 1 'it is a directory' -- "$jr2c" check samples
# fmt: prints, --check names and exits 1, -d a diff, -w writes; a file that does not parse is
# left as it was.
printf 'machine m{\r\n\tinitial state a{}   // kept\r\n}\r\n' > "$tmp/messy.jr2"
cp "$tmp/messy.jr2" "$tmp/messy.orig"
expect "fmt prints the file formatted" 0 '^  initial state a \{\}   // kept$' -- "$jr2c" fmt "$tmp/messy.jr2"
expect "fmt --check names a file that is not formatted" 1 "^$tmp/messy.jr2\$" -- "$jr2c" fmt --check "$tmp/messy.jr2"
expect "fmt --check is quiet on a formatted one" 0 '' -- "$jr2c" fmt --check samples/tickets/tickets.jr2
expect "fmt -d is a unified diff" 0 '^\+machine m \{$' -- "$jr2c" fmt -d "$tmp/messy.jr2"
if cmp -s "$tmp/messy.jr2" "$tmp/messy.orig"; then passed=$((passed + 1)); else echo "FAIL fmt without -w changed the file"; failed=$((failed + 1)); fi
expect "fmt -w writes it" 0 '' -- "$jr2c" fmt -w "$tmp/messy.jr2"
expect "and it is formatted then" 0 '' -- "$jr2c" fmt --check "$tmp/messy.jr2"
printf 'machine m {\n  initial state a { on go -> }\n}\n' > "$tmp/broken.jr2"
cp "$tmp/broken.jr2" "$tmp/broken.orig"
expect "fmt refuses a file that does not parse" 1 'has syntax errors and was not formatted' -- "$jr2c" fmt -w "$tmp/broken.jr2"
if cmp -s "$tmp/broken.jr2" "$tmp/broken.orig"; then passed=$((passed + 1)); else echo "FAIL fmt changed a file it refused"; failed=$((failed + 1)); fi
expect "fmt modes do not mix" 2 'cannot go together' -- "$jr2c" fmt --check -w "$tmp/messy.jr2"
expect "fmt's flags go with fmt" 2 'goes with `fmt`' -- "$jr2c" check -w samples/tickets/tickets.jr2
expect "explain" 0 '^E0100: ' -- "$jr2c" explain E0100
expect "explain lower case" 0 '^E0405: ' -- "$jr2c" explain e0405
expect "explain unknown" 2 'not a jr2c diagnostic code' -- "$jr2c" explain E9999
expect "explain list" 0 '^W0601 ' -- "$jr2c" explain --list

# Bad input: each is a clear diagnostic and a non-zero exit, never a crash or a hang.
: > "$tmp/empty.jr2"
expect "empty file" 1 'declares nothing' -- "$jr2c" check "$tmp/empty.jr2"
head -c 4096 /dev/urandom > "$tmp/binary.jr2"
expect "binary file" 1 'error\[E0001\]: the file is not valid UTF-8' -- "$jr2c" check "$tmp/binary.jr2"
printf 'event go external "caf\xe9"\n' > "$tmp/latin1.jr2"
expect "latin-1 file" 1 'latin1.jr2:1:23: error\[E0001\]: the file is not valid UTF-8' -- "$jr2c" check "$tmp/latin1.jr2"
{ printf 'machine m {\n'; for _ in $(seq 1 10000); do printf '{'; done; printf '\n'; } > "$tmp/braces.jr2"
expect "10,000 nested braces" 1 'nest more than 256 levels' -- "$jr2c" check "$tmp/braces.jr2"
{ printf 'machine m { var x: int = '; for _ in $(seq 1 10000); do printf '('; done; printf '1'; for _ in $(seq 1 10000); do printf ')'; done; printf '\n initial state a {} }\n'; } > "$tmp/parens.jr2"
expect "10,000 nested parentheses" 1 'nest more than 256 levels' -- "$jr2c" check "$tmp/parens.jr2"
{ printf 'machine m { var x: int = 1'; for _ in $(seq 1 20000); do printf ' + 1'; done; printf '\n initial state a {} }\n'; } > "$tmp/chain.jr2"
expect "a 20,000-term expression" 0 "" -- "$jr2c" check "$tmp/chain.jr2"
head -c $((10 * 1024 * 1024)) /dev/zero | tr '\0' ' ' > "$tmp/big.jr2"
expect "10 MB file" 1 'it is 10.0 MiB, and jr2c reads files of up to 8 MiB' -- "$jr2c" check "$tmp/big.jr2"
printf 'import "missing.jr2"\nevent go\n' > "$tmp/imp.jr2"
expect "missing import" 1 'error\[E0102\]: cannot find the imported file `missing.jr2`' -- "$jr2c" check "$tmp/imp.jr2"

# Machine-readable output goes to stdout and is valid JSON / SARIF.
printf 'event go\nmachine m {\n  initial state a {\n    on gone -> a\n  }\n}\n' > "$tmp/bad.jr2"
expect "json output" 1 '"code": "E0100"' -- "$jr2c" check --diagnostics-format json "$tmp/bad.jr2"
expect "sarif output" 1 '"version": "2.1.0"' -- "$jr2c" check --diagnostics-format=sarif "$tmp/bad.jr2"
expect "unreadable file in json" 1 '"code": "E0106"' -- "$jr2c" check --diagnostics-format json "$tmp/nope.jr2"
expect "unreadable file in sarif" 1 '"ruleId": "E0106"' -- "$jr2c" check --diagnostics-format sarif "$tmp/nope.jr2"
if command -v python3 >/dev/null; then
  "$jr2c" check --diagnostics-format json "$tmp/bad.jr2" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["errors"]==1' \
    && passed=$((passed + 1)) || { echo "FAIL json parses"; failed=$((failed + 1)); }
fi

# compile: the outputs, a depfile, nothing written when there is an error, no rewrite when unchanged.
mkdir -p "$tmp/out" "$tmp/none"
expect "compile writes header and source" 0 '^$' -- "$jr2c" compile samples/tickets/tickets.jr2 -o "$tmp/out" --depfile "$tmp/out/tickets.d"
if [ -f "$tmp/out/tickets.jr2.h" ] && [ -f "$tmp/out/tickets.jr2.cpp" ] && grep -q "samples/tickets/tickets.jr2" "$tmp/out/tickets.d"; then
  passed=$((passed + 1)); else echo "FAIL compile outputs or depfile missing"; failed=$((failed + 1)); fi
before=$(stat -c %Y "$tmp/out/tickets.jr2.cpp")
sleep 1
"$jr2c" compile samples/tickets/tickets.jr2 -o "$tmp/out" > /dev/null 2>&1
if [ "$(stat -c %Y "$tmp/out/tickets.jr2.cpp")" = "$before" ]; then passed=$((passed + 1)); else echo "FAIL an unchanged output was rewritten"; failed=$((failed + 1)); fi
expect "compile refuses a bad file" 1 'E0100' -- "$jr2c" compile "$tmp/bad.jr2" -o "$tmp/none"
if [ -z "$(ls -A "$tmp/none")" ]; then passed=$((passed + 1)); else echo "FAIL compile wrote files despite errors"; failed=$((failed + 1)); fi
# A file stem that is not an identifier cannot name the generated namespace: refused as E0104,
# nothing written (it used to compile to C++ that did not build), and `check` stays quiet.
cp samples/tickets/tickets.jr2 "$tmp/my-flows.jr2"
expect "compile refuses a stem that is no identifier" 1 'my-flows\.jr2:1:1: error\[E0104\]: the file stem `my-flows` is not an identifier' -- "$jr2c" compile "$tmp/my-flows.jr2" -o "$tmp/stem"
if [ -e "$tmp/stem/my-flows.jr2.h" ]; then echo "FAIL compile wrote my-flows.jr2.h"; failed=$((failed + 1)); else passed=$((passed + 1)); fi
expect "check accepts a stem that is no identifier" 0 '' -- "$jr2c" check "$tmp/my-flows.jr2"
expect "compile needs -o" 2 'needs an output folder' -- "$jr2c" compile samples/tickets/tickets.jr2
expect "workflows lists them" 0 '^tickets$' -- "$jr2c" workflows samples/tickets/tickets.jr2

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
