#!/usr/bin/env bash
# End-to-end tests of `jr2c graph`: every machine of every sample draws, Graphviz renders the DOT
# without a warning, the Mermaid is a state diagram, the output is deterministic, and bad input is
# refused with a clear message and no graph.
# Usage: graph_test.sh JR2C SOURCE_DIR
set -u
jr2c=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

pass() { passed=$((passed + 1)); }
fail() {
  echo "FAIL $1"
  [ -n "${2:-}" ] && [ -s "$2" ] && head -20 "$2"
  failed=$((failed + 1))
}

# graph NAME OUT ARGS…: runs `jr2c graph ARGS…`, stdout to OUT, stderr to OUT.err; fails NAME
# unless it exits 0 with an empty stderr.
graph() {
  local name=$1 out=$2
  shift 2
  timeout 60 "$jr2c" graph "$@" >"$out" 2>"$out.err"
  local rc=$?
  if [ "$rc" -ne 0 ]; then fail "$name: exit $rc, wanted 0" "$out.err"; return 1; fi
  # Warnings are shown as `check` shows them; anything else on stderr is a failure.
  if grep -v -E '^ *[0-9]* *\||^[^ ]+: note: |^0 errors, [0-9]+ warnings?$' "$out.err" | grep -q .; then
    fail "$name: wrote to stderr" "$out.err"; return 1
  fi
  return 0
}

# refuse NAME PATTERN ARGS…: `jr2c graph ARGS…` must exit 1 or 2, print no graph on stdout, and
# print a message whose first line matches PATTERN on stderr.
refuse() {
  local name=$1 pattern=$2
  shift 2
  timeout 60 "$jr2c" graph "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then fail "$name: exit $rc, wanted 1 or 2" "$tmp/err"; return; fi
  if [ -s "$tmp/out" ]; then fail "$name: printed a graph on stdout" "$tmp/out"; return; fi
  if ! head -1 "$tmp/err" | grep -qE -- "$pattern"; then
    echo "FAIL $name: the first line of stderr does not match /$pattern/"; head -5 "$tmp/err"
    failed=$((failed + 1)); return
  fi
  pass
}

cd "$src" || exit 1

if ! command -v dot >/dev/null; then
  echo "FAIL Graphviz \`dot\` is not installed (scripts/setup.sh installs the graphviz package)"
  echo "$passed passed, 1 failed"
  exit 1
fi

# Every machine of every sample, in both formats.
for file in samples/*/*.jr2; do
  machines=$(grep -oE '^machine +[A-Za-z_][A-Za-z0-9_]*' "$file" | awk '{print $2}')
  if [ -z "$machines" ]; then fail "$file: the test found no machine in it"; continue; fi
  for m in $machines; do
    base="$tmp/$(basename "$file" .jr2).$m"
    # DOT that Graphviz renders to an SVG, with no warning.
    if graph "$file $m dot" "$base.dot" "$file" --machine "$m" --format dot; then
      if ! head -5 "$base.dot" | grep -qE '^digraph '; then
        fail "$file $m: the DOT output has no \`digraph\`" "$base.dot"
      elif ! timeout 60 dot -Tsvg "$base.dot" >"$base.svg" 2>"$base.dot.log"; then
        fail "$file $m: dot -Tsvg failed" "$base.dot.log"
      elif [ ! -s "$base.svg" ] || ! grep -q '<svg' "$base.svg"; then
        fail "$file $m: dot -Tsvg wrote no SVG" "$base.dot.log"
      elif [ -s "$base.dot.log" ]; then
        fail "$file $m: dot warned" "$base.dot.log"
      else
        pass
      fi
      # The picture is of that machine: its name titles the SVG.
      if grep -q "machine $m" "$base.svg" 2>/dev/null; then pass; else fail "$file $m: the SVG lacks \`machine $m\`"; fi
    fi
    # Mermaid: a state diagram.
    if graph "$file $m mermaid" "$base.mmd" "$file" --machine "$m" --format mermaid; then
      if [ "$(head -1 "$base.mmd")" = "stateDiagram-v2" ] && grep -q -- '-->' "$base.mmd"; then
        pass
      else
        fail "$file $m: the Mermaid output does not start with stateDiagram-v2" "$base.mmd"
      fi
    fi
    # Deterministic: a second run is byte-identical.
    for format in dot mermaid; do
      ext=$([ "$format" = dot ] && echo dot || echo mmd)
      if graph "$file $m $format again" "$base.again.$ext" "$file" --machine "$m" --format "$format"; then
        if cmp -s "$base.$ext" "$base.again.$ext"; then
          pass
        else
          fail "$file $m: two runs of --format $format differ"
          diff "$base.$ext" "$base.again.$ext" | head -10
        fi
      fi
    done
  done
done

# What the pictures must show, on the samples.
t="$tmp/triage.dot"
if graph "alert_triage marks" "$t" samples/alert-triage/alert_triage.jr2 --machine triage_machine --format dot; then
  grep -q 'gate review' "$t" && pass || fail "the Gate of triage_machine's review is not marked" "$t"
  grep -q 'agent: triager' "$t" && pass || fail "the Agent slot of investigate is not marked" "$t"
  grep -qE 'doublecircle|peripheries=2' "$t" && pass || fail "the final state is not marked" "$t"
  grep -q 'label="after 15m"' "$t" && pass || fail "the \`after 15m\` edge is not labelled" "$t"
  grep -q 'confirm \[proposal != null\]' "$t" && pass || fail "the guard of \`on confirm\` is not shown" "$t"
fi
b="$tmp/build.dot"
if graph "build_matrix clusters" "$b" samples/build-matrix/build_matrix.jr2 --machine build_package --format dot; then
  grep -q 'subgraph "\?cluster_work' "$b" && pass || fail "the compound state work is not a cluster" "$b"
  grep -q 'shape=point' "$b" && pass || fail "no initial marker" "$b"
  grep -q 'invoke std.command as build' "$b" && pass || fail "the invoke of build is not shown" "$b"
fi
b="$tmp/build.mmd"
if graph "build_matrix mermaid" "$b" samples/build-matrix/build_matrix.jr2 --machine build_package --format mermaid; then
  grep -qE '^ *state .*work \{$' "$b" && pass || fail "mermaid: work is not a composite state" "$b"
  grep -qE '^ *\[\*\] --> ' "$b" && pass || fail "mermaid: no initial marker" "$b"
  grep -qE '^ *passed --> \[\*\]$' "$b" && pass || fail "mermaid: the final state passed is not marked" "$b"
fi

# A Pool has no states: --machine POOL draws its Source, the Pool and its worker (#9).
for file in samples/*/*.jr2; do
  for p in $(grep -oE '^pool +[A-Za-z_][A-Za-z0-9_]*' "$file" | awk '{print $2}'); do
    base="$tmp/$(basename "$file" .jr2).$p"
    if graph "$file pool $p dot" "$base.dot" "$file" --machine "$p" --format dot; then
      if timeout 60 dot -Tsvg "$base.dot" >"$base.svg" 2>"$base.dot.log" && [ ! -s "$base.dot.log" ] &&
         grep -q "pool $p" "$base.svg"; then
        pass
      else
        fail "$file pool $p: dot did not render it cleanly" "$base.dot.log"
      fi
      grep -q '"pool" -> "worker"' "$base.dot" && pass || fail "$file pool $p: no edge to its worker" "$base.dot"
    fi
    if graph "$file pool $p mermaid" "$base.mmd" "$file" --machine "$p" --format mermaid; then
      [ "$(sed -n 2p "$base.mmd")" = "flowchart LR" ] && pass ||
        fail "$file pool $p: the Mermaid is not a flowchart" "$base.mmd"
    fi
  done
done
t="$tmp/tickets_pool.dot"
if graph "tickets pool marks" "$t" samples/tickets/tickets.jr2 --machine ticket_pool --format dot; then
  grep -q 'cap 2' "$t" && pass || fail "the pool's cap is not shown" "$t"
  grep -q 'takes tickets_changed' "$t" && pass || fail "the source Gate's wake event is not shown" "$t"
  grep -q 'worker review' "$t" && pass || fail "the worker is not named" "$t"
  # The workflow's figures (walk/budget.h, #36) in the picture's title: cap 2, Gates only.
  grep -q '2 workers, 0 processes, 0 runs' "$t" && pass || fail "the title has no figures" "$t"
fi
# Each drawing a workflow has names its figures, in DOT and in Mermaid: build_matrix's cap is
# min(input.jobs, 8), one command at a time in each build; alerts dispatches up to 4 runs.
for case in "samples/build-matrix/build_matrix.jr2|matrix|8 workers, 8 processes, 0 runs" \
            "samples/alert-triage/alert_triage.jr2|alerts_pool|0 workers, 0 processes, 4 runs"; do
  IFS='|' read -r file machine figures <<<"$case"
  for format in dot mermaid; do
    out="$tmp/figures_$machine.$format"
    graph "$machine figures $format" "$out" "$file" --machine "$machine" --format "$format" &&
      { grep -qF "$figures" "$out" && pass || fail "$machine's $format has not '$figures'" "$out"; }
  done
done

# A file of its own: parallel regions, a targetless transition, escaping.
cat >"$tmp/par.jr2" <<'EOF'
event go any "Go."
event poke any "Poke."
machine par {
  var label: string = ""
  initial parallel state both {
    state left {
      on poke { label = label + "!" }
    }
    state right {
      initial state a {
        on go if label == "say \"hi\" <b>; #1" -> b
      }
      final state b
    }
  }
}
EOF
p="$tmp/par.dot"
if graph "parallel dot" "$p" "$tmp/par.jr2" --format dot; then
  grep -q 'dashed' "$p" && pass || fail "the regions of a parallel state are not dashed" "$p"
  grep -q 'style=dotted' "$p" && pass || fail "a targetless transition is not dotted" "$p"
  if timeout 60 dot -Tsvg "$p" >"$tmp/par.svg" 2>"$tmp/par.log" && grep -q '<svg' "$tmp/par.svg" \
    && [ ! -s "$tmp/par.log" ]; then pass; else fail "dot does not render the parallel machine" "$tmp/par.log"; fi
fi
p="$tmp/par.mmd"
if graph "parallel mermaid" "$p" "$tmp/par.jr2" --format mermaid; then
  grep -qE '^ *--$' "$p" && pass || fail "mermaid: no region separator" "$p"
  # Mermaid takes `;` for the end of a statement: a label writes it as the entity code `#59;`.
  grep -qF '#59;' "$p" && pass || fail "mermaid: the \`;\` of the guard is not escaped" "$p"
  sed -E 's/#[0-9]+;//g' "$p" | grep -q ';' && fail "mermaid: a raw \`;\` in the output" "$p" || pass
fi

# Refusals.
machines=$(grep -oE '^machine +[A-Za-z_][A-Za-z0-9_]*' samples/tickets/tickets.jr2 | awk '{print $2}' | head -1)
refuse "unknown machine" "^jr2c: error: .*nope.*$machines" samples/tickets/tickets.jr2 --machine nope
refuse "unknown format" "^jr2c: error: .*svg.*(dot|mermaid)" samples/tickets/tickets.jr2 --format svg
printf 'event go\nmachine m {\n  initial state a {\n    on gone -> a\n  }\n}\n' >"$tmp/bad.jr2"
refuse "a file with errors" "error\[E0100\]" "$tmp/bad.jr2"
refuse "missing file" "^jr2c: error\\[E0106\\]: cannot read" "$tmp/nope.jr2"
printf 'type T {\n  x: int\n}\n' >"$tmp/nomachine.jr2"
refuse "a file without machines" "^jr2c: error: .*machine" "$tmp/nomachine.jr2"

# One machine in the file: --machine and --format may be left out (DOT is the default).
if graph "defaults" "$tmp/default.dot" samples/tickets/tickets.jr2; then
  head -5 "$tmp/default.dot" | grep -qE '^digraph ' && pass || fail "the default format is not DOT" "$tmp/default.dot"
fi

# `graph FILE -o DIR` (the console's pictures, cmake/Jr2Pictures.cmake): one DOT file per workflow,
# each the same drawing `--machine` gives of its machine or Pool, and nothing on stdout.
alerts="$src/samples/alert-triage/alert_triage.jr2"
if graph "-o writes one file a workflow" "$tmp/o.out" "$alerts" -o "$tmp/pics"; then
  if [ -s "$tmp/o.out" ]; then fail "-o printed to stdout" "$tmp/o.out"; else pass; fi
  if [ "$(cd "$tmp/pics" && ls | tr '\n' ' ')" = "alerts.dot triage.dot " ]; then pass; else
    fail "-o wrote $(ls "$tmp/pics" | tr '\n' ' '), wanted alerts.dot triage.dot"
  fi
  graph "--machine triage_machine" "$tmp/t.dot" "$alerts" --machine triage_machine &&
    { cmp -s "$tmp/t.dot" "$tmp/pics/triage.dot" && pass || fail "triage.dot differs from --machine's"; }
  graph "--machine alerts_pool" "$tmp/p.dot" "$alerts" --machine alerts_pool &&
    { cmp -s "$tmp/p.dot" "$tmp/pics/alerts.dot" && pass || fail "alerts.dot differs from --machine's"; }
  # A Pool of machines also gets its worker's picture (W.worker.dot, the console counts workers on
  # it); a Pool of runs does not (alerts dispatches `triage`, which has its own).
  tickets="$src/samples/tickets/tickets.jr2"
  if graph "-o on a Pool of machines" "$tmp/o2.out" "$tickets" -o "$tmp/pics"; then
    if [ "$(cd "$tmp/pics" && ls | tr '\n' ' ')" = "alerts.dot tickets.dot tickets.worker.dot triage.dot " ]; then
      pass
    else
      fail "-o wrote $(ls "$tmp/pics" | tr '\n' ' '), wanted tickets.dot and tickets.worker.dot beside the others"
    fi
    graph "--machine review" "$tmp/r.dot" "$tickets" --machine review &&
      { cmp -s "$tmp/r.dot" "$tmp/pics/tickets.worker.dot" && pass || fail "tickets.worker.dot differs from --machine review's"; }
  fi
  for f in "$tmp"/pics/*.dot; do
    if dot -Tsvg "$f" -o "$f.svg" 2>"$f.err" && [ ! -s "$f.err" ]; then pass; else fail "dot on $f" "$f.err"; fi
  done
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
