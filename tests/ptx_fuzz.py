"""Seeded mutations of real PTX, each run through `flipflop ptx` in-process.

Every input must end in IR (exit 0) or in an error at a line and column of the input
(`FILE:LINE:COL: error: ...`, exit 1), or be refused before parsing for not being text; never an
exception, never slow (`SLOW_S`; the tests only catch a hang, `HANG_S`). With `compare_paths`,
an input that parses must also parse to the same IR when every statement goes through the
grammar.

Used by `scripts/fuzz_ptx.py` (any number of inputs) and by tests/test_ptx_fuzz.py (a slice).
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from flipflop import cli
from flipflop.ptx import PtxSyntaxError, parse_ptx

# What `scripts/fuzz_ptx.py` reports as slow (on an idle machine every input parses in well under
# a second; its benchmark is benchmarks/ptx_parse.py).
SLOW_S = 2.0
# In the test suite, which shares the machine with other work, only a hang fails an input.
HANG_S = 60.0
# Refusals of `flipflop ptx` before it parses anything (position 0:0).
_REFUSALS = ("not UTF-8 text", "binary data, not PTX text", "empty file")

# Tokens that damage an operand list or a declaration in ways people and tools get wrong.
_TOKENS = (
    "%r1", "%rd2", "%p1", "_", "|", "||", "!", "@", "[", "]", "{", "}", "(", ")", ",", ";", ":",
    "::", "+", "-", "<", ">", "<4>", "0x", "0xFFFFFFFFU", "0f3F800000", "0d3FF0000000000000",
    "1.5e3", "08", "-0", "r0|p", "_|p", "%clock", "%tid.w", "$L__BB0_1", "lo", ".reg", ".b32",
    ".pred", "//", "/*", "*/", '"', "\\", "\t", " ", "9" * 5000, "0x" + "f" * 5000,
    ".loc 1 2 3", ".file 1 \"x.cu\"", "{ .reg .b32 t; mov.b32 t, 1; }",
)
_CHARACTERS = "{}[]()<>;:,|!@%$_.-+=*/\"\\ \t\n\r\0xX0123456789abcfrdpé\u2028"


@dataclass(frozen=True)
class Verdict:
    outcome: str  # "ir", "syntax error", "refused"; anything else is a failure
    seconds: float
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome not in ("ir", "syntax error", "refused")


@dataclass
class Summary:
    count: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    mutations: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[int, str, tuple[str, ...], Verdict, str]] = field(default_factory=list)
    slowest_s: float = 0.0


# --------------------------------------------------------------------------- mutations

Mutation = Callable[[list[str], random.Random, Sequence[str]], list[str]]


def _delete_lines(lines: list[str], rng: random.Random, donors: Sequence[str]) -> list[str]:
    start = rng.randrange(len(lines))
    return lines[:start] + lines[start + rng.randint(1, 3) :]


def _duplicate_line(lines: list[str], rng: random.Random, donors: Sequence[str]) -> list[str]:
    index = rng.randrange(len(lines))
    return lines[: index + 1] + lines[index:]


def _swap_lines(lines: list[str], rng: random.Random, donors: Sequence[str]) -> list[str]:
    first = rng.randrange(len(lines))
    second = min(len(lines) - 1, max(0, first + rng.randint(-20, 20)))
    if rng.random() < 0.3:
        second = rng.randrange(len(lines))
    swapped = list(lines)
    swapped[first], swapped[second] = swapped[second], swapped[first]
    return swapped


def _move_line(lines: list[str], rng: random.Random, donors: Sequence[str]) -> list[str]:
    moved = list(lines)
    line = moved.pop(rng.randrange(len(moved)))
    moved.insert(rng.randrange(len(moved) + 1), line)
    return moved


def _flip_characters(lines: list[str], rng: random.Random, donors: Sequence[str]) -> list[str]:
    text = "\n".join(lines)
    characters = list(text)
    for _ in range(rng.randint(1, 4)):
        if not characters:
            break
        characters[rng.randrange(len(characters))] = rng.choice(_CHARACTERS)
    return "".join(characters).split("\n")


def _truncate(lines: list[str], rng: random.Random, donors: Sequence[str]) -> list[str]:
    text = "\n".join(lines)
    return text[: rng.randrange(len(text) + 1)].split("\n")


def _damage_braces(lines: list[str], rng: random.Random, donors: Sequence[str]) -> list[str]:
    damaged = list(lines)
    index = rng.randrange(len(damaged))
    line = damaged[index]
    braces = [position for position, char in enumerate(line) if char in "{}"]
    if braces and rng.random() < 0.5:
        position = rng.choice(braces)
        damaged[index] = line[:position] + line[position + 1 :]
    elif rng.random() < 0.5:
        damaged[index] = line + rng.choice((" }", "}", " {", "{ .reg .b32 x;"))
    else:
        damaged.insert(index, rng.choice(("{", "}", "\t{", "\t}", "{ {", "} }")))
    return damaged


def _damage_operands(lines: list[str], rng: random.Random, donors: Sequence[str]) -> list[str]:
    damaged = list(lines)
    candidates = [i for i, line in enumerate(damaged) if "," in line or ";" in line]
    if not candidates:
        return _flip_characters(damaged, rng, donors)
    index = rng.choice(candidates)
    line = damaged[index]
    pieces = re.split(r"(,|;|\s+)", line)
    position = rng.randrange(len(pieces))
    choice = rng.random()
    if choice < 0.35:
        pieces[position] = rng.choice(_TOKENS)
    elif choice < 0.6:
        pieces.insert(position, rng.choice(_TOKENS))
    elif choice < 0.8:
        del pieces[position]
    else:
        pieces[position] = re.sub(r"%([A-Za-z_])", r"\1", pieces[position])  # a bare name
    damaged[index] = "".join(pieces)
    return damaged


def _splice(lines: list[str], rng: random.Random, donors: Sequence[str]) -> list[str]:
    donor = rng.choice(donors).split("\n")
    start = rng.randrange(len(donor))
    chunk = donor[start : start + rng.randint(1, 12)]
    at = rng.randrange(len(lines) + 1)
    return lines[:at] + chunk + lines[at:]


MUTATIONS: dict[str, Mutation] = {
    "delete lines": _delete_lines,
    "duplicate line": _duplicate_line,
    "swap lines": _swap_lines,
    "move line": _move_line,
    "flip characters": _flip_characters,
    "truncate": _truncate,
    "damage braces": _damage_braces,
    "damage operands": _damage_operands,
    "splice": _splice,
}


def mutate(text: str, rng: random.Random, donors: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """`text` after one to five random mutations, and their names."""
    lines = text.split("\n")
    applied: list[str] = []
    while True:
        name = rng.choice(list(MUTATIONS))
        lines = MUTATIONS[name](lines or [""], rng, donors)
        applied.append(name)
        if len(applied) == 5 or rng.random() < 0.6:
            return "\n".join(lines), tuple(applied)


# --------------------------------------------------------------------------- checking

_POSITIONED = re.compile(r"^(?P<file>.*):(?P<line>\d+):(?P<column>\d+): error: (?P<message>.*)$")


def check(text: str, path: Path, compare_paths: bool = False, slow_s: float = SLOW_S) -> Verdict:
    """Run `flipflop ptx PATH --format json` in-process on `text` and judge the outcome."""
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    stdout, stderr = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = cli.main(["ptx", str(path), "--format", "json"])
    except (Exception, SystemExit):  # any exception at all is what the fuzzer looks for
        return Verdict("crash", time.perf_counter() - start, traceback.format_exc())
    seconds = time.perf_counter() - start
    verdict = _judge(code, stderr.getvalue(), text, path, seconds)
    if not verdict.failed and seconds > slow_s:
        return Verdict("slow", seconds, f"{seconds:.2f} s; was {verdict.outcome}")
    if compare_paths and verdict.outcome == "ir":
        return _compare_paths(text, seconds)
    return verdict


def _judge(code: int, errors: str, text: str, path: Path, seconds: float) -> Verdict:
    if code == 0:
        return Verdict("ir", seconds)
    first = errors.split("\n", 1)[0]
    match = _POSITIONED.match(first)
    if code != 1 or match is None or match["file"] != str(path):
        return Verdict("bad exit", seconds, f"exit {code}: {errors[:2000]}")
    line, column = int(match["line"]), int(match["column"])
    if (line, column) == (0, 0):
        if match["message"].startswith(_REFUSALS):
            return Verdict("refused", seconds)
        return Verdict("no position", seconds, first)
    lines = text.replace("\r\n", "\n").split("\n")
    if not 1 <= line <= len(lines) or not 1 <= column <= len(lines[line - 1]) + 1:
        return Verdict("bad position", seconds, first)
    return Verdict("syntax error", seconds)


def _compare_paths(text: str, seconds: float) -> Verdict:
    outcomes: list[str] = []
    for fast in (True, False):
        try:
            outcomes.append(repr(parse_ptx(text, fast=fast)))
        except PtxSyntaxError as error:
            outcomes.append(f"error {error.line}:{error.column}: {error.message}")
        except Exception:  # reported as a failure
            return Verdict("crash", seconds, traceback.format_exc())
    if outcomes[0] != outcomes[1]:
        return Verdict("paths disagree", seconds, _first_difference(*outcomes))
    return Verdict("ir", seconds)


def _first_difference(fast: str, grammar: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(fast, grammar, strict=False)) if a != b), 0)
    start = max(at - 200, 0)
    return f"fast: ...{fast[start : at + 200]}\ngrammar: ...{grammar[start : at + 200]}"


def fuzz(
    seeds: Sequence[tuple[str, str]],
    count: int,
    seed: int,
    workdir: Path,
    compare_paths: bool = False,
    progress: Callable[[Summary], None] | None = None,
    slow_s: float = SLOW_S,
) -> Summary:
    """`count` mutated inputs from `seeds` ((name, PTX text) pairs), reproducible from `seed`."""
    rng = random.Random(seed)
    texts = [text for _, text in seeds]
    summary = Summary()
    path = workdir / "fuzzed.ptx"
    check(texts[0], path)  # the grammar is built on first use: not a slow input
    for index in range(count):
        name, text = seeds[rng.randrange(len(seeds))]
        mutated, applied = mutate(text, rng, texts)
        verdict = check(mutated, path, compare_paths, slow_s)
        summary.count += 1
        summary.outcomes[verdict.outcome] += 1
        summary.mutations.update(applied)
        summary.slowest_s = max(summary.slowest_s, verdict.seconds)
        if verdict.failed:
            summary.failures.append((index, name, applied, verdict, mutated))
        if progress is not None and (index + 1) % 10000 == 0:
            progress(summary)
    return summary
