#!/usr/bin/env bash
# Packages the VS Code extension (editors/vscode/, #35) as a .vsix, with @vscode/vsce from the
# extension's own devDependencies (package-lock.json): no VS Code install, and no network once
# editors/vscode/node_modules matches the lockfile (scripts/setup.sh installs it, and so does
# this script the first time, as setup.sh does: npm ci, skipped while the lockfile is unchanged).
# The .vsix holds extension.js, server.js, package.json, the grammar, the language
# configuration and vscode-languageclient with its dependencies (editors/vscode/.vscodeignore).
# Usage: scripts/package_vsix.sh [OUT.vsix]   (default build/jr2-<version>.vsix; from anywhere)
# Prints the path of the .vsix on its last line.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ext="$root/editors/vscode"
if ! command -v npm > /dev/null; then
  echo "package_vsix: npm is missing: run scripts/setup.sh" >&2
  exit 1
fi
version="$(node -p "require('$ext/package.json').version")"
out="${1:-$root/build/jr2-$version.vsix}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"

# Install scripts are not run (--ignore-scripts): the extension's dependencies have none, and
# the only one there is (@vscode/vsce-sign's) sets up signing for publishing, not packaging.
if ! cmp -s "$ext/package-lock.json" "$ext/node_modules/.package-lock.json.jr2" 2>/dev/null; then
  echo "package_vsix: npm ci in editors/vscode" >&2
  (cd "$ext" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
  cp "$ext/package-lock.json" "$ext/node_modules/.package-lock.json.jr2"
fi

# The repository has no public address and no LICENSE file to cite: vsce would ask about both.
(cd "$ext" && node_modules/.bin/vsce package --allow-missing-repository --skip-license \
  --out "$out") >&2
echo "$out"
