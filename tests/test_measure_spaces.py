"""`flipflop measure` over search spaces of tunables: the kernels' descriptions against the real
sources, the sampled references against full computations, the configuration selection, the
dry run (real NVRTC compiles for sm_90), clear errors, and whole measurements into Kernel Tuner
caches with the GPU replaced at the system edge (tests/gpu_double.py), read back by `validate`
and by Kernel Tuner."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flipflop.calibration.references import (
    REFERENCES,
    SAMPLE_SIZE,
    Sampled,
    expected_error,
)
from flipflop.calibration.space_selection import ConfigurationFile, read_configuration_file, select
from flipflop.calibration.spec import read_spec_file
from flipflop.commands import measure, measuring, validate
from flipflop.formats.kernel_tuner_cache import read_kernel_tuner_cache
from flipflop.space.errors import SpaceError
from flipflop.space.kernel_tuner import kernel_tuner_launch
from flipflop.space.tunables import Tunable, choose_indices
from flipflop.variants.nvrtc import compile_with_nvrtc
from gpu_double import IDLE_W, JOULES_PER_LAUNCH, FakeGpu, FakeNvml

REPOSITORY = Path(__file__).resolve().parents[1]
MEASURED = REPOSITORY / "calibration" / "data" / "measured"
SPACES = REPOSITORY / "calibration" / "spaces"
XGEMM = REPOSITORY / "calibration" / "validation" / "xgemm.cu"

# (description, source, include folder, a configuration that every measured GPU ran)
KERNELS = {
    "convolution": (MEASURED / "convolution" / "convolution.cu", None,
                    {"block_size_x": 32, "block_size_y": 4, "filter_height": 15,
                     "filter_width": 15, "read_only": 0, "tile_size_x": 2, "tile_size_y": 2,
                     "use_padding": 0}),
    "pnpoly": (MEASURED / "pnpoly" / "pnpoly.cu", None,
               {"between_method": 0, "block_size_x": 256, "tile_size": 4, "use_method": 1}),
    "gemm": (XGEMM, MEASURED / "gemm",
             {"MWG": 64, "NWG": 64, "KWG": 32, "MDIMC": 16, "NDIMC": 16, "MDIMA": 16,
              "NDIMB": 16, "KWI": 2, "VWM": 2, "VWN": 2, "STRM": 0, "STRN": 0, "SA": 1,
              "SB": 1, "PRECISION": 32}),
}
PTX_TYPES = {"i32": ".u32", "u32": ".u32", "f32": ".f32", "i64": ".u64", "u64": ".u64",
             "f64": ".f64"}


def test_the_measured_data_is_there() -> None:
    assert MEASURED.is_dir(), f"{MEASURED} is missing: the tests need the shared measured data"


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_descriptions_match_the_kernels_parameters_and_constants(name: str) -> None:
    source, include, config = KERNELS[name]
    spec = read_spec_file(str(SPACES / f"{name}.json"), (SPACES / f"{name}.json").read_text())
    launch = kernel_tuner_launch([4096, 4096])
    text = 'extern "C" {\n' + launch.prepare_source(config, source.read_text()) + "\n}"
    options = ["-arch=compute_90", "--std=c++11", f"-I{source.parent}"]
    if include is not None:
        options.append(f"-I{include}")
    result = compile_with_nvrtc(source.name, text, options)
    assert result.ok, result.log
    entry = re.search(rf"\.entry\s+{spec.kernel}\s*\((.*?)\)", result.ptx, re.DOTALL)
    assert entry, f"{spec.kernel} is not an extern \"C\" entry of {source}"
    params = re.findall(r"\.param\s+(\.\w+)", entry.group(1))
    wanted = [".u64" if arg.is_pointer else PTX_TYPES[arg.type] for arg in spec.args]
    assert params == wanted
    for constant in spec.constants:
        assert re.search(rf"\.const\s.*\b{constant.name}\b", result.ptx), constant.name


def test_sampled_convolution_is_the_full_correlation_where_it_samples() -> None:
    rng = np.random.default_rng(3)
    height, width, fh, fw = 70, 66, 15, 15
    image = rng.standard_normal((height + 14) * (width + 14)).astype(np.float32)
    weights = rng.standard_normal(fh * fw).astype(np.float32)
    full = np.zeros((height, width))
    grid = image.astype(np.float64).reshape(height + 14, width + 14)
    for i in range(fh):
        for j in range(fw):
            full += grid[i:i + height, j:j + width] * float(weights[i * fw + j])
    scalars = {"image_height": height, "image_width": width, "filter_height": fh,
               "filter_width": fw}
    expected = REFERENCES["convolution_sampled"]({"input": image, "filter": weights}, scalars)
    sampled = expected["output"]
    assert isinstance(sampled, Sampled) and sampled.indices.size == SAMPLE_SIZE
    np.testing.assert_allclose(sampled.values, full.ravel()[sampled.indices], rtol=1e-12,
                               atol=1e-12)
    assert expected_error(full.ravel().astype(np.float32), sampled) < 1e-6
    broken = full.ravel().copy()
    broken[sampled.indices[::2]] = np.nan
    assert expected_error(broken, sampled) == float("inf")


def test_sampled_gemm_is_the_column_major_product_plus_c() -> None:
    rng = np.random.default_rng(4)
    m, n, k = 96, 80, 24
    a, b, c = (rng.standard_normal(size) for size in (m * k, k * n, m * n))
    # A[k*M + m], B[k*N + n], C[n*M + m]: A is K×M row-major, B K×N, C N×M.
    full = (a.reshape(k, m).T @ b.reshape(k, n)).T.ravel() * 2.0 + 0.5 * c
    scalars = {"m": m, "n": n, "k": k, "alpha": 2.0, "beta": 0.5}
    expected = REFERENCES["xgemm_sampled"]({"a": a, "b": b, "c": c}, scalars)["c"]
    assert isinstance(expected, Sampled)
    np.testing.assert_allclose(expected.values, full[expected.indices], rtol=1e-12, atol=1e-12)
    assert expected_error(full, expected) < 1e-12
    assert expected_error(np.zeros_like(full), expected) == pytest.approx(1.0)


def test_sampled_pnpoly_counts_crossings_like_the_kernel() -> None:
    rng = np.random.default_rng(5)
    n = 3000
    points = rng.standard_normal(2 * n).astype(np.float32)
    angles = np.sort(rng.random(600) * 2 * np.pi)[::-1]
    vertices = np.stack([np.cos(angles), np.sin(angles)], axis=1).ravel().astype(np.float32)
    expected = REFERENCES["pnpoly_sampled"]({"points": points, "d_vertices": vertices},
                                            {"n": n})["bitmap"]
    assert isinstance(expected, Sampled) and expected.indices.size == n  # fewer than a sample
    radius = np.hypot(points[0::2].astype(np.float64), points[1::2].astype(np.float64))
    clear = np.abs(radius - 1.0) > 0.01  # the polygon is within 0.01 of the unit circle
    assert expected.values.sum() > 0.3 * n
    np.testing.assert_array_equal(expected.values[clear], (radius < 1.0)[clear])


def _cache_file(path: Path, keys: list[str], entries: list[tuple[Any, ...]],
                failed: set[int] = frozenset()) -> ConfigurationFile:  # type: ignore[assignment]
    data = {
        "device_name": "NVIDIA GeForce RTX 3090", "kernel_name": "k", "problem_size": [64, 64],
        "tune_params_keys": keys,
        "tune_params": {key: sorted({e[i] for e in entries}) for i, key in enumerate(keys)},
        "objective": "time",
        "cache": {",".join(map(str, e)): {**dict(zip(keys, e, strict=True)),
                                           "time": "RuntimeFailedConfig" if i in failed else 1.0}
                  for i, e in enumerate(entries)},
    }
    path.write_text(json.dumps(data))
    return read_configuration_file(path)


def test_selection_keeps_what_succeeded_everywhere_and_samples_are_nested(tmp_path: Path
                                                                           ) -> None:
    keys = ["block_size_x", "tile"]
    entries = [(bx, t) for bx in (32, 64, 128, 256) for t in (1, 2, 4)]
    first = _cache_file(tmp_path / "a.json", keys, entries, failed={0})
    second = _cache_file(tmp_path / "b.json", keys, entries[::-1], failed={0})  # (256, 4)
    both = select([], [], [first, second], None, 7)
    assert both.available == 10 and both.problem_size == (64, 64)
    assert {c.as_tuple() for c in both.configurations} == set(entries[1:-1])
    assert [t.name for t in both.tunables] == keys
    small = select([], [], [first, second], 4, 7)
    large = select([], [], [first, second], 7, 7)
    assert set(small.configurations) < set(large.configurations)
    assert select([], [], [first, second], 4, 7) == small  # the same draw every time
    assert select([], [], [first, second], 4, 8).configurations != small.configurations
    restricted = select([], ["block_size_x * tile <= 128"], [first], None, 7)
    assert all(c["block_size_x"] * c["tile"] <= 128 for c in restricted.configurations)
    assert restricted.available == 5  # six pass, (32, 1) failed in the first file


def test_the_seeded_draw_is_nested_for_every_count() -> None:
    for count in (1, 17, 100):
        assert set(choose_indices(5220, count, 13)) <= set(choose_indices(5220, 150, 13))


def test_selection_from_tunables_and_plain_lists(tmp_path: Path) -> None:
    tunables = [Tunable("block_size_x", (32, 64)), Tunable("tile", (1, 2, 3))]
    whole = select(tunables, ["tile != 2"], [], None, 1)
    assert whole.available == 4 and whole.problem_size is None
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([{"block_size_x": 64, "tile": 3}, {"block_size_x": 32,
                                                                    "tile": 1}]))
    chosen = select(tunables, [], [read_configuration_file(listed)], None, 1)
    assert {c.as_tuple() for c in chosen.configurations} == {(64, 3), (32, 1)}
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps([{"block_size_x": 48, "tile": 1}]))
    with pytest.raises(SpaceError, match="block_size_x is not one of"):
        select(tunables, [], [read_configuration_file(outside)], None, 1)
    with pytest.raises(SpaceError, match="no tunables"):
        select([], [], [], None, 1)


# ------------------------------------------------------------------ the command


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    measure.register(subparsers)
    validate.register(subparsers)
    return parser.parse_args(argv)


PNPOLY_OPTIONS = [
    str(MEASURED / "pnpoly" / "pnpoly.cu"), "--kernel", "cn_pnpoly",
    "--args", str(SPACES / "pnpoly.json"),
    "--configs", str(MEASURED / "pnpoly" / "RTX_3090.json.gz"),
    "--configs", str(MEASURED / "pnpoly" / "RTX_2080_Ti.json.gz"),
    "--grid-div-x", "block_size_x,tile_size", "--compiler-option=-std=c++11",
]


def test_dry_run_plans_and_compiles_every_configuration(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    plan = tmp_path / "plan.json"
    argv = ["measure", *PNPOLY_OPTIONS, "--problem-size", "20000000", "--sample", "3",
            "--seed", "13", "--dry-run", "--arch", "sm_90", "--cubin-dir",
            str(tmp_path / "cubins"), "--plan-out", str(plan), "--window", "1"]
    assert measure.run(_args(argv)) == 0
    out = capsys.readouterr().out
    assert "3 configurations (of 3734, sample 3, seed 13" in out
    assert "bitmap i32[20000000] poison; points f32[40000000] normal" in out
    assert "energy window >= 1.0 s" in out and "compiled 3/3 for sm_90" in out
    data = json.loads(plan.read_text())
    assert len(data["configs"]) == 3 and all(c["compiled"] for c in data["configs"])
    for config in data["configs"]:
        _between, bx, tile, _method = map(int, config["key"].split(","))
        assert config["block"] == [bx, 1, 1]
        assert config["grid"] == [-(-20000000 // (bx * tile)), 1, 1]
    assert len(list((tmp_path / "cubins").glob("*.cubin"))) == 3
    # A second dry run finds every cubin stored.
    assert measure.run(_args(argv)) == 0
    assert capsys.readouterr().out.count(" stored") == 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--dry-run"], "--dry-run needs --arch"),
        (["--grid", "4", "--dry-run", "--arch", "sm_90"], "the launch is Kernel Tuner's"),
        (["--configs", "/nonexistent/x.json", "--dry-run", "--arch", "sm_90"],
         "/nonexistent/x.json: error: no such file"),
        (["--restrict", "block_size_q > 1", "--dry-run", "--arch", "sm_90"],
         "unknown parameter 'block_size_q'"),
    ],
)
def test_bad_space_options_are_exit_1_with_a_clear_message(
        extra: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["measure", *PNPOLY_OPTIONS, "--problem-size", "20000000", *extra]
    assert measure.run(_args(argv)) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_description_of_another_kernel_is_refused(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["measure", str(MEASURED / "pnpoly" / "pnpoly.cu"), "--kernel", "cn_pnpoly",
            "--args", str(SPACES / "gemm.json"), "--tune", "block_size_x=32",
            "--problem-size", "64", "--dry-run", "--arch", "sm_90"]
    assert measure.run(_args(argv)) == 1
    assert "gemm.json: error: describes kernel 'Xgemm', not 'cn_pnpoly'" in \
        capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"kernel": "cn_pnpoly", "args": [')
    argv[argv.index("--args") + 1] = str(broken)
    assert measure.run(_args(argv)) == 1
    assert f"{broken}:1:" in capsys.readouterr().err


# ---------------------------------------------- whole measurements, the GPU replaced


def _emulate_pnpoly(gpu: FakeGpu, name: str, grid: Any, block: Any, values: list[Any]) -> None:
    """cn_pnpoly in float32, point by point against the polygon in d_vertices; only when the
    bitmap was reset (the check's launch), so the energy window stays fast."""
    bitmap_ptr, points_ptr, n = values
    bitmap = gpu.view(bitmap_ptr, np.int32)
    if bitmap[0] != -1:
        return
    points = gpu.view(points_ptr, np.float32)[: 2 * n].reshape(n, 2)
    vertices = gpu.view(gpu.loaded[-1].globals["d_vertices"], np.float32)[:1200].reshape(600, 2)
    counts = np.zeros(n, dtype=np.int32)
    k = 599
    for j in range(600):
        vj, vk = vertices[j], vertices[k]
        slope = np.float32((vk[0] - vj[0]) / (vk[1] - vj[1]))
        between = (vj[1] > points[:, 1]) != (vk[1] > points[:, 1])
        counts += between & (points[:, 0] < slope * (points[:, 1] - vj[1]) + vj[0])
        k = j
    bitmap[:n] = counts & 1


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    made: dict[str, Any] = {"emulate": _emulate_pnpoly}

    def open_device(index: int) -> FakeGpu:
        made["gpu"] = FakeGpu(["ptr", "ptr", "i32"], made["emulate"])
        return made["gpu"]

    monkeypatch.setattr(measuring, "open_device", open_device)
    monkeypatch.setattr(measuring, "open_nvml", lambda gpu: FakeNvml(gpu))
    return made


SMALL = ["--param", "n=5000", "--problem-size", "5000", "--window", "0.05", "--idle", "0.05",
         "--repeats", "3", "--cooldown", "0", "--seed", "13"]


def test_a_measured_space_is_a_kernel_tuner_cache_that_validate_and_kernel_tuner_read(
        tmp_path: Path, fake_gpu: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pnpoly.json"
    argv = ["measure", *PNPOLY_OPTIONS, *SMALL, "--sample", "4", "--out", str(out),
            "--cubin-dir", str(tmp_path / "cubins")]
    assert measure.run(_args(argv)) == 0
    captured = capsys.readouterr()
    assert "4 measured, 0 already there, 0 failed to compile, 0 to run, 0 incorrect" in \
        captured.out
    raw = json.loads(out.read_text())
    assert raw["device_name"] == "NVIDIA H200" and raw["kernel_name"] == "cn_pnpoly"
    assert raw["problem_size"] == 5000
    assert raw["tune_params_keys"] == ["between_method", "block_size_x", "tile_size",
                                       "use_method"]
    assert raw["tune_params"]["block_size_x"] == list(range(32, 993, 32))
    for key, entry in raw["cache"].items():
        assert key == ",".join(str(entry[k]) for k in raw["tune_params_keys"])
        assert entry["correct"] is True
        assert entry["time"] == pytest.approx(0.2) and len(entry["times"]) == 3  # 2e-4 s
        assert entry["energy_window"] >= 0.05 and entry["energy_launches"] >= 250
        assert entry["nvml_energy_above_idle"] == pytest.approx(JOULES_PER_LAUNCH, rel=0.05)
        assert entry["idle_power"] == pytest.approx(IDLE_W, rel=0.05)
        assert entry["nvml_power"] > IDLE_W and entry["nvml_energy"] > JOULES_PER_LAUNCH
        assert (entry["core_freq"], entry["mem_freq"], entry["temperature"]) == \
            (1980.0, 3201.0, 40.0)
        bx, tile = entry["block_size_x"], entry["tile_size"]
        assert entry["block"] == [bx, 1, 1] and entry["grid"] == [-(-5000 // (bx * tile)), 1, 1]
    env = json.loads((tmp_path / "pnpoly.env.json").read_text())
    assert env["device"]["name"] == "NVIDIA H200" and env["device"]["driver_version"]
    assert env["measured"] == 4 and "device memory" in env["note"]
    assert env["selection"] == {"available": 3734, "sample": 4, "seed": 13,
                                "order": "seeded shuffle"}

    # Continued with a larger sample of the same seed: only the new configurations run.
    argv[argv.index("4")] = "6"
    assert measure.run(_args(argv)) == 0
    assert "2 measured, 4 already there" in capsys.readouterr().out
    space = read_kernel_tuner_cache(out)
    assert len(space.entries) == 6 and space.complete
    assert space.measured == ("time", "power", "energy")

    # FlipFlop validates it like any Kernel Tuner cache...
    assert validate.run(_args([
        "validate", str(out), "--source", str(MEASURED / "pnpoly" / "pnpoly.cu"),
        "--kernel", "cn_pnpoly", "--problem-size", "5000", "--grid-div-x",
        "block_size_x,tile_size", "--param", "n=5000", "--format", "json", "--no-cache",
    ])) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["gpu"] == "h200" and report["measured"] == ["time", "power", "energy"]
    assert report["configs"] + report["excluded"] == 6
    # ...and Kernel Tuner simulates a tuning run over it.
    kernel_tuner = pytest.importorskip("kernel_tuner")
    results, env_kt = kernel_tuner.tune_cache(str(out), quiet=True)
    assert len([r for r in results if "__error__" not in r]) == 6
    assert env_kt["best_config"]["time"] == pytest.approx(0.2)


def test_a_kernel_that_writes_nothing_is_recorded_incorrect(
        tmp_path: Path, fake_gpu: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    fake_gpu["emulate"] = None
    out = tmp_path / "wrong.json"
    argv = ["measure", *PNPOLY_OPTIONS, *SMALL, "--sample", "2", "--out", str(out)]
    assert measure.run(_args(argv)) == 0
    assert "2 incorrect" in capsys.readouterr().out
    assert [e["correct"] for e in json.loads(out.read_text())["cache"].values()] == [False] * 2


def test_cubins_the_driver_does_not_load_are_rebuilt(tmp_path: Path, fake_gpu: dict[str, Any],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cubins = tmp_path / "cubins"
    argv = ["measure", *PNPOLY_OPTIONS, *SMALL, "--sample", "2", "--cubin-dir", str(cubins)]
    assert measure.run(_args([*argv, "--dry-run", "--arch", "sm_90"])) == 0
    stored = sorted(cubins.glob("*.cubin"))
    assert len(stored) == 2
    for path in stored:
        path.write_bytes(b"not a cubin")  # e.g. made by a compiler this driver cannot load
    out = tmp_path / "rebuilt.json"
    assert measure.run(_args([*argv, "--out", str(out)])) == 0
    captured = capsys.readouterr()
    assert "building the 2 remaining cubins here" in captured.err
    assert "2 measured, 0 already there, 0 failed to compile, 0 to run" in captured.out
    assert all(path.read_bytes().startswith(b"\x7fELF") for path in stored)
    env = json.loads((tmp_path / "rebuilt.env.json").read_text())
    assert env["method"]["compiler"].startswith("nvrtc 13.")


def test_without_a_gpu_a_space_measurement_is_exit_3(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from flipflop.calibration.device import GpuUnavailable

    def absent(index: int) -> FakeGpu:
        raise GpuUnavailable("no NVIDIA driver")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(measuring, "open_device", absent)
        out = tmp_path / "none.json"
        argv = ["measure", *PNPOLY_OPTIONS, *SMALL, "--sample", "1", "--out", str(out)]
        assert measure.run(_args(argv)) == 3
    assert "no GPU to measure on: no NVIDIA driver" in capsys.readouterr().err
    assert not out.exists()


def test_a_cubins_key_is_the_same_wherever_its_inputs_are(tmp_path: Path) -> None:
    from flipflop.calibration.kernel_build import BuildRequest, kernel_tuner_options

    def request(folder: Path) -> BuildRequest:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "k.cu").write_text('#include "part.h"\n__global__ void k() {}\n')
        (folder / "part.h").write_text("#define X 1\n")
        options = kernel_tuner_options(["-std=c++11"], "sm_90", [folder])
        return BuildRequest("k.cu", (folder / "k.cu").read_text(), "sm_90", options, (folder,))

    here, there = request(tmp_path / "here"), request(tmp_path / "elsewhere" / "there")
    assert here.options != there.options and here.key() == there.key()
    (tmp_path / "here" / "part.h").write_text("#define X 2\n")
    assert here.key() != there.key()  # an included file changed
    assert BuildRequest("k.cu", here.text, "sm_80", here.options, here.dependencies).key() != \
        here.key()
