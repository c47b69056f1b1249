#!/usr/bin/env bash
# Calibrate and validate FlipFlop on this machine's GPU in one command (about 7 minutes on an
# H200): installs the `gpu` extra, runs every microbenchmark and fits a profile, sweeps every
# workload's block sizes, and prints `flipflop validate`'s table. Measures the GPU as it is
# found: never changes clocks, power limits, persistence or compute mode.
#
#   calibration/run_all.sh                 # GPU 0
#   GPU_INDEX=1 calibration/run_all.sh     # another GPU
#   SKIP_INSTALL=1 calibration/run_all.sh  # use the current environment as it is
#
# Output: calibration/data/<gpu-id>/{microbench,workloads}/*.json|csv, profile.json (+ .fit.json),
# validate.txt, validate.json and RUN.txt (command, commit, date, driver).
set -euo pipefail
cd "$(dirname "$0")/.."
GPU_INDEX=${GPU_INDEX:-0}
PYTHON=${PYTHON:-python3}

if [[ -z "${SKIP_INSTALL:-}" ]]; then
    [[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet -e '.[gpu]'
fi
PY=.venv/bin/python
[[ -x "$PY" ]] || PY="$PYTHON"
FLIPFLOP=("$PY" -m flipflop.cli)

command -v nvidia-smi >/dev/null || { echo "run_all.sh: no nvidia-smi: this needs an NVIDIA GPU" >&2; exit 3; }
NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader -i "$GPU_INDEX")
GPU_ID=${GPU_ID:-$("$PY" -m flipflop.calibration.naming "$NAME")}
DATA=calibration/data/$GPU_ID
mkdir -p "$DATA/microbench" "$DATA/workloads"
COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT-dirty"
{
    echo "command: calibration/run_all.sh (GPU_INDEX=$GPU_INDEX)"
    echo "commit: $COMMIT"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "device: $NAME"
    nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu \
        --format=csv -i "$GPU_INDEX"
} > "$DATA/RUN.txt"

BASE=()
[[ -f "calibration/profiles/$GPU_ID.json" ]] && BASE=(--base "$GPU_ID")
echo "== microbenchmarks -> $DATA/microbench" >&2
"${FLIPFLOP[@]}" calibrate --gpu-index "$GPU_INDEX" "${BASE[@]}" --repeats 10 --cooldown 0.1 \
    --data-dir "$DATA/microbench" --out "$DATA/profile.json"

echo "== workloads -> $DATA/workloads" >&2
"$PY" - <<'PYEOF' > "$DATA/workloads.txt"
from pathlib import Path
from flipflop.calibration.spec import parse_headers
for path in sorted(Path("calibration/workloads").glob("*.cu")):
    for spec in parse_headers(path.read_text(), str(path)):
        print(path, spec.kernel)
PYEOF
while read -r FILE KERNEL; do
    "${FLIPFLOP[@]}" measure "$FILE" --kernel "$KERNEL" --gpu-index "$GPU_INDEX" \
        --repeats 10 --cooldown 0.1 --out "$DATA/workloads/$KERNEL.json"
done < "$DATA/workloads.txt"

echo "== validation (profile fitted above: $DATA/profile.json)" >&2
"${FLIPFLOP[@]}" validate "$DATA/workloads" --gpu "$DATA/profile.json" --format json \
    > "$DATA/validate.json"
"${FLIPFLOP[@]}" validate "$DATA/workloads" --gpu "$DATA/profile.json" | tee "$DATA/validate.txt"
