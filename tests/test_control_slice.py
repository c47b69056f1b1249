"""Trip counts and branch shares found by interpreting the control slice for a launch.

The kernels (tests/control_kernels) are compiled by the real nvcc as Kernel Tuner compiles a
search space (every tunable `#define`d) and parsed by our parser. Every expected count is
brute-forced here from the loop bounds in the source, thread by thread and block by block.
"""

from __future__ import annotations

import math
import pickle
import random
import subprocess
from pathlib import Path
from statistics import mean

import pytest

from cuda_toolchain import nvcc_for_tests
from flipflop.advice.drivers import energy_drivers
from flipflop.analysis import KernelFeatures, extract_features
from flipflop.analysis.expr import mean_ceil
from flipflop.analysis.interpret import interpret
from flipflop.analysis.report import features_json
from flipflop.gpu.profiles import load_profile
from flipflop.launch import LaunchShape
from flipflop.model import predict
from flipflop.ptx import parse_ptx
from flipflop.resources import Resources

KERNELS = Path(__file__).parent / "control_kernels"
NVCC = nvcc_for_tests()
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed")


def compile_kernel(
    folder: Path, source: str, name: str, defines: dict[str, int] | None = None
) -> KernelFeatures:
    assert NVCC is not None
    flags = [f"-D{key}={value}" for key, value in (defines or {}).items()]
    ptx = folder / f"{source}-{'-'.join(flags) or 'defaults'}.ptx"
    if not ptx.exists():
        subprocess.run(
            [NVCC, "-ptx", "-lineinfo", "-std=c++11", "-arch=sm_86", *flags,
             str(KERNELS / f"{source}.cu"), "-o", str(ptx)],
            check=True,
            capture_output=True,
        )  # fmt: skip
    module = parse_ptx(ptx.read_text(), str(ptx))
    matches = [k.name for k in module.kernels if name in k.name]
    assert len(matches) == 1, matches
    return extract_features(module, matches[0])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("control_ptx")


def line_of(source: str, marker: str) -> int:
    lines = (KERNELS / f"{source}.cu").read_text().splitlines()
    return next(number for number, text in enumerate(lines, 1) if f"// {marker}" in text)


def loads_at(features: KernelFeatures, shape: LaunchShape, params: dict[str, float],
             line: int) -> float:  # fmt: skip
    work = features.work(shape, params)
    return sum(
        site.accesses
        for site in work.sites
        if site.space == "global" and not site.is_store and line in site.lines
    )


def by_position(features: KernelFeatures, values: dict[int, float]) -> dict[str, float]:
    return {features.parameter_names[index]: value for index, value in values.items()}


# --------------------------------------------------------------------------- the tiled fill

FILL_CONFIGS = [
    # block x, block y, tile x, tile y, radius
    (32, 8, 2, 2, 7),
    (16, 4, 1, 3, 7),
    (64, 2, 4, 1, 3),
    (48, 8, 2, 2, 7),
    (32, 4, 8, 2, 7),  # a wide tile: the unrolled main loop runs too
    (128, 1, 1, 1, 1),
]


@pytest.mark.parametrize(("bx", "by", "tx", "ty", "radius"), FILL_CONFIGS)
def test_tiled_fill_loads_match_a_brute_force_count(
    folder: Path, bx: int, by: int, tx: int, ty: int, radius: int
) -> None:
    defines = {"block_size_x": bx, "block_size_y": by, "tile_size_x": tx, "tile_size_y": ty,
               "radius": radius}  # fmt: skip
    features = compile_kernel(folder, "tiled_fill", "tiled_fill", defines)
    rows, columns = by * ty + 2 * radius, bx * tx + 2 * radius
    expected = mean(
        len(range(y, rows, by)) * len(range(x, columns, bx)) for y in range(by) for x in range(bx)
    )
    shape = LaunchShape((bx, by, 1), (math.ceil(4096 / (bx * tx)), math.ceil(4096 / (by * ty)), 1))
    assert loads_at(features, shape, {}, line_of("tiled_fill", "fill")) == pytest.approx(expected)
    work = features.work(shape, {})
    assert not any(text.startswith("loop") for text in work.assumptions), work.assumptions
    assert not any(text.startswith("branch") for text in work.assumptions), work.assumptions


def test_tiled_fill_outer_loop_is_derived_through_its_copied_counter(folder: Path) -> None:
    features = compile_kernel(folder, "tiled_fill", "tiled_fill", {"block_size_y": 8})
    shape = LaunchShape((32, 8, 1), (128, 512, 1))
    launch = features.factor_values(shape, {})
    loops = [i for i, factor in enumerate(features.factors) if factor.kind == "loop"]
    outer = min(loops, key=lambda i: features.factors[i].depth)
    assert launch.derivation(features.factors, outer) == "derived"
    # i = ty, ty + 8, ... < 8 + 14: averaged exactly over ty, not taken at the mean ty.
    assert launch.values[outer] == pytest.approx(mean(len(range(y, 22, 8)) for y in range(8)))
    # The inner, unrolled loop and its remainder branches are interpreted.
    assert any(launch.derivation(features.factors, i) == "interpreted" for i in loops)


def test_tiled_fill_static_assumptions_are_resolved_per_launch(folder: Path) -> None:
    features = compile_kernel(folder, "tiled_fill", "tiled_fill")
    assert any("trip count unknown" in text for text in features.assumptions)
    shape = LaunchShape((32, 8, 1), (128, 512, 1))
    report = features_json(features, shape, {})
    derivations = {loop["derivation"] for loop in report["loops"]}
    assert "interpreted" in derivations and "assumed" not in derivations
    assert all(not loop["assumed"] for loop in report["loops"])
    assert report["assumptions"] == list(features.work(shape, {}).assumptions)
    assert not any("trip count unknown" in text for text in report["assumptions"])
    interpreted = [loop for loop in report["loops"] if loop["derivation"] == "interpreted"]
    assert all(loop["how"].startswith("interpreted for 256 thread(s)") for loop in interpreted)


# --------------------------------------------------------------------------- other patterns


@pytest.mark.parametrize("n", [999, 4096, 5000])
def test_unroll_remainder_loop_counts_every_thread_exactly(folder: Path, n: int) -> None:
    features = compile_kernel(folder, "control_patterns", "unrolled_rows")
    shape = LaunchShape((256, 1, 1), (100, 1, 1))
    expected = mean(len(range(t, n, 32)) for t in range(256))
    params = by_position(features, {1: n})
    assert loads_at(features, shape, params, line_of("control_patterns", "remainder")) == (
        pytest.approx(expected)
    )


@pytest.mark.parametrize(("block", "n"), [(256, 999), (128, 5000), (96, 1000)])
def test_exits_from_the_middle_of_an_unrolled_loop_are_counted(
    folder: Path, block: int, n: int
) -> None:
    features = compile_kernel(folder, "control_patterns", "unrolled_exits")
    shape = LaunchShape((block, 1, 1), (100, 1, 1))
    expected = mean(len(range(t, n, block)) for t in range(block))
    params = by_position(features, {1: n})
    assert loads_at(features, shape, params, line_of("control_patterns", "exits")) == (
        pytest.approx(expected)
    )


def test_min_bounded_loop(folder: Path) -> None:
    features = compile_kernel(folder, "control_patterns", "min_bounded")
    n = 8 * 124 + 1  # the last working thread has one element
    shape = LaunchShape((256, 1, 1), (4, 1, 1))
    threads = range(256 * 4)
    expected = mean(max(0, min(8, n - 8 * t)) for t in threads)
    params = by_position(features, {1: n})
    assert loads_at(features, shape, params, line_of("control_patterns", "bounded")) == (
        pytest.approx(expected)
    )
    # Per thread that enters the loop: every one of the 125 but the last runs 8 trips.
    launch = features.factor_values(shape, params)
    loop = next(i for i, f in enumerate(features.factors) if f.kind == "loop")
    assert launch.values[loop] == pytest.approx((124 * 8 + 1) / 125)


@pytest.mark.parametrize(("n", "blocks"), [(7 * 1000 + 333, 8), (3 * 1000, 3), (10**6 + 1, 1001)])
def test_boundary_block_found_through_ctaid(folder: Path, n: int, blocks: int) -> None:
    features = compile_kernel(folder, "control_patterns", "last_block_short")
    shape = LaunchShape((256, 1, 1), (blocks, 1, 1))
    expected = mean(
        len(range(b * 1000 + t, min((b + 1) * 1000, n), 256))
        for b in range(blocks)
        for t in range(256)
    )
    params = by_position(features, {1: n})
    assert loads_at(features, shape, params, line_of("control_patterns", "boundary")) == (
        pytest.approx(expected)
    )


@pytest.mark.parametrize(
    ("n", "blocks"), [(3 * 1000 + 77, 4), (9 * 1000 + 77, 10), (500 * 1000 - 1, 500)]
)
def test_boundary_guard_on_ctaid(folder: Path, n: int, blocks: int) -> None:
    features = compile_kernel(folder, "control_patterns", "last_block_guard")
    shape = LaunchShape((1000, 1, 1), (blocks, 1, 1))
    expected = mean(
        1 if t < min(1000, n - b * 1000) else 0 for b in range(blocks) for t in range(1000)
    )
    params = by_position(features, {1: n})
    # 1000-thread blocks times 10 or more blocks exceed the lanes run at once: the threads
    # are a stratified sample, the last block (the boundary) always among the blocks.
    assert loads_at(features, shape, params, line_of("control_patterns", "guarded")) == (
        pytest.approx(expected, rel=1e-3)
    )
    guard = next(i for i, f in enumerate(features.factors) if f.kind == "guard" and f.assumed)
    assert features.factor_values(shape, params).derivation(features.factors, guard) == (
        "interpreted"
    )


def test_data_dependent_loop_stays_assumed(folder: Path) -> None:
    features = compile_kernel(folder, "control_patterns", "follow_links")
    shape = LaunchShape((256, 1, 1), (64, 1, 1))
    params = by_position(features, {2: 256 * 64})
    launch = features.factor_values(shape, params)
    loop = next(i for i, f in enumerate(features.factors) if f.kind == "loop")
    assert launch.derivation(features.factors, loop) == "assumed"
    assert launch.values[loop] == 16.0
    work = features.work(shape, params)
    text = next(text for text in work.assumptions if text.startswith("loop"))
    assert "assumed 16" in text and "loaded from memory" in text
    report = features_json(features, shape, params)
    assert report["loops"][0]["assumed"] and report["loops"][0]["derivation"] == "assumed"


def test_drivers_say_when_their_counts_rest_on_an_assumed_loop(folder: Path) -> None:
    walk = compile_kernel(folder, "control_patterns", "follow_links")
    shape = LaunchShape((256, 1, 1), (64, 1, 1))
    work = walk.work(shape, by_position(walk, {2: 256 * 64}))
    loop_lines = next(f.lines for f in walk.factors if f.kind == "loop")
    walked = [s for s in work.sites if line_of("control_patterns", "walk") in s.lines]
    assert walked and all(s.counted_with_assumed == loop_lines for s in walked)
    profile = load_profile("rtx3090")
    prediction = predict(profile, Resources(registers=32), work, shape)
    traffic = next(d for d in energy_drivers(profile, Resources(registers=32), work, prediction)
                   if d.kind == "memory_traffic")  # fmt: skip
    assert "counts assume the loop or branch at line" in traffic.message
    # Interpreted counts are not assumptions: the tiled fill's drivers say nothing of the kind.
    fill = compile_kernel(folder, "tiled_fill", "tiled_fill")
    fill_shape = LaunchShape((32, 8, 1), (128, 512, 1))
    fill_work = fill.work(fill_shape, {})
    assert all(not s.counted_with_assumed for s in fill_work.sites)
    fill_prediction = predict(profile, Resources(registers=32), fill_work, fill_shape)
    drivers = energy_drivers(profile, Resources(registers=32), fill_work, fill_prediction)
    assert drivers and not any("counts assume" in d.message for d in drivers)


def test_missing_parameter_keeps_the_assumption_and_says_which(folder: Path) -> None:
    features = compile_kernel(folder, "control_patterns", "unrolled_rows")
    work = features.work(LaunchShape((256, 1, 1), (100, 1, 1)), {})
    text = next(text for text in work.assumptions if text.startswith("loop"))
    assert f"needs the value of parameter {features.parameter_names[1]}" in text


# --------------------------------------------------------------------------- machinery


def test_interpretation_is_cached_per_block_and_reused_across_grids(folder: Path) -> None:
    features = compile_kernel(folder, "tiled_fill", "tiled_fill")
    (control,) = features.controls
    assert not control.reads("special", ("ctaid.x", "ctaid.y", "nctaid.x", "nctaid.y"))
    values = [0.0] * len(features.factors)
    first = interpret(control, LaunchShape((32, 8, 1), (128, 512, 1)), {}, values)
    again = interpret(control, LaunchShape((32, 8, 1), (7, 9, 1)), {}, values)
    other = interpret(control, LaunchShape((64, 4, 1), (128, 512, 1)), {}, values)
    assert again is first and other is not first


def test_a_sweep_of_block_shapes_counts_what_single_launches_count(folder: Path) -> None:
    defines = {"block_size_x": 32, "block_size_y": 4, "tile_size_x": 4, "tile_size_y": 2}
    shapes = [(32, 4, 1), (64, 2, 1), (16, 16, 1), (256, 1, 1), (8, 8, 8), (1024, 1, 1)]
    sweeping = compile_kernel(folder, "tiled_fill", "tiled_fill", defines)
    for block in shapes:
        shape = LaunchShape(block, (64, 64, 1))
        alone = compile_kernel(folder, "tiled_fill", "tiled_fill", defines)  # fresh: one run
        assert sweeping.factor_values(shape, {}).values == pytest.approx(
            alone.factor_values(shape, {}).values
        )
    # Past the first shape the counts came from one run over every thread index.
    (control,) = sweeping.controls
    assert any(isinstance(key, tuple) and key[0] == "sweep" for key in control.memo.entries)


def test_features_survive_pickling_with_their_slices(folder: Path) -> None:
    features = compile_kernel(folder, "tiled_fill", "tiled_fill")
    shape = LaunchShape((32, 8, 1), (128, 512, 1))
    before = features.work(shape, {})
    restored = pickle.loads(pickle.dumps(features))
    assert restored.work(shape, {}) == before


def test_large_blocks_and_grids_are_sampled_close_to_the_exact_count(folder: Path) -> None:
    features = compile_kernel(folder, "control_patterns", "last_block_short")
    n = 9 * 1000 + 517
    shape = LaunchShape((1024, 1, 1), (10, 1, 1))
    expected = mean(
        len(range(b * 1000 + t, min((b + 1) * 1000, n), 1024))
        for b in range(10)
        for t in range(1024)
    )
    params = by_position(features, {1: n})
    found = loads_at(features, shape, params, line_of("control_patterns", "boundary"))
    assert found == pytest.approx(expected, rel=0.02)


def test_mean_ceil_matches_a_direct_sum() -> None:
    generator = random.Random(7)
    for _ in range(3000):
        span, slope = generator.randint(-300, 300), generator.randint(-40, 40)
        stride, count = generator.randint(1, 70), generator.randint(1, 200)
        direct = mean(max(0, math.ceil((span + slope * i) / stride)) for i in range(count))
        assert mean_ceil(span, slope, stride, count) == pytest.approx(direct)


def channel_loads_per_thread(block: tuple[int, int], blocks: tuple[int, int]) -> float:
    """`tiled_channel_sums` counted by brute force: 1536 loads for each of the 3 x 8 outputs of
    a thread that lies inside the 1000 x 300 problem, averaged over the launched threads."""
    columns = [x * 3 + t for x in range(blocks[0] * block[0]) for t in range(3)]
    rows = [y * 8 + t for y in range(blocks[1] * block[1]) for t in range(8)]
    threads = blocks[0] * block[0] * blocks[1] * block[1]
    outputs = sum(1 for c in columns if c < 1000) * sum(1 for r in rows if r < 300)
    return 1536 * outputs / threads


@pytest.mark.parametrize(("block", "blocks"), [((64, 16), (6, 3)), ((32, 8), (6, 5))])
def test_guards_around_a_long_inner_loop_are_interpreted(
    folder: Path, block: tuple[int, int], blocks: tuple[int, int]
) -> None:
    """Dedispersion's tiles: 3 x 8 guarded outputs a thread, 1536 channels each, the channel
    loop kept rolled. Walking it for every output would take ~37000 steps, far past the
    interpreter's budget, and leave every thread doing every output (24 times the work of a
    launch whose threads mostly fail the bounds tests); the loop holds nothing the guards read,
    so the run steps over it."""
    features = compile_kernel(folder, "control_patterns", "tiled_channel_sums")
    shape = LaunchShape((*block, 1), (*blocks, 1))
    loads = loads_at(features, shape, {}, line_of("control_patterns", "channel sum"))
    # Every block runs (a grid of at most 6 blocks an axis), a stratified sample of their
    # threads: within a few percent.
    assert loads == pytest.approx(channel_loads_per_thread(block, blocks), rel=0.03)
    work = features.work(shape, {})
    assert not any(text.startswith("branch") for text in work.assumptions), work.assumptions


@pytest.mark.parametrize(("block", "blocks"), [((64, 2), (6, 160)), ((8, 8), (42, 40)),
                                               ((2, 32), (167, 12))])  # fmt: skip
def test_a_band_of_working_blocks_is_sampled_finely_enough(
    folder: Path, block: tuple[int, int], blocks: tuple[int, int]
) -> None:
    """A grid sized for the problem without its 3 x 8 tiles (Kernel Tuner's default divisor):
    only a band of 1/6 to 1/8 of the grid's rows of blocks has rows to compute. With 6 sampled
    blocks an axis these were counted at 0.05, 0.21 and 1.15 times the true work; the stratified
    sample of 11 an axis keeps them within 10%."""
    features = compile_kernel(folder, "control_patterns", "tiled_channel_sums")
    shape = LaunchShape((*block, 1), (*blocks, 1))
    loads = loads_at(features, shape, {}, line_of("control_patterns", "channel sum"))
    assert loads == pytest.approx(channel_loads_per_thread(block, blocks), rel=0.1)


@pytest.mark.parametrize(("block", "blocks"), [((32, 4), (32, 16)), ((64, 2), (16, 40)),
                                               ((8, 8), (125, 10))])  # fmt: skip
def test_a_loop_that_breaks_on_another_bound_is_counted_per_launch(
    folder: Path, block: tuple[int, int], blocks: tuple[int, int]
) -> None:
    """A rolled tile loop of 8 rows that breaks at the last row: read from its counter's exit
    alone it ran 8 trips for every thread, 1.7-2.1 times the rows these grids have; its other
    exit tests another bound, so a run of the launch counts it."""
    features = compile_kernel(folder, "control_patterns", "tiled_rows_break")
    shape = LaunchShape((*block, 1), (*blocks, 1))
    threads = blocks[0] * block[0] * blocks[1] * block[1]
    columns = sum(1 for x in range(blocks[0] * block[0]) if x < 1000)
    rows = sum(min(8, max(0, 300 - y * 8)) for y in range(blocks[1] * block[1]))
    loads = loads_at(features, shape, {}, line_of("control_patterns", "row copy"))
    # The band of rows ends inside a stratum of the sampled blocks: within 10%.
    assert loads == pytest.approx(columns * rows / threads, rel=0.1)
    loop = next(f for f in features.factors if f.kind == "loop")
    assert loop.assumed and "another exit tests another bound" in loop.description
