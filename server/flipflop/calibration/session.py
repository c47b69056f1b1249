"""The energy ground-truth session on a lent GPU (`calibration/h200_session.sh`): what runs, how
long it should take, and running it.

Two parts, each meant for one call of at most `BUDGET_S` on the machine:

- A: `calibration/run_all.sh` (every microbenchmark and the profile fit, every workload's
  block sweep) trimmed to `CALIBRATION_METHOD`, without its last step (validate needs no GPU),
  then the convolution space;
- B: the pnpoly and GEMM spaces.

Each space is a fixed, seeded sample (`SAMPLE`, `SEED`) of the configurations that ran on both
GPUs of the shared measurements, measured by `flipflop measure` with tunables into a Kernel
Tuner cache, with `SPACE_METHOD` (energy window >= 1 s, idle measured before and after).
450 windows of >= 1 s cannot fit one 8-minute call together with run_all.sh; hence two parts.

`prepare` copies what the machine needs from the shared data into the repository's carried
inputs folder (the machine receives the repository and carried paths only); `plan` is the dry
run: every step's plan, every configuration compiled for the target, and the time estimate;
`run` runs a part and writes at most 8 files to the output folder (what the device tool brings
back), the caches written entry by entry so a stopped run keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUDGET_S = 480.0  # one call's share of the lease, 8 minutes
SAMPLE = 150
SEED = 13
ARCH = "sm_90"


@dataclass(frozen=True)
class Method:
    repeats: int
    window_s: float
    cooldown_s: float
    idle_s: float

    def options(self) -> list[str]:
        return ["--repeats", str(self.repeats), "--window", f"{self.window_s:g}",
                "--cooldown", f"{self.cooldown_s:g}", "--idle", f"{self.idle_s:g}"]


# Energy windows stay >= 1 s everywhere (NVML's counter updates every 20-100 ms); what is
# trimmed is the number of timed repeats (5, median kept), the rests between configurations
# and the idle window of each sweep.
SPACE_METHOD = Method(repeats=5, window_s=1.0, cooldown_s=0.0, idle_s=1.0)
CALIBRATION_METHOD = Method(repeats=5, window_s=1.0, cooldown_s=0.0, idle_s=0.5)


@dataclass(frozen=True)
class Space:
    """One measured search space, with the launch semantics of its tune script."""

    name: str
    kernel: str
    source: str  # in the repository; "{inputs}" is the carried inputs folder
    files: tuple[str, ...]  # copied from the shared measured/<name>/ to inputs/<name>/
    caches: tuple[str, ...]  # the configurations: those that ran in every one of these
    problem_size: str
    grid_div_x: str | None = None
    grid_div_y: str | None = None
    block_size_names: str | None = None
    compiler_options: tuple[str, ...] = ()
    include_inputs: bool = False  # -I inputs/<name> (the GEMM's OpenCL parts)

    def source_path(self, inputs: Path) -> Path:
        return Path(self.source.replace("{inputs}", str(inputs)))


CACHES = ("RTX_3090.json.gz", "RTX_2080_Ti.json.gz")
SPACES = (
    # tune_convolution.py / T1.json: 4096x4096, 15x15 filter, grid divided by block x tile.
    Space("convolution", "convolution_kernel", "{inputs}/convolution/convolution.cu",
          ("convolution.cu", *CACHES), CACHES, "4096,4096",
          grid_div_x="block_size_x,tile_size_x", grid_div_y="block_size_y,tile_size_y",
          compiler_options=("-std=c++11",)),
    # T1.json: 20 M points, grid divided by block x tile, -std=c++11.
    Space("pnpoly", "cn_pnpoly", "{inputs}/pnpoly/pnpoly.cu", ("pnpoly.cu", *CACHES), CACHES,
          "20000000", grid_div_x="block_size_x,tile_size", compiler_options=("-std=c++11",)),
    # tune_gemm.py: M = N = K = 4096, grid (M/MWG, N/NWG), block (MDIMC, NDIMC), -I the parts.
    Space("gemm", "Xgemm", "calibration/validation/xgemm.cu",
          ("cl_to_cuda.h", "common.opencl", "xgemm_part1.opencl", "xgemm_part2.opencl",
           "xgemm_part3.opencl", "xgemm_part4.opencl", *CACHES), CACHES, "4096,4096",
          grid_div_x="MWG", grid_div_y="NWG", block_size_names="MDIMC,NDIMC",
          include_inputs=True),
)
CALIBRATION = "calibration"
PARTS: dict[str, tuple[str, ...]] = {"A": (CALIBRATION, "convolution"), "B": ("pnpoly", "gemm")}
PART_NAMES = (*PARTS, "all")

# ----------------------------------------------------------------------------- the estimate
# Seconds, each an assumption stated here and checked by the run, which records every step's
# own time beside its estimate (session.json).
PROCESS_START_S = 3.0  # python, importing flipflop.cli, the CUDA context and NVML
ELEMENT_S = 15e-9  # generating one element of argument data and uploading it
REFERENCE_ELEMENT_S = 10e-9  # a workload's float64 reference, per input element
CONFIG_OVERHEAD_S = 0.04  # module load, constants, the check's transfers, the cache entry
# run_all.sh's kernels are sized to run for milliseconds; their times are not known before
# the run, so each launch is assumed to take this long.
ASSUMED_WORKLOAD_LAUNCH_S = 0.005
SETUP_S = 10.0  # installing the carried wheels, RUN.txt, packing the results


def config_seconds(launch_s: float, method: Method) -> float:
    """One configuration by the runner's method: the check's launch, warm-up (>= 3 launches
    and >= 50 ms), timed repeats in batches of >= 1 ms, the energy window (>= window, plus up
    to one and a half 50-ms chunks), the rest."""
    t = launch_s
    return (CONFIG_OVERHEAD_S + t + max(3 * t, 0.05) + method.repeats * max(t, 1e-3)
            + max(method.window_s, t) + 1.5 * max(0.05, t) + method.cooldown_s)


def space_seconds(launch_times_s: Sequence[float], argument_bytes: int, method: Method) -> float:
    """A space measurement: the process, data, idle before and after, every configuration."""
    elements = argument_bytes / 4
    return (PROCESS_START_S + elements * ELEMENT_S + 2 * method.idle_s
            + sum(config_seconds(t, method) for t in launch_times_s))


def sweep_seconds(configs: int, elements: int, method: Method) -> float:
    """One block sweep of run_all.sh: data and reference, idle, every block shape."""
    return (elements * (ELEMENT_S + REFERENCE_ELEMENT_S) + method.idle_s
            + configs * config_seconds(ASSUMED_WORKLOAD_LAUNCH_S, method))


def calibration_seconds(plans: Sequence[Mapping[str, Any]], method: Method) -> float:
    """run_all.sh: one process for the microbenchmarks, one per workload, every sweep."""
    processes = 1 + sum(1 for plan in plans if "/workloads/" in str(plan["file"]))
    return processes * PROCESS_START_S + sum(
        sweep_seconds(len(plan["configs"]), sum(plan["argument_elements"].values()), method)
        for plan in plans)


# ----------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class Layout:
    """Where things are (the carried inputs, scratch space, the output folder), and the
    configurations per space: SAMPLE, or fewer only to try the machinery quickly."""

    inputs: Path
    scratch: Path
    out: Path
    python: str = sys.executable
    sample: int = SAMPLE

    @property
    def cubins(self) -> Path:
        return self.inputs / "cubins"


def measure_command(space: Space, layout: Layout, dry_run: bool) -> list[str]:
    folder = layout.inputs / space.name
    argv = [layout.python, "-m", "flipflop.cli", "measure", str(space.source_path(layout.inputs)),
            "--kernel", space.kernel, "--args", f"calibration/spaces/{space.name}.json"]
    for cache in space.caches:
        argv += ["--configs", str(folder / cache)]
    argv += ["--sample", str(layout.sample), "--seed", str(SEED),
             "--problem-size", space.problem_size]
    for option, value in (("--grid-div-x", space.grid_div_x), ("--grid-div-y", space.grid_div_y),
                          ("--block-size-names", space.block_size_names)):
        if value is not None:
            argv += [option, value]
    argv += [f"--compiler-option={option}" for option in space.compiler_options]
    if space.include_inputs:
        argv += ["-I", str(folder)]
    argv += [*SPACE_METHOD.options(), "--cubin-dir", str(layout.cubins)]
    if dry_run:
        argv += ["--dry-run", "--arch", ARCH, "--plan-out",
                 str(layout.scratch / f"{space.name}.plan.json")]
    else:
        argv += ["--out", str(layout.out / f"{space.name}.json"),
                 "--env-out", str(layout.scratch / f"{space.name}.env.json")]
    return argv


def calibration_command(layout: Layout, dry_run: bool) -> list[str]:
    argv = ["calibration/run_all.sh", *CALIBRATION_METHOD.options(), "--no-validate",
            "--cubin-dir", str(layout.cubins)]
    if dry_run:
        argv += ["--dry-run", "--arch", ARCH, "--plan-dir",
                 str(layout.scratch / "calibration-plan")]
    else:
        argv += ["--data-dir", str(layout.scratch / "calibration")]
    return argv


def steps(part: str) -> tuple[str, ...]:
    if part == "all":
        return tuple(step for names in PARTS.values() for step in names)
    return PARTS[part]


def space(name: str) -> Space:
    return next(s for s in SPACES if s.name == name)


def step_command(name: str, layout: Layout, dry_run: bool) -> list[str]:
    if name == CALIBRATION:
        return calibration_command(layout, dry_run)
    return measure_command(space(name), layout, dry_run)


def _environment(layout: Layout) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SKIP_INSTALL="1", PYTHON=layout.python, PYTHONUNBUFFERED="1")
    return env


def _run(argv: Sequence[str], layout: Layout, log: Any) -> int:
    """Run one step, its output to the terminal (and so to the session log)."""
    print(f"$ {shlex.join(argv)}", flush=True)
    completed = subprocess.run(list(argv), env=_environment(layout), stdout=log, stderr=log,
                               check=False)
    return completed.returncode


# ----------------------------------------------------------------------------- prepare


def prepare(shared: Path, inputs: Path) -> list[Path]:
    """Copy every shared file a part needs into the carried inputs folder."""
    copied = []
    for item in SPACES:
        folder = inputs / item.name
        folder.mkdir(parents=True, exist_ok=True)
        for name in item.files:
            source = shared / item.name / name
            if not source.is_file():
                raise FileNotFoundError(2, "the shared measured data lacks it", str(source))
            target = folder / name
            target.unlink(missing_ok=True)  # the shared copies are read-only
            shutil.copyfile(source, target)
            target.chmod(0o644)
            copied.append(target)
    return copied


def missing_inputs(layout: Layout, part: str) -> list[Path]:
    wanted: list[Path] = [Path("calibration/run_all.sh")]
    for name in steps(part):
        if name == CALIBRATION:
            continue
        item = space(name)
        wanted.append(item.source_path(layout.inputs))
        wanted.append(Path(f"calibration/spaces/{name}.json"))
        wanted += [layout.inputs / name / file for file in item.files]
    return [path for path in wanted if not path.is_file()]


# ----------------------------------------------------------------------------- plan


def launch_times(space_: Space, layout: Layout, keys: Sequence[str]) -> list[float]:
    """Each configuration's time measured on the first of its caches (an RTX 3090): the
    estimate's stand-in for the H200, which is faster at fp32 arithmetic, at memory bandwidth
    and has more SMs."""
    from flipflop.formats.kernel_tuner_cache import read_kernel_tuner_cache

    measured = read_kernel_tuner_cache(layout.inputs / space_.name / space_.caches[0])
    times = {entry.key: entry.time_s for entry in measured.entries}
    return [times.get(key) or 0.0 for key in keys]


def plan(part: str, layout: Layout, budget_s: float, log: Any = None) -> int:
    """The dry run: every step's own dry run (all compiled for ARCH), then the estimate."""
    log = log or sys.stdout
    missing = missing_inputs(layout, part)
    if missing:
        for path in missing:
            print(f"{path}: error: missing input (run calibration/h200_session.sh --prepare)",
                  file=sys.stderr)
        return 1
    layout.scratch.mkdir(parents=True, exist_ok=True)
    failures = 0
    estimates: dict[str, float] = {}
    for name in steps(part):
        print(f"\n== step {name}", file=log, flush=True)
        argv = step_command(name, layout, dry_run=True)
        code = _run(argv, layout, log)
        failures += code != 0
        if code != 0:
            print(f"step {name}: its dry run failed (exit {code})", file=sys.stderr)
            continue
        estimates[name] = _estimate(name, layout)
    print(file=log)
    print(estimate_table(part, estimates, budget_s, layout), file=log, flush=True)
    fits = all(_part_total(p, estimates) <= budget_s
               for p in ((part,) if part != "all" else tuple(PARTS)))
    if not fits:
        print(f"the estimate exceeds the budget of {budget_s:.0f} s per part", file=sys.stderr)
    return 1 if failures or not fits else 0


def _estimate(name: str, layout: Layout) -> float:
    if name == CALIBRATION:
        folder = layout.scratch / "calibration-plan"
        plans = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
        return calibration_seconds(plans, CALIBRATION_METHOD)
    data = json.loads((layout.scratch / f"{name}.plan.json").read_text())
    times = launch_times(space(name), layout, [c["key"] for c in data["configs"]])
    return space_seconds(times, int(data["argument_bytes"]), SPACE_METHOD)


def _part_total(part: str, estimates: Mapping[str, float]) -> float:
    return SETUP_S + sum(estimates.get(name, math.inf) for name in steps(part))


def estimate_table(part: str, estimates: Mapping[str, float], budget_s: float,
                   layout: Layout) -> str:
    lines = [f"== time estimate (budget {budget_s:.0f} s = {budget_s / 60:.0f} min per part)"]
    for name_of_part in ((part,) if part != "all" else tuple(PARTS)):
        lines.append(f"part {name_of_part}:")
        lines.append(f"  {'setup (wheels, RUN.txt, packing)':58} {SETUP_S:6.0f} s")
        for name in steps(name_of_part):
            lines.append(f"  {_describe_step(name, layout):58} "
                         f"{estimates.get(name, math.nan):6.0f} s")
        total = _part_total(name_of_part, estimates)
        verdict = "fits" if total <= budget_s else "DOES NOT FIT"
        lines.append(f"  {'total':58} {total:6.0f} s = {total / 60:.1f} min: {verdict}")
    if part == "all":
        both = sum(_part_total(p, estimates) for p in PARTS)
        lines.append(f"both parts {both:.0f} s = {both / 60:.1f} min of machine time, plus the "
                     f"machine's start and the transfers")
    lines.append(
        f"How: per configuration {CONFIG_OVERHEAD_S} s overhead + the check's launch + warm-up "
        f"max(3t, 0.05 s) + {SPACE_METHOD.repeats} x max(t, 1 ms) + max(window, t) + 1.5 x "
        f"max(50 ms, t) + cooldown, t the configuration's time on the RTX 3090 (spaces) or "
        f"{ASSUMED_WORKLOAD_LAUNCH_S * 1e3:g} ms (run_all.sh); per process "
        f"{PROCESS_START_S:g} s; data {ELEMENT_S * 1e9:g} ns per element (+ "
        f"{REFERENCE_ELEMENT_S * 1e9:g} ns for run_all.sh's references); idle windows as "
        f"planned.")
    return "\n".join(lines)


def _describe_step(name: str, layout: Layout) -> str:
    if name == CALIBRATION:
        method = CALIBRATION_METHOD
        return (f"run_all.sh: repeats {method.repeats}, window >= {method.window_s:g} s, "
                f"idle {method.idle_s:g} s")
    data = json.loads((layout.scratch / f"{name}.plan.json").read_text())
    return (f"{name}: {len(data['configs'])} configurations, window >= "
            f"{SPACE_METHOD.window_s:g} s")


# ----------------------------------------------------------------------------- run


def run(part: str, layout: Layout, budget_s: float, resume: Path | None = None) -> int:
    """Run a part's steps in order (a failing step does not stop the next), recording each
    step's time in session.json after every step. Caches in `resume` (what an earlier, cut-off
    call brought back) are continued: only the configurations they lack are measured."""
    layout.out.mkdir(parents=True, exist_ok=True)
    layout.scratch.mkdir(parents=True, exist_ok=True)
    for name in steps(part):
        earlier = resume / f"{name}.json" if resume is not None else None
        if name != CALIBRATION and earlier is not None and earlier.is_file() \
                and not (layout.out / earlier.name).exists():
            shutil.copyfile(earlier, layout.out / earlier.name)
            print(f"continuing {earlier}", flush=True)
    record: dict[str, Any] = {"schema": "flipflop.session/1", "part": part,
                              "budget_s": budget_s, "steps": [], "spaces": {}}
    started = time.perf_counter()
    failed = 0
    for name in steps(part):
        print(f"\n== step {name} (at {time.perf_counter() - started:.0f} s)", flush=True)
        argv = step_command(name, layout, dry_run=False)
        step_start = time.perf_counter()
        code = _run(argv, layout, sys.stdout)
        failed += code != 0
        entry: dict[str, Any] = {"step": name, "command": argv, "exit": code,
                                 "seconds": round(time.perf_counter() - step_start, 1)}
        record["steps"].append(entry)
        if name == CALIBRATION:
            _pack(layout.scratch / "calibration", layout.out / "calibration.tar.gz")
        else:
            env = layout.scratch / f"{name}.env.json"
            if env.is_file():
                record["spaces"][name] = json.loads(env.read_text())
        record["seconds"] = round(time.perf_counter() - started, 1)
        (layout.out / "session.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"\n== part {part} done in {time.perf_counter() - started:.0f} s; "
          f"{failed} step(s) failed", flush=True)
    return 1 if failed else 0


def _pack(folder: Path, archive: Path) -> None:
    if not folder.is_dir():
        return
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)


# ----------------------------------------------------------------------------- entry point


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flipflop.calibration.session",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", required=True)
    prep = sub.add_parser("prepare", help="copy the shared data into the inputs folder")
    prep.add_argument("--shared", type=Path, required=True, metavar="MEASURED_DIR")
    for name in ("plan", "run"):
        action = sub.add_parser(name, help="the dry run" if name == "plan" else "run a part")
        action.add_argument("--part", choices=PART_NAMES, default="all")
        action.add_argument("--scratch", type=Path, required=True)
        action.add_argument("--budget", type=float, default=BUDGET_S, metavar="SECONDS")
        action.add_argument("--sample", type=int, default=SAMPLE, metavar="N",
                            help=f"configurations per space ({SAMPLE}; fewer to try it out)")
        action.add_argument("--python", default=sys.executable,
                            help="the Python that runs flipflop (default: this one)")
        if name == "run":
            action.add_argument("--out", type=Path, required=True)
            action.add_argument("--resume", type=Path, metavar="DIR",
                                help="continue the caches an earlier call brought back")
    for action in sub.choices.values():
        action.add_argument("--inputs", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.action == "prepare":
        try:
            copied = prepare(args.shared, args.inputs)
        except FileNotFoundError as error:
            print(f"{error.filename}: error: {error.strerror}", file=sys.stderr)
            return 1
        print(f"copied {len(copied)} files to {args.inputs}")
        return 0
    if args.sample < 1:
        print("error: --sample must be at least 1", file=sys.stderr)
        return 2
    layout = Layout(args.inputs, args.scratch, getattr(args, "out", args.scratch),
                    python=args.python, sample=args.sample)
    if args.action == "plan":
        return plan(args.part, layout, args.budget)
    return run(args.part, layout, args.budget, args.resume)


if __name__ == "__main__":
    sys.exit(main())
