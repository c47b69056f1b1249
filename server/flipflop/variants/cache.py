"""A bounded on-disk cache of analysed variants, keyed by the hash of everything they depend on.

Entries live under `$FLIPFLOP_CACHE_DIR`, else `$XDG_CACHE_HOME/flipflop`, else
`~/.cache/flipflop`, one file per key. Reads refresh an entry's time; when the folder grows past
its bound (`FLIPFLOP_CACHE_MAX_MB`, default 512) the least recently used entries go until it is
back under 80% of it. A corrupt or unreadable entry is a miss, never an error: the cache can be
deleted at any time.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
_SUFFIX = ".pickle"
# Bumped when the layout of what is stored changes in a way the code hash cannot see.
_LAYOUT = "variants/1"
_COMPILED_LAYOUT = "compiled/1"


@dataclass(frozen=True)
class DiskCache:
    folder: Path
    max_bytes: int = DEFAULT_MAX_BYTES

    def get(self, key: str) -> Any | None:
        path = self._path(key)
        try:
            with path.open("rb") as stream:
                value = pickle.load(stream)
            os.utime(path)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError,
                TypeError, ValueError):
            return None
        return value

    def put(self, key: str, value: Any) -> None:
        """Store atomically (write then rename), then keep the folder under its bound."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(handle, "wb") as stream:
                pickle.dump(value, stream, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self._path(key))
        except OSError:
            return
        self.trim()

    def trim(self) -> None:
        entries: list[tuple[float, int, Path]] = []
        total = 0
        try:
            for entry in os.scandir(self.folder):
                if entry.name.endswith(_SUFFIX):
                    stat = entry.stat()
                    entries.append((stat.st_mtime, stat.st_size, Path(entry.path)))
                    total += stat.st_size
        except OSError:
            return
        if total <= self.max_bytes:
            return
        for _, size, path in sorted(entries):
            if total <= 0.8 * self.max_bytes:
                break
            try:
                path.unlink()
                total -= size
            except OSError:
                continue

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}{_SUFFIX}"


def default_cache(environ: Mapping[str, str] | None = None) -> DiskCache:
    env = os.environ if environ is None else environ
    if env.get("FLIPFLOP_CACHE_DIR"):
        folder = Path(env["FLIPFLOP_CACHE_DIR"])
    else:
        base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        folder = Path(base) / "flipflop"
    max_bytes = DEFAULT_MAX_BYTES
    try:
        if env.get("FLIPFLOP_CACHE_MAX_MB"):
            max_bytes = max(0, int(float(env["FLIPFLOP_CACHE_MAX_MB"]) * 1024 * 1024))
    except ValueError:
        pass
    return DiskCache(folder / "variants", max_bytes)


def cache_key(*parts: str | bytes) -> str:
    """sha256 over the parts and the analysis code, each part length-prefixed so that no two
    part lists collide: for what the analysis computes."""
    return _digest(_LAYOUT, code_fingerprint(), parts)


def compile_key(*parts: str | bytes) -> str:
    """As `cache_key`, over the compiling code only: a compiler's output stays valid when the
    analysis changes, so a new FlipFlop re-analyses cached PTX instead of compiling again."""
    return _digest(_COMPILED_LAYOUT, compile_fingerprint(), parts)


def _digest(layout: str, code: str, parts: Iterable[str | bytes]) -> str:
    digest = hashlib.sha256(layout.encode())
    digest.update(code.encode())
    for part in parts:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


@cache
def code_fingerprint() -> str:
    """Hash of the code that turns a source into cached features: a change invalidates them."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for folder in ("ptx", "analysis", "toolchain"):
        for path in sorted((package / folder).glob("*")):
            if path.suffix in (".py", ".lark", ".json"):  # .json: the SASS cost table
                digest.update(path.name.encode())
                digest.update(path.read_bytes())
    # Of this package, only what computes a cached analysis: not the cache or the workers.
    for name in ("ir.py", "resources.py", "launch.py", "gpu/latencies.py", "variants/analyze.py",
                 "variants/nvrtc.py"):
        digest.update((package / name).read_bytes())
    return digest.hexdigest()[:16]


@cache
def compile_fingerprint() -> str:
    """Hash of the code that runs the compilers and reads their output (flags, ptxas's report)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted((package / "toolchain").glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    for name in ("resources.py", "variants/nvrtc.py"):
        digest.update((package / name).read_bytes())
    return digest.hexdigest()[:16]


def included_files(source: Path, text: str, search: Iterable[Path], depth: int = 8) -> list[Path]:
    """The files `#include "…"` reaches from `text`, recursively: their content is in the key.

    Angle-bracket includes are the toolchain's and change only with it, which the key holds
    separately.
    """
    found: dict[Path, None] = {}
    folders = [source.parent, *search]

    def visit(body: str, here: Path, level: int) -> None:
        if level > depth:
            return
        for line in body.splitlines():
            stripped = line.strip()
            if not stripped.startswith("#"):
                continue
            rest = stripped[1:].strip()
            if not rest.startswith("include"):
                continue
            quoted = rest[len("include"):].strip()
            if not (quoted.startswith('"') and quoted.count('"') >= 2):
                continue
            name = quoted[1 : quoted.index('"', 1)]
            for folder in (here, *folders):
                candidate = (folder / name).resolve()
                if candidate.is_file():
                    if candidate not in found:
                        found[candidate] = None
                        try:
                            inner = candidate.read_text(errors="replace")
                        except OSError:
                            break
                        visit(inner, candidate.parent, level + 1)
                    break

    visit(text, source.parent, 0)
    return list(found)
