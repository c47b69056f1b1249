"""The kernel corpus compiles with the real nvcc and assembles with ptxas for its architectures.

Each corpus file may declare its architectures on its first line:
`// flipflop-test: arch=sm_90a` (exactly these) or `// flipflop-test: arch=sm_80+` (that one
and every newer default). Without the line a file is built for all of DEFAULT_ARCHES.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from flipflop.toolchain import BuildResult, ToolchainError, build, find_toolchain

CORPUS = Path(__file__).parent / "corpus"
EXAMPLES = Path(__file__).parent.parent / "examples"
DEFAULT_ARCHES = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
_DIRECTIVE = re.compile(r"^//\s*flipflop-test:\s*arch=(?P<arches>[\w,+ ]+)$")


def corpus_arches(path: Path) -> tuple[str, ...]:
    """The architectures a corpus file is meant for, from its first line."""
    lines = path.read_text().splitlines()
    match = _DIRECTIVE.match(lines[0].strip()) if lines else None
    if match is None:
        return DEFAULT_ARCHES
    chosen: list[str] = []
    for item in match["arches"].replace(" ", "").split(","):
        if item.endswith("+"):
            floor = int(item[3:-1])
            chosen += [arch for arch in DEFAULT_ARCHES if int(arch[3:]) >= floor]
        else:
            chosen.append(item)
    return tuple(dict.fromkeys(chosen))


CORPUS_FILES = sorted(CORPUS.glob("*.cu"))
CASES = [
    (path, arch)
    for path in [*CORPUS_FILES, EXAMPLES / "attention.cu"]
    for arch in corpus_arches(path)
]


@pytest.fixture(scope="module")
def builds() -> dict[tuple[Path, str], BuildResult]:
    """Every (file, arch) built once, a few at a time (each nvcc run is single-threaded)."""
    try:
        toolchain = find_toolchain()
    except ToolchainError:
        pytest.fail("the CUDA toolchain is missing; run scripts/setup.sh (flipflop[nvcc])")

    def one(case: tuple[Path, str]) -> BuildResult:
        return build(case[0], arch=case[1], toolchain=toolchain)

    workers = max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(CASES, pool.map(one, CASES), strict=True))


def test_corpus_is_large_and_every_file_launches_its_kernels() -> None:
    assert len(CORPUS_FILES) >= 25
    for path in CORPUS_FILES:
        text = path.read_text()
        assert re.search(r"\w+(<[^<>]*>)?\s*<<<[^>]+>>>\s*\(", text), f"{path.name}: no launch"
        assert "__global__" in text, path.name


def test_arch_directive() -> None:
    assert corpus_arches(CORPUS / "wgmma_tma.cu") == ("sm_90a",)
    assert corpus_arches(CORPUS / "mma_sync_m16n8k16.cu") == ("sm_80", "sm_86", "sm_89", "sm_90")
    assert corpus_arches(CORPUS / "saxpy.cu") == DEFAULT_ARCHES


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "arch"), CASES, ids=[f"{path.stem}-{arch}" for path, arch in CASES]
)
def test_corpus_file_builds(
    builds: dict[tuple[Path, str], BuildResult], path: Path, arch: str
) -> None:
    result = builds[(path, arch)]
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert result.ok and not errors, errors
    assert f".target {arch}" in result.ptx
    assert result.kernels, "no kernel in the PTX"
    source_lines = path.read_text().splitlines()
    for kernel in result.kernels:
        assert kernel.resources is not None and kernel.resources.registers > 0
        assert kernel.file == str(path.absolute()) and kernel.line is not None
        definition = "\n".join(source_lines[max(kernel.line - 2, 0) : kernel.line])
        assert "__global__" in definition, (kernel.display_name, kernel.line)
