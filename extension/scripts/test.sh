#!/usr/bin/env bash
# The extension's tests: install the pinned dependencies, type-check, build the .vsix, run the
# unit tests (node:test, including the .vsix contents check), then the end-to-end test in VS Code.
set -euo pipefail
EXT_DIR="$(cd "$(dirname "$0")/.." && pwd)"
cd "$EXT_DIR"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "== extension: npm ci"
  npm ci --no-audit --no-fund
fi
echo "== extension: package flipflop.vsix"
npm run --silent package
echo "== extension: unit tests"
npm test --silent
echo "== extension: end-to-end in code-server"
scripts/e2e.sh --no-build
