"""The flags of one file from a `compile_commands.json` compilation database."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from flipflop.toolchain.flags import BuildFlags, select_flags


class CompileCommandsError(ValueError):
    """The database cannot be read, or has no usable entry for the file."""


def flags_from_compile_commands(database: Path, source: Path) -> BuildFlags | None:
    """The kept flags of `source`'s entry in `database`, or None when it has no entry."""
    try:
        entries = json.loads(database.read_text(encoding="utf-8"))
    except OSError as error:
        raise CompileCommandsError(f"{database}: cannot read: {error.strerror}") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CompileCommandsError(f"{database}: not valid JSON: {error}") from error
    if not isinstance(entries, list):
        raise CompileCommandsError(f"{database}: expected a JSON list of compile commands")
    wanted = _canonical(source, Path.cwd())
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise CompileCommandsError(f"{database}: entry {position} is not an object")
        directory = Path(str(entry.get("directory", database.parent)))
        if not directory.is_absolute():
            directory = database.parent / directory
        file_value = entry.get("file")
        if not isinstance(file_value, str) or _canonical(Path(file_value), directory) != wanted:
            continue
        arguments = _arguments(entry, database, position)
        # The first argument is the compiler itself, and the source file is ours to pass.
        kept = [a for a in arguments[1:] if _canonical(Path(a), directory) != wanted]
        return select_flags(kept, directory)
    return None


def _arguments(entry: dict[str, object], database: Path, position: int) -> list[str]:
    arguments = entry.get("arguments")
    if isinstance(arguments, list) and all(isinstance(a, str) for a in arguments):
        return [str(a) for a in arguments]
    command = entry.get("command")
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError as error:
            raise CompileCommandsError(
                f"{database}: entry {position} has an unreadable command: {error}"
            ) from error
    raise CompileCommandsError(f"{database}: entry {position} has neither arguments nor command")


def _canonical(path: Path, directory: Path) -> Path:
    full = path if path.is_absolute() else directory / path
    try:
        return full.resolve()
    except OSError:
        return full.absolute()
