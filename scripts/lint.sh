#!/usr/bin/env bash
# The style, held by a script (#13): clang-format over every C++ file that changed since BASE
# (default: the parent of HEAD), and clang-tidy (.clang-tidy's checks, the naming conventions
# included) over the lines that changed in the .cpp files among them, as clang-tidy-diff reads
# them from `git diff`. Run by scripts/test.sh after the build (it needs build/'s
# compile_commands.json); `scripts/lint.sh main` checks a branch's whole change.
# Exit 0 when both are clean; 1 with every finding printed otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD~1}
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null 2>&1; then
  echo "lint: no commit $base here (a shallow clone?): nothing to compare, nothing checked"
  exit 0
fi
mapfile -t files < <(git diff --name-only --diff-filter=AMR "$base" -- \
  'compiler/*.cpp' 'compiler/*.h' 'runtime/*.cpp' 'runtime/*.h' \
  'tests/*.cpp' 'tests/*.h' 'bench/*.cpp' 'bench/*.h' | grep -v '/gen/' || true)
if [ "${#files[@]}" -eq 0 ]; then
  echo "lint: no C++ file changed since $base"
  exit 0
fi
tidy_diff=$(command -v clang-tidy-diff-14.py || command -v clang-tidy-diff || true)
[ -n "$tidy_diff" ] || { echo "lint: clang-tidy-diff is missing (Debian's clang-tidy)"; exit 1; }
[ -f build/compile_commands.json ] || { echo "lint: build/compile_commands.json is missing: build first"; exit 1; }

failed=0
if ! clang-format --dry-run -Werror "${files[@]}"; then
  echo "lint: clang-format: the files above are not formatted (clang-format -i FILE fixes them)"
  failed=1
fi
# By folder, with renames found (-M): a moved file's diff is its changed lines, not all of it.
out=$(git diff -M -U0 "$base" -- 'compiler/*.cpp' 'runtime/*.cpp' 'tests/*.cpp' 'bench/*.cpp' |
  python3 "$tidy_diff" -p1 -path build -iregex '.*\.cpp' -j 2 -quiet 2>&1 || true)
findings=$(grep -E '^[^ ].*:[0-9]+:[0-9]+: (warning|error):' <<<"$out" || true)
if [ -n "$findings" ]; then
  echo "$out" | grep -vE '^$|^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed|^Use -header-filter'
  echo "lint: clang-tidy: $(wc -l <<<"$findings") findings on the changed lines"
  failed=1
fi
[ "$failed" -eq 0 ] && echo "lint: ${#files[@]} changed C++ files since $base: clang-format and clang-tidy clean"
exit "$failed"
