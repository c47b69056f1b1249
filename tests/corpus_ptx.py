"""PTX of the test corpus: every tests/corpus/*.cu compiled by the real nvcc for its architectures.

A corpus file may name its architectures on its first line: `// flipflop-test: arch=sm_90a`
(exactly these, comma-separated) or `// flipflop-test: arch=sm_80+` (that one and every newer
default). Without the line a file is compiled for all of DEFAULT_ARCHES.

Compiled PTX is cached in the system temp directory under a hash of the source text, the
architecture and the nvcc version, so a second test session does not compile again.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from flipflop.toolchain import ToolchainError, find_toolchain

CORPUS = Path(__file__).parent / "corpus"
DEFAULT_ARCHES = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
_ARCH_LINE = re.compile(r"^//\s*flipflop-test:\s*arch=(?P<arches>[\w,+ ]+)$")
_COMPILE_TIMEOUT_S = 300


def corpus_files() -> list[Path]:
    return sorted(CORPUS.glob("*.cu"))


def arches_of(path: Path) -> tuple[str, ...]:
    """The architectures a corpus file is meant for, from its first line."""
    first_line = path.read_text(encoding="utf-8").split("\n", 1)[0].strip()
    match = _ARCH_LINE.match(first_line)
    if match is None:
        return DEFAULT_ARCHES
    arches: list[str] = []
    for item in match["arches"].replace(" ", "").split(","):
        if item.endswith("+"):
            floor = int(item[3:-1])
            arches += [arch for arch in DEFAULT_ARCHES if int(arch[3:]) >= floor]
        elif item:
            arches.append(item)
    return tuple(dict.fromkeys(arches))


def corpus_cases() -> list[tuple[Path, str]]:
    return [(path, arch) for path in corpus_files() for arch in arches_of(path)]


@dataclass(frozen=True)
class CorpusCompiler:
    """Compiles corpus files to PTX with `-ptx -lineinfo`, caching by content."""

    nvcc: Path
    nvcc_version: str
    cache: Path

    def ptx(self, source: Path, arch: str) -> str:
        return self.ptx_path(source, arch).read_text(encoding="utf-8")

    def ptx_path(self, source: Path, arch: str) -> Path:
        key = hashlib.sha256(
            f"{self.nvcc_version}\0{arch}\0".encode() + source.read_bytes()
        ).hexdigest()[:24]
        target = self.cache / f"{source.stem}.{arch}.{key}.ptx"
        if target.exists():
            return target
        partial = target.with_suffix(".partial")
        completed = subprocess.run(
            [str(self.nvcc), "-ptx", "-lineinfo", f"-arch={arch}", str(source), "-o", str(partial)],
            capture_output=True,
            text=True,
            timeout=_COMPILE_TIMEOUT_S,
        )
        if completed.returncode != 0:
            raise AssertionError(f"nvcc failed on {source.name} for {arch}:\n{completed.stderr}")
        partial.replace(target)
        return target

    def compile_all(self, cases: list[tuple[Path, str]]) -> None:
        """Compile the cases two at a time (the machines running tests are small)."""
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda case: self.ptx_path(*case), cases))


@pytest.fixture(scope="session")
def corpus_compiler() -> CorpusCompiler:
    try:
        toolchain = find_toolchain()
    except ToolchainError:
        pytest.fail("the CUDA toolchain is missing; run scripts/setup.sh (flipflop[nvcc])")
    cache = Path(tempfile.gettempdir()) / "flipflop-corpus-ptx"
    cache.mkdir(parents=True, exist_ok=True)
    compiler = CorpusCompiler(toolchain.nvcc, toolchain.version, cache)
    compiler.compile_all(corpus_cases())
    return compiler
