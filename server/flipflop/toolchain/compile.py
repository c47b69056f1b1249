"""CUDA source (a saved file or an unsaved editor buffer) -> PTX with line information.

nvcc hands some paths to an internal shell, so a path with `$`, quotes or `;` breaks it. We
therefore never give nvcc a user path: the source is copied into a private temporary directory
under a plain name and every user directory is reached through a plainly named symbolic link
there. Messages and the PTX `.file` table are mapped back to the real paths afterwards.
"""

from __future__ import annotations

import re
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from flipflop.toolchain.arches import normalize_arch
from flipflop.toolchain.compile_commands import flags_from_compile_commands
from flipflop.toolchain.diagnostics import (
    ToolDiagnostic,
    ensure_failure_reported,
    parse_tool_output,
)
from flipflop.toolchain.discovery import Toolchain, python_roots, toolkit_include_dirs
from flipflop.toolchain.errors import ToolchainError
from flipflop.toolchain.flags import BuildFlags, select_flags
from flipflop.toolchain.headers import (
    HeaderSearch,
    explain_missing_headers,
    library_wheel_include_dirs,
    missing_header,
)
from flipflop.toolchain.process import run_tool

DEFAULT_TIMEOUT_S = 60.0
# Characters nvcc passes through its internal shell unharmed.
_PLAIN_PATH = re.compile(r"^[A-Za-z0-9_./+-]+$")
_FILE_DIRECTIVE = re.compile(r'^(\s*\.file\s+\d+\s+)"((?:[^"\\]|\\.)*)"(.*)$', re.MULTILINE)


@dataclass(frozen=True)
class CompileOptions:
    """User flags for one compilation (settings, CLI options, compile_commands.json)."""

    include_dirs: tuple[Path, ...] = ()
    defines: tuple[str, ...] = ()  # "NAME" or "NAME=VALUE"
    std: str | None = None  # e.g. "c++17"
    extra_args: tuple[str, ...] = ()  # filtered like a compile_commands entry
    compile_commands: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    # Where installed CUDA library wheels (nvidia-cublas, ...) are looked for; None: the import
    # path of FlipFlop's own Python.
    library_roots: tuple[Path, ...] | None = None


DEFAULT_OPTIONS = CompileOptions()


@dataclass(frozen=True)
class CompileResult:
    """What nvcc made of one source: PTX (empty on failure) and its messages."""

    source_path: Path
    arch: str
    ptx: str
    diagnostics: tuple[ToolDiagnostic, ...]
    command: tuple[str, ...]  # as run; user paths appear as their temporary aliases
    elapsed_s: float
    returncode: int

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and bool(self.ptx)

    @property
    def errors(self) -> tuple[ToolDiagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")


@dataclass(frozen=True)
class _Alias:
    alias: str
    real: str


def effective_flags(source_path: Path, options: CompileOptions) -> BuildFlags:
    """compile_commands.json entry first, then the explicit options on top of it."""
    from_database = BuildFlags()
    if options.compile_commands is not None:
        from_database = flags_from_compile_commands(options.compile_commands, source_path) or (
            BuildFlags()
        )
    from_extra = select_flags(options.extra_args, source_path.parent)
    return BuildFlags(
        include_dirs=(*options.include_dirs, *from_extra.include_dirs, *from_database.include_dirs),
        defines=(*from_database.defines, *from_extra.defines, *options.defines),
        undefines=(*from_database.undefines, *from_extra.undefines),
        std=options.std or from_extra.std or from_database.std,
        arch=from_extra.arch or from_database.arch,
        forced_includes=(*from_database.forced_includes, *from_extra.forced_includes),
        switches=tuple(dict.fromkeys((*from_database.switches, *from_extra.switches))),
    )


def compile_to_ptx(
    source_path: Path,
    text: str | None,
    toolchain: Toolchain,
    arch: str,
    options: CompileOptions = DEFAULT_OPTIONS,
    cancel: threading.Event | None = None,
) -> CompileResult:
    """Compile `text` (or the saved file when None) as if it were `source_path`.

    Raises `ToolchainError` when nvcc cannot run or times out; compile errors are returned as
    diagnostics.
    """
    source_path = source_path.absolute()
    target = normalize_arch(arch)
    if text is None:
        text = read_source(source_path)
    flags = effective_flags(source_path, options)
    with tempfile.TemporaryDirectory(prefix="flipflop-") as scratch_name:
        scratch = Path(scratch_name)
        aliases: list[_Alias] = []
        name = source_path.name if _PLAIN_PATH.match(source_path.name) else "source.cu"
        copy = scratch / name
        copy.write_text(text, encoding="utf-8", errors="surrogateescape")
        aliases.append(_Alias(str(copy), str(source_path)))
        # The real directory comes first so that `#include "x.h"` finds its neighbours.
        search_dirs = [source_path.parent, *flags.include_dirs]
        include_args = [f"-I{_reachable(d, scratch, aliases)}" for d in search_dirs]
        forced = [f"--pre-include={_reachable(p, scratch, aliases)}" for p in flags.forced_includes]
        # Library wheels come after every other folder (`-idirafter`): they only supply what the
        # toolkit and the user's paths lack, never replace a header of theirs.
        libraries = _library_dirs(toolchain, options)
        library_args = [
            arg
            for directory in libraries
            for arg in ("-Xcompiler", f"-idirafter,{_reachable(directory, scratch, aliases)}")
        ]
        output = scratch / "out.ptx"
        command = [
            str(toolchain.nvcc), "-ptx", "-lineinfo", f"-arch={target}",
            *([f"-std={flags.std}"] if flags.std else []),
            *(f"-D{define}" for define in flags.defines),
            *(f"-U{name}" for name in flags.undefines),
            *include_args, *forced, *library_args, *flags.switches,
            "-x", "cu", str(copy), "-o", str(output),
        ]  # fmt: skip
        run = run_tool(command, options.timeout_s, cwd=scratch, cancel=cancel)
        output_text = run.stderr + "\n" + run.stdout
        diagnostics = ensure_failure_reported(
            parse_tool_output(output_text, _PathMapper(tuple(aliases))),
            "nvcc",
            run.returncode,
            output_text,
        )
        if any(missing_header(d) is not None for d in diagnostics):
            search = HeaderSearch(
                source_dir=source_path.parent,
                include_dirs=flags.include_dirs,
                toolkit_dirs=toolkit_include_dirs(toolchain),
                library_dirs=libraries,
                cuda_version=toolchain.version,
            )
            diagnostics = explain_missing_headers(diagnostics, search)
        ptx = ""
        if run.returncode == 0 and output.exists():
            ptx = _map_file_table(output.read_text(encoding="utf-8", errors="replace"), aliases)
    return CompileResult(
        source_path=source_path,
        arch=target,
        ptx=ptx,
        diagnostics=diagnostics,
        command=tuple(command),
        elapsed_s=run.elapsed_s,
        returncode=run.returncode,
    )


def _library_dirs(toolchain: Toolchain, options: CompileOptions) -> tuple[Path, ...]:
    roots = python_roots() if options.library_roots is None else options.library_roots
    own_include = toolchain.nvcc.resolve().parent.parent / "include"
    return library_wheel_include_dirs(roots, toolchain.version, own_include)


def read_source(path: Path) -> str:
    """The saved text of `path`; `FileNotFoundError` with a readable message when it cannot."""
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as error:
        raise FileNotFoundError(f"{path}: cannot read: {error.strerror}") from error


def _reachable(path: Path, scratch: Path, aliases: list[_Alias]) -> str:
    """`path` itself when nvcc copes with its name, otherwise a plain symlink to it."""
    real = str(path.absolute())
    if _PLAIN_PATH.match(real):
        return real
    for known in aliases:
        if known.real == real and known.alias != real:
            return known.alias
    link = scratch / f"path{len(aliases)}{path.suffix if path.is_file() else ''}"
    try:
        link.symlink_to(real, target_is_directory=path.is_dir())
    except OSError as error:
        raise ToolchainError(f"cannot create a link to {real}: {error.strerror}") from error
    aliases.append(_Alias(str(link), real))
    return str(link)


@dataclass(frozen=True)
class _PathMapper:
    aliases: tuple[_Alias, ...]

    def __call__(self, path: str) -> str:
        for known in self.aliases:
            if path == known.alias:
                return known.real
            if path.startswith(known.alias + "/"):
                return known.real + path[len(known.alias) :]
        return path


def _map_file_table(ptx: str, aliases: Sequence[_Alias]) -> str:
    mapper = _PathMapper(tuple(aliases))

    def replace(match: re.Match[str]) -> str:
        path = mapper(match.group(2).replace('\\"', '"').replace("\\\\", "\\"))
        escaped = path.replace("\\", "\\\\").replace('"', '\\"')
        return f'{match.group(1)}"{escaped}"{match.group(3)}'

    return _FILE_DIRECTIVE.sub(replace, ptx)
