#!/usr/bin/env bash
# Set everything up, then analyse the bundled example for a GeForce RTX 3070.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/flipflop analyze examples/attention.cu --gpu rtx3070 "$@"
