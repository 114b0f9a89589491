#!/usr/bin/env bash
# `jr2c lsp` under a real client, headless Neovim 0.7 (#35, docs/editors.md): lsp_test.lua opens
# a file with a misspelled event (E0100, its quick fix), fixes it (the error clears), hovers,
# goes to a definition across an import, renames an event in both files, completes a state, and
# shuts the server down. The fixture is two files written here and checked with `jr2c check`.
# Usage: run.sh PATH/TO/jr2c   (~2 s; exit 77, a skip, when nvim is not installed)
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -ne 1 ]; then
  echo "usage: $0 PATH/TO/jr2c" >&2
  exit 2
fi
jr2c="$1"
case "$jr2c" in /*) ;; *) jr2c="$PWD/$jr2c" ;; esac
if ! command -v nvim > /dev/null; then
  echo "SKIP: nvim is not installed (scripts/setup.sh installs Debian's neovim)"
  exit 77
fi
if [ ! -x "$jr2c" ]; then
  echo "FAIL: $jr2c is not an executable"
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat > "$work/types.jr2" <<'EOF'
// types.jr2 — what main.jr2 imports: a ticket, an outcome, and the two answers of a review.

// A work item.
type Ticket {
  id: string
  title: string
}

type Outcome {
  id: string
  outcome: "approved" | "rejected"
}

event approve external "Accept the ticket."
event reject external "Refuse the ticket."
EOF
cat > "$work/main.jr2" <<'EOF'
// main.jr2 — one review of a ticket: a person answers at a Gate.
import "types.jr2"

machine review(ticket: types.Ticket) -> types.Outcome {
  var outcome: types.Outcome? = null

  initial state waiting {
    invoke gate { title: "Révision 🎫 " + ticket.title }   // é and 🎫: 1 and 2 UTF-16 units
    on types.approve -> decided {
      outcome = { id: ticket.id, outcome: "approved" }
    }
    on types.reject -> decided {
      outcome = { id: ticket.id, outcome: "rejected" }
    }
  }
  final state decided

  output outcome!
}

workflow main = review
EOF
if ! out="$("$jr2c" check "$work/main.jr2" 2>&1)"; then
  echo "FAIL: the fixture is not a good program: jr2c check main.jr2 says:"
  echo "$out"
  exit 1
fi

# Neovim's own files (its LSP log, where the server's stderr goes) stay in the work folder.
export XDG_CACHE_HOME="$work/cache" XDG_STATE_HOME="$work/state" XDG_DATA_HOME="$work/data" \
  XDG_CONFIG_HOME="$work/config"
export JR2C="$jr2c" WORK="$work"
timeout 60 nvim --headless --clean -u NONE -c "luafile $here/lsp_test.lua" > "$work/nvim.out" 2>&1 < /dev/null
status=$?
cat "$work/lsp_test.log" 2> /dev/null
if [ -s "$work/nvim.out" ]; then
  echo "--- nvim's output:"
  cat "$work/nvim.out"; echo
fi
if [ $status -ne 0 ] && [ -s "$work/cache/nvim/lsp.log" ]; then
  echo "--- nvim's LSP log (the server's stderr is there):"
  tail -n 40 "$work/cache/nvim/lsp.log"
fi
if [ $status -eq 124 ]; then
  echo "FAIL: nvim did not end within 60 s (killed)"
elif [ $status -ne 0 ] && ! grep -q '^FAIL' "$work/lsp_test.log" 2> /dev/null; then
  echo "FAIL: nvim exited with $status"
fi
exit $status
