"""Reading a JSON file, plain or gzip-compressed, with bounded size and clear errors.

Gzip is recognised by its magic bytes (RFC 1952 §2.3.1: 0x1f 0x8b), not by the file name, and
decompression stops at the size limit, so a small file cannot expand into gigabytes.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import BinaryIO

from flipflop.formats.errors import FormatError

MAX_BYTES = 512 * 1024 * 1024  # read or decompressed; the largest measured cache is 16 MB
GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


def read_text(path: str | Path, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of `path`, decompressed if it is gzip."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            compressed = handle.read(2) == GZIP_MAGIC
            handle.seek(0)
            data = _read_gzip(path, handle, max_bytes) if compressed else handle.read(
                max_bytes + 1)
    except FileNotFoundError:
        raise FormatError(path, "no such file") from None
    except IsADirectoryError:
        raise FormatError(path, "is a directory, not a file") from None
    except PermissionError:
        raise FormatError(path, "permission denied") from None
    except OSError as error:
        raise FormatError(path, f"cannot read: {error.strerror or error}") from None
    if len(data) > max_bytes:
        raise FormatError(path, f"larger than {max_bytes // (1024 * 1024)} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FormatError(path, f"not UTF-8 text (byte {error.start})") from None


def _read_gzip(path: Path, handle: BinaryIO, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    try:
        with gzip.GzipFile(fileobj=handle, mode="rb") as stream:
            while total <= max_bytes:
                chunk = stream.read(_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
    except EOFError:
        raise FormatError(path, "the gzip stream is truncated") from None
    except (gzip.BadGzipFile, zlib.error) as error:
        raise FormatError(path, f"not a valid gzip file: {error}") from None
    return b"".join(chunks)


def parse_json(text: str, path: str | Path) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise FormatError(path, f"not valid JSON: {error.msg}", error.lineno, error.colno) \
            from None
    except RecursionError:
        raise FormatError(path, "JSON nests too deeply") from None
    except ValueError as error:  # e.g. an integer beyond Python's digit limit
        raise FormatError(path, f"not valid JSON: {error}") from None


def read_json(path: str | Path) -> object:
    return parse_json(read_text(path), path)


def describe_json(value: object) -> str:
    """A JSON value's kind for messages: 'an object', 'a list', 'the string "x"'."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if value is None:
        return "null"
    return f"the value {value!r}"
