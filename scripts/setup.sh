#!/usr/bin/env bash
# Installs the Debian packages jr2c builds and tests with. Idempotent: it calls the package
# manager only when a package is missing, so a second run costs a few dpkg look-ups.
set -euo pipefail

packages=(
  build-essential cmake ninja-build
  antlr4 libantlr4-runtime-dev
  llvm-14-dev
  libfmt-dev nlohmann-json3-dev libboost-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev sqlite3
  libpq-dev postgresql
  libssl-dev openssl ca-certificates
  clang-14 libclang-rt-14-dev clang-format clang-tidy
  graphviz
  python3-prometheus-client
  chromium
  neovim
)
# Node.js and npm for the console's browser tests, from Debian only where the machine has none
# (Debian's npm would replace a newer one installed otherwise).
if ! command -v npm > /dev/null; then packages+=(nodejs npm); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The web console's browser tests (tests/console/): Playwright and axe-core from npm, at the
# versions of the lockfile, once (a machine that has Node.js already keeps its own).
console_tests="$(cd "$(dirname "$0")/.." && pwd)/tests/console"
if ! cmp -s "$console_tests/package-lock.json" "$console_tests/node_modules/.package-lock.json.jr2" 2>/dev/null; then
  echo "setup: the console's test tools (npm ci in tests/console)"
  (cd "$console_tests" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$console_tests/package-lock.json" "$console_tests/node_modules/.package-lock.json.jr2"
fi
# The editor grammar's tests (tests/editors/): vscode-tmgrammar-test from npm, the same way.
editor_tests="$(cd "$(dirname "$0")/.." && pwd)/tests/editors"
if ! cmp -s "$editor_tests/package-lock.json" "$editor_tests/node_modules/.package-lock.json.jr2" 2>/dev/null; then
  echo "setup: the editor grammar's test tools (npm ci in tests/editors)"
  (cd "$editor_tests" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$editor_tests/package-lock.json" "$editor_tests/node_modules/.package-lock.json.jr2"
fi
# The VS Code extension's runtime dependency (vscode-languageclient) and its packager
# (@vscode/vsce), for scripts/package_vsix.sh and tests/editors/vscode_client_test.sh: npm ci
# in editors/vscode, the same way (install scripts off: only vsce's signing helper has one).
vscode_ext="$(cd "$(dirname "$0")/.." && pwd)/editors/vscode"
if ! cmp -s "$vscode_ext/package-lock.json" "$vscode_ext/node_modules/.package-lock.json.jr2" 2>/dev/null; then
  echo "setup: the VS Code extension's packages (npm ci in editors/vscode)"
  (cd "$vscode_ext" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  cp "$vscode_ext/package-lock.json" "$vscode_ext/node_modules/.package-lock.json.jr2"
fi
