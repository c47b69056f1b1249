#!/usr/bin/env bash
# Calibrate and validate FlipFlop on this machine's GPU in one command: installs the `gpu`
# extra, runs every microbenchmark and fits a profile, sweeps every workload's block sizes, and
# prints `flipflop validate`'s table. Measures the GPU as it is found: never changes clocks,
# power limits, persistence or compute mode.
#
#   calibration/run_all.sh                 # GPU 0, the full method
#   GPU_INDEX=1 calibration/run_all.sh     # another GPU
#   SKIP_INSTALL=1 calibration/run_all.sh  # use the current environment as it is
#   calibration/run_all.sh --repeats 5 --window 1 --cooldown 0 --idle 0.5 --no-validate
#                                          # trimmed to fit a short session (h200_session.sh)
#   calibration/run_all.sh --dry-run       # no GPU: the plan, and every kernel compiled
#
# Options (defaults: the full method):
#   --repeats N      timed repeats per block shape (10)
#   --window S       energy window per block shape, seconds (1; NVML's counter needs >= 1)
#   --cooldown S     rest between block shapes, seconds (0.1)
#   --idle S         idle-power measurement before each sweep, seconds (1)
#   --data-dir DIR   where the results go (calibration/data/<gpu-id>)
#   --cubin-dir DIR  compiled cubins, reused when their inputs are unchanged
#   --no-validate    skip the last step, `flipflop validate` (it needs no GPU: run it later)
#   --dry-run        print every kernel's plan and compile it for --arch; run nothing
#   --arch sm_XY     the architecture of --dry-run's compiles (sm_90)
#   --plan-dir DIR   with --dry-run: each kernel's plan as JSON
#
# Output: DATA_DIR/{microbench,workloads}/*.json|csv, profile.json (+ .fit.json), validate.txt,
# validate.json and RUN.txt (command, commit, date, driver).
set -euo pipefail
cd "$(dirname "$0")/.."
GPU_INDEX=${GPU_INDEX:-0}
PYTHON=${PYTHON:-python3}
REPEATS=10 WINDOW=1 COOLDOWN=0.1 IDLE=1 DATA_DIR="" CUBIN_DIR="" VALIDATE=1 DRY_RUN=""
ARCH=sm_90 PLAN_DIR=""
ARGS=("$@")
while [[ $# -gt 0 ]]; do
    case "$1" in
        --repeats) REPEATS=$2; shift 2 ;;
        --window) WINDOW=$2; shift 2 ;;
        --cooldown) COOLDOWN=$2; shift 2 ;;
        --idle) IDLE=$2; shift 2 ;;
        --data-dir) DATA_DIR=$2; shift 2 ;;
        --cubin-dir) CUBIN_DIR=$2; shift 2 ;;
        --no-validate) VALIDATE=""; shift ;;
        --dry-run) DRY_RUN=1; shift ;;
        --arch) ARCH=$2; shift 2 ;;
        --plan-dir) PLAN_DIR=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run_all.sh: error: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

if [[ -z "${SKIP_INSTALL:-}" && -z "$DRY_RUN" ]]; then
    [[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet -e '.[gpu]'
fi
PY=.venv/bin/python
[[ -x "$PY" ]] || PY="$PYTHON"
FLIPFLOP=("$PY" -m flipflop.cli)
METHOD=(--repeats "$REPEATS" --window "$WINDOW" --cooldown "$COOLDOWN" --idle "$IDLE")
[[ -n "$CUBIN_DIR" ]] && METHOD+=(--cubin-dir "$CUBIN_DIR")

if [[ -n "$DRY_RUN" ]]; then
    echo "== run_all.sh --dry-run: repeats $REPEATS, energy window >= $WINDOW s, cooldown" \
         "$COOLDOWN s, idle $IDLE s before each sweep; compiled for $ARCH"
    # One process for every kernel: `flipflop measure --dry-run` as the run would call it.
    "$PY" - "$ARCH" "$PLAN_DIR" "${METHOD[@]}" <<'PYEOF'
import sys
from pathlib import Path
from flipflop.calibration.spec import parse_headers
from flipflop.cli import main
arch, plan_dir, method = sys.argv[1], sys.argv[2], sys.argv[3:]
failed = 0
for part in ("microbench", "workloads"):
    print(f"-- {part}", flush=True)
    for path in sorted(Path("calibration", part).glob("*.cu")):
        for spec in parse_headers(path.read_text(), str(path)):
            for variant in spec.variants or ({},):
                params = [f"--param={k}={v:g}" for k, v in variant.items()]
                suffix = "".join(f"-{k}{v:g}" for k, v in variant.items())
                plan = [f"--plan-out={plan_dir}/{part}-{spec.kernel}{suffix}.json"] \
                    if plan_dir else []
                argv = ["measure", str(path), "--kernel", spec.kernel, *params, *method,
                        "--dry-run", "--arch", arch, *plan]
                failed += main(argv) != 0
sys.exit(1 if failed else 0)
PYEOF
    exit $?
fi

command -v nvidia-smi >/dev/null || { echo "run_all.sh: no nvidia-smi: this needs an NVIDIA GPU" >&2; exit 3; }
NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader -i "$GPU_INDEX")
GPU_ID=${GPU_ID:-$("$PY" -m flipflop.calibration.naming "$NAME")}
DATA=${DATA_DIR:-calibration/data/$GPU_ID}
mkdir -p "$DATA/microbench" "$DATA/workloads"
COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT-dirty"
{
    echo "command: calibration/run_all.sh ${ARGS[*]} (GPU_INDEX=$GPU_INDEX)"
    echo "commit: $COMMIT"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "device: $NAME"
    nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu \
        --format=csv -i "$GPU_INDEX"
} > "$DATA/RUN.txt"

BASE=()
[[ -f "calibration/profiles/$GPU_ID.json" ]] && BASE=(--base "$GPU_ID")
echo "== microbenchmarks -> $DATA/microbench" >&2
"${FLIPFLOP[@]}" calibrate --gpu-index "$GPU_INDEX" "${BASE[@]}" "${METHOD[@]}" \
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
        "${METHOD[@]}" --out "$DATA/workloads/$KERNEL.json"
done < "$DATA/workloads.txt"

if [[ -n "$VALIDATE" ]]; then
    echo "== validation (profile fitted above: $DATA/profile.json)" >&2
    "${FLIPFLOP[@]}" validate "$DATA/workloads" --gpu "$DATA/profile.json" --format json \
        > "$DATA/validate.json"
    "${FLIPFLOP[@]}" validate "$DATA/workloads" --gpu "$DATA/profile.json" | tee "$DATA/validate.txt"
fi
