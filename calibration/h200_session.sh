#!/usr/bin/env bash
# Energy ground truth on a lent GPU (an H200): calibration/run_all.sh and time + NVML energy of
# a fixed, seeded sample of 150 configurations of each of the convolution, pnpoly and GEMM
# search spaces of calibration/data/measured, written as Kernel Tuner caches. In two parts, each
# planned to fit one 8-minute call (server/flipflop/calibration/session.py says why and how):
#   A: run_all.sh trimmed (5 repeats, windows >= 1 s, no rests, 0.5 s idle, no validate) and
#      convolution;   B: pnpoly and GEMM.
# Measures the GPU as it is found: never changes clocks, power limits, persistence or compute
# mode (it only reads them, with nvidia-smi --query-gpu and NVML).
#
# On this machine (no GPU needed):
#   calibration/h200_session.sh --prepare [--shared DIR]  # copy the shared data it needs into
#                                                         # calibration/h200-inputs (carried)
#   calibration/h200_session.sh --wheels                  # download the wheels the GPU
#                                                         # machine's image lacks into .whl/
#   calibration/h200_session.sh --dry-run [--part A|B|all] [--budget S] [--sample N]
#                                   # the plan, every configuration compiled for sm_90 (the
#                                   # cubins are kept in the inputs and carried), the estimate
# On the GPU machine:
#   calibration/h200_session.sh --part A|B|all [--out DIR] [--resume DIR]
#                                   # --out defaults to $OUT; --resume continues the caches an
#                                   # earlier, cut-off call brought back (carry that folder)
# --sample N measures N configurations per space instead of 150: only to try the machinery.
#
# Output (at most 8 files, what the device tool brings back): RUN.txt (command, commit, date,
# device, driver, clocks, power limit, temperature), session.log, session.json (each step's
# command, exit code, time and the spaces' device/idle/method records), convolution.json,
# pnpoly.json, gemm.json (Kernel Tuner caches), calibration.tar.gz (run_all.sh's data folder).
set -euo pipefail
cd "$(dirname "$0")/.."
INPUTS=${INPUTS:-calibration/h200-inputs}
SHARED=${SHARED:-calibration/data/measured}
WHEELS=(lark==1.3.1 tree-sitter==0.26.1 tree-sitter-cuda==0.21.2)
MODE=run PART=all OUT_DIR=${OUT:-} BUDGET=480 SAMPLE=150 RESUME=""
ARGS=("$@")
while [[ $# -gt 0 ]]; do
    case "$1" in
        --prepare) MODE=prepare; shift ;;
        --wheels) MODE=wheels; shift ;;
        --dry-run) MODE=dry-run; shift ;;
        --part) PART=$2; shift 2 ;;
        --out) OUT_DIR=$2; shift 2 ;;
        --shared) SHARED=$2; shift 2 ;;
        --budget) BUDGET=$2; shift 2 ;;
        --sample) SAMPLE=$2; shift 2 ;;
        --resume) RESUME=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "h200_session.sh: error: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$PART" in A|B|all) ;; *) echo "h200_session.sh: error: --part A, B or all" >&2; exit 2 ;; esac

PY=python3
[[ -x .venv/bin/python ]] && PY=.venv/bin/python
PY=${PYTHON:-$PY}
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}"

case "$MODE" in
prepare)
    "$PY" -m flipflop.calibration.session prepare --shared "$SHARED" --inputs "$INPUTS"
    COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
    git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT-dirty"
    echo "$COMMIT" > "$INPUTS/COMMIT"
    echo "next: calibration/h200_session.sh --wheels, then --dry-run (compiles the cubins)"
    exit 0 ;;
wheels)
    mkdir -p .whl
    "$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux1_x86_64 -d .whl "${WHEELS[@]}"
    exit 0 ;;
dry-run)
    SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/flipflop-session-plan.XXXXXX")
    trap 'rm -rf "$SCRATCH"' EXIT
    echo "== h200_session.sh --dry-run --part $PART: inputs $INPUTS, budget $BUDGET s per part"
    for wheel in "${WHEELS[@]}"; do
        name=${wheel%%==*}
        ls .whl/"${name//-/_}"-* >/dev/null 2>&1 \
            || echo "note: no wheel of $wheel in .whl/ (run --wheels before the GPU run)"
    done
    "$PY" -m flipflop.calibration.session plan --part "$PART" --inputs "$INPUTS" \
        --scratch "$SCRATCH" --budget "$BUDGET" --sample "$SAMPLE" --python "$PY"
    exit $? ;;
esac

# ---------------------------------------------------------------- the run, on the GPU machine
[[ -n "$OUT_DIR" ]] || { echo "h200_session.sh: error: give --out DIR (or set OUT)" >&2; exit 2; }
command -v nvidia-smi >/dev/null \
    || { echo "h200_session.sh: error: no nvidia-smi: this needs an NVIDIA GPU" >&2; exit 3; }
mkdir -p "$OUT_DIR"
exec > >(tee -a "$OUT_DIR/session.log") 2>&1
if ls .whl/*.whl >/dev/null 2>&1 && ! "$PY" -c "import lark, tree_sitter_cuda" 2>/dev/null; then
    SITE=${TMPDIR:-/tmp}/flipflop-site
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" .whl/*.whl
    export PYTHONPATH="$PYTHONPATH:$SITE"
fi
COMMIT=$(git rev-parse HEAD 2>/dev/null || true)
if [[ -n "$COMMIT" ]]; then
    git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT-dirty"
else
    COMMIT="$(cat "$INPUTS/COMMIT" 2>/dev/null || echo unknown) (recorded by --prepare)"
fi
{
    echo "command: calibration/h200_session.sh ${ARGS[*]}"
    echo "commit: $COMMIT"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)"
    echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0)"
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm,power.limit,power.draw,temperature.gpu,persistence_mode,compute_mode \
        --format=csv -i 0
} > "$OUT_DIR/RUN.txt"
cat "$OUT_DIR/RUN.txt"
SCRATCH=${TMPDIR:-/tmp}/flipflop-session
rm -rf "$SCRATCH"
"$PY" -m flipflop.calibration.session run --part "$PART" --inputs "$INPUTS" \
    --scratch "$SCRATCH" --out "$OUT_DIR" --budget "$BUDGET" --sample "$SAMPLE" --python "$PY" \
    ${RESUME:+--resume "$RESUME"}
