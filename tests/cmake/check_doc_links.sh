#!/usr/bin/env bash
# Checks the links among Markdown files: every relative link `](PATH)` or `](PATH#ANCHOR)` or
# `](#ANCHOR)` outside code blocks must name a file that exists, and the anchor a heading of that
# file (GitHub's rule: lower case, punctuation dropped, spaces as `-`). Links to http(s) and
# mailto are not checked.
# Usage: check_doc_links.sh FILE.md…   Prints each broken link; exits 1 if there is one.
set -uo pipefail
bad=0
# slugs FILE: the anchor of each heading of FILE, one a line.
slugs() {
  awk '/^[ \t]*```/ { fence = !fence; next }
       !fence && /^#+ / {
         h = $0; sub(/^#+ +/, "", h); h = tolower(h)
         gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h
       }' "$1"
}
for file in "$@"; do
  dir=$(dirname "$file")
  links=$(awk '/^[ \t]*```/ { fence = !fence; next }
               !fence {
                 line = $0
                 while (match(line, /\]\([^) ]+\)/)) {
                   print substr(line, RSTART + 2, RLENGTH - 3)
                   line = substr(line, RSTART + RLENGTH)
                 }
               }' "$file")
  while IFS= read -r link; do
    [ -n "$link" ] || continue
    case $link in http://* | https://* | mailto:*) continue ;; esac
    path=${link%%#*}
    anchor=
    [[ $link == *"#"* ]] && anchor=${link#*#}
    target=$file
    if [ -n "$path" ]; then
      target=$dir/$path
      if [ ! -e "$target" ]; then
        echo "$file: the link ($link) names $path, which is not there"
        bad=1
        continue
      fi
    fi
    if [ -n "$anchor" ]; then
      if [ -d "$target" ] || ! slugs "$target" | grep -qxF -- "$anchor"; then
        echo "$file: the link ($link) names #$anchor, which is no heading of $target"
        bad=1
      fi
    fi
  done <<<"$links"
done
exit "$bad"
