#!/usr/bin/env bash
# The whole test suite: lint, types, Python tests (real nvcc, real LSP clients), extension tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== ruff"; .venv/bin/ruff check server tests benchmarks calibration scripts
echo "== mypy --strict server/"; .venv/bin/mypy --strict server/
echo "== pytest"; .venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 "$@"
echo "== VS Code extension"; extension/scripts/test.sh
