"""Compiling many variants of one source: both compilers, the disk cache, the worker pool."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from flipflop.toolchain import CompileOptions, ToolCancelled, Toolchain
from flipflop.variants.analyze import Backend, VariantJob, analyze_variant
from flipflop.variants.cache import DiskCache, cache_key, included_files
from flipflop.variants.nvrtc import nvrtc_version
from flipflop.variants.pool import PoolOptions, analyze_variants

CORPUS = Path(__file__).parent / "corpus"
SOURCE = Path(__file__).parent / "tunable" / "tunable_scale.cu"


def _job(
    toolchain: Toolchain, backend: Backend, block: int, tile: int, text: str | None = None,
    path: Path = SOURCE,
) -> VariantJob:
    defines = f"#define block_size_x {block}\n#define tile_size {tile}\n#line 1\n"
    body = text if text is not None else path.read_text()
    return VariantJob(path, defines + body, "sm_80", CompileOptions(), toolchain, backend,
                      "tiled_scale")


def test_nvrtc_is_installed_by_the_project() -> None:
    assert nvrtc_version() is not None, "flipflop[nvcc] installs nvidia-cuda-nvrtc"


def test_nvrtc_and_nvcc_agree(cuda_toolchain: Toolchain) -> None:
    by_nvrtc = analyze_variant(_job(cuda_toolchain, "nvrtc", 128, 4))
    by_nvcc = analyze_variant(_job(cuda_toolchain, "nvcc", 128, 4))
    assert by_nvrtc.ok and by_nvcc.ok, (by_nvrtc.diagnostics, by_nvcc.diagnostics)
    (nvrtc_kernel,), (nvcc_kernel,) = by_nvrtc.kernels, by_nvcc.kernels
    assert nvrtc_kernel.info.display_name == nvcc_kernel.info.display_name == "tiled_scale"
    assert nvrtc_kernel.info.resources is not None and nvcc_kernel.info.resources is not None
    assert nvrtc_kernel.info.resources.registers > 0
    # The #line directive after the prepended defines keeps source lines those of the file.
    assert nvrtc_kernel.info.line == nvcc_kernel.info.line == 14
    # Four items per thread: the unrolled loop holds four stores either way.
    from flipflop.launch import LaunchShape

    shape = LaunchShape((128, 1, 1), (32768, 1, 1))
    for kernel in (nvrtc_kernel, nvcc_kernel):
        # `n` by its source name: the guard `i < n` is counted on sampled blocks, to 1e-5.
        work = kernel.features.work(shape, {"n": 16777216.0})
        assert work.global_store_bytes == pytest.approx(16.0, rel=1e-4)


def test_tunables_change_the_compiled_code(cuda_toolchain: Toolchain) -> None:
    one, eight = (analyze_variant(_job(cuda_toolchain, "nvrtc", 256, t)) for t in (1, 8))
    assert one.ptx_sha256 != eight.ptx_sha256
    assert one.kernels[0].features.groups != eight.kernels[0].features.groups


def test_a_variant_that_does_not_compile_says_why(cuda_toolchain: Toolchain) -> None:
    broken = SOURCE.read_text().replace("factor * in[i]", "factor * missing_name[i]")
    for backend in ("nvrtc", "nvcc"):
        result = analyze_variant(_job(cuda_toolchain, backend, 64, 1, broken))  # type: ignore[arg-type]
        assert not result.ok and not result.kernels
        assert "missing_name" in result.failure and "line 21" in result.failure


def test_the_cache_returns_what_was_analysed(tmp_path: Path, cuda_toolchain: Toolchain) -> None:
    cache = DiskCache(tmp_path / "cache")
    jobs = [_job(cuda_toolchain, "nvrtc", b, 2) for b in (64, 64, 128)]
    seen: list[tuple[int, int]] = []
    first = analyze_variants(jobs, cache, PoolOptions(in_process=True),
                             progress=lambda done, total: seen.append((done, total)))
    # The two identical jobs are one variant.
    assert seen[-1] == (2, 2) and not any(r.cached for r in first)
    assert first[0] == first[1]
    again = analyze_variants(jobs, cache, PoolOptions(in_process=True))
    assert all(r.cached for r in again)
    assert [r.kernels for r in again] == [r.kernels for r in first]


def test_a_corrupt_entry_is_a_miss(tmp_path: Path, cuda_toolchain: Toolchain) -> None:
    cache = DiskCache(tmp_path / "cache")
    job = _job(cuda_toolchain, "nvrtc", 32, 1)
    analyze_variant(job, cache)
    for entry in (tmp_path / "cache").iterdir():
        entry.write_bytes(b"not a pickle")
    again = analyze_variant(job, cache)
    assert again.ok and not again.cached


def test_a_new_analysis_reuses_the_compilers_output(tmp_path: Path,
                                                   cuda_toolchain: Toolchain) -> None:
    """What the analysis stored goes stale with FlipFlop's code; the compiler's output does not,
    so re-analysing (here: with the analysis entries gone) compiles nothing again."""
    folder = tmp_path / "cache"
    cache = DiskCache(folder)
    job = _job(cuda_toolchain, "nvrtc", 128, 4)
    first = analyze_variant(job, cache)
    assert first.ok and (folder / f"{job.compile_key()}.pickle").is_file()
    assert job.compile_key() != job.key()
    for entry in folder.iterdir():
        if entry.name != f"{job.compile_key()}.pickle":
            entry.unlink()
    again = analyze_variant(job, cache)
    assert again.ok and not again.cached
    assert again.compile_s == first.compile_s  # the stored compile, not a new one
    assert [k.features for k in again.kernels] == [k.features for k in first.kernels]


def test_the_cache_stays_under_its_bound(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache", max_bytes=10_000)
    for index in range(40):
        cache.put(cache_key(str(index)), b"x" * 1000)
    total = sum(p.stat().st_size for p in (tmp_path / "cache").iterdir())
    assert total <= 10_000
    assert cache.get(cache_key("39")) == b"x" * 1000  # the newest entries stay
    assert cache.get(cache_key("0")) is None


def test_an_included_header_is_part_of_the_key(tmp_path: Path, cuda_toolchain: Toolchain) -> None:
    header = tmp_path / "scale.h"
    header.write_text("#define FACTOR 2.0f\n")
    source = tmp_path / "kernel.cu"
    source.write_text('#include "scale.h"\nextern "C" __global__ void tiled_scale(float* o)'
                      " { o[threadIdx.x] *= FACTOR; }\n")
    assert included_files(source, source.read_text(), ()) == [header.resolve()]
    before = _job(cuda_toolchain, "nvrtc", 32, 1, path=source).key()
    header.write_text("#define FACTOR 3.0f\n")
    assert _job(cuda_toolchain, "nvrtc", 32, 1, path=source).key() != before


def test_worker_processes_give_the_same_results(tmp_path: Path,
                                                cuda_toolchain: Toolchain) -> None:
    jobs = [_job(cuda_toolchain, "nvrtc", b, 1) for b in (32, 96)]
    here = analyze_variants(jobs, None, PoolOptions(in_process=True))
    there = analyze_variants(jobs, None, PoolOptions(workers=2))
    assert [r.kernels for r in here] == [r.kernels for r in there]


def test_a_cancelled_search_stops(cuda_toolchain: Toolchain) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ToolCancelled):
        analyze_variants([_job(cuda_toolchain, "nvrtc", 32, 1)], None, PoolOptions(workers=1),
                         cancel=cancel)


# Ten thousand inlined sinf steps: NVVM and ptxas take minutes on any machine (a #pragma unroll
# loop is not enough: NVVM declines to unroll a body that large and compiles it in a second).
SLOW = """#define TEN_TIMES(s) s s s s s s s s s s
extern "C" __global__ void slow(float* x)
{
    float v = x[threadIdx.x];
    TEN_TIMES(TEN_TIMES(TEN_TIMES(TEN_TIMES(v = v * 1.0001f + sinf(v);))))
    x[threadIdx.x] = v;
}
"""


def test_a_variant_that_compiles_too_long_fails_alone(tmp_path: Path,
                                                      cuda_toolchain: Toolchain) -> None:
    # NVRTC runs inside the worker, so a compile that outlasts the timeout is stopped by
    # replacing the worker.
    slow_source = tmp_path / "slow.cu"
    slow_source.write_text(SLOW)
    slow = VariantJob(slow_source, SLOW, "sm_80", CompileOptions(), cuda_toolchain, "nvrtc",
                      "slow")
    quick = _job(cuda_toolchain, "nvrtc", 64, 1)
    first, second = analyze_variants([slow, quick], None,
                                     PoolOptions(workers=1, timeout_s=15.0))
    assert not first.ok and "took longer than 15 s" in first.failure
    assert second.ok and second.kernels
