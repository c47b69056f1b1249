"""`// flipflop:` annotations: what static analysis cannot know, written next to the code.

Syntax: a line comment starting with `flipflop:` followed by `key=value` pairs separated by
spaces (or commas between pairs)::

    // flipflop: threads=1048576
    // flipflop: grid=64,8 n_steps=128
    kernel<<<grid, block>>>(...);

An annotation applies to the next kernel definition or launch after it; written at the end of a
line that holds a launch or a kernel's signature, it applies to that one. Consecutive annotation
lines add up (a later key overrides an earlier one).

Keys:
- `grid=X[,Y[,Z]]` (or `XxY`): the grid is fixed at this size whatever the block.
- `threads=X[,Y[,Z]]`: total threads to cover; the grid is ceil(threads / block) per axis.
- `block=X[,Y[,Z]]`: the block the launch uses, when the source does not show it.
- `smem=BYTES` (also `dynamic_smem`): dynamic shared memory per block.
- any other `name=INTEGER`: the value of a kernel parameter or a loop trip count
  (`n=1048576`, `n_steps=128`), or of a host variable the launch's grid, block or shared
  memory needs (`B=8 NH=12` above `<<<dim3(B, NH), 256>>>`).

What a kernel's code needs of its block, where the code does not show it (on the kernel; see
`flipflop.constraints`): `block=16x16` (exactly this shape), `block_x=pow2` (a power of two),
`block_x=32`, `block_x%32==0` (a multiple), `block_threads%32==0` (the thread count), and
`block=any` (block-generic: what FlipFlop inferred gives way, what the code proves stays).
Integers may use `_` or `'` separators, hex (`0x100`), `K`/`M`/`G` suffixes (powers of 1024) or
a power `2^20`.

A search space of compile-time tunables (Kernel Tuner's semantics, see `flipflop.space`)::

    // flipflop: tune block_size_x=16..256:16 tile_size_x=1,2,4
    // flipflop: problem=4096,4096 grid_div_x=block_size_x,tile_size_x
    // flipflop: restrict="block_size_x*block_size_y<=1024"

`tune` starts a list of `NAME=V1,V2,…` or `NAME=A..B:STEP` specs; `problem=`, `grid_div_x=`
(`_y`, `_z`), `block_size_names=` and `restrict=` (repeatable) give the launch semantics. A value
with spaces is written in double quotes. `define` starts a list of `NAME=EXPR`: preprocessor
values computed from the tunables (Kernel Tuner's `defines`)::

    // flipflop: define N_PER_WARP=N_PER_BLOCK//block_size_y "M_PER_WARP = M_PER_BLOCK // 2"
"""

from __future__ import annotations

import re
from dataclasses import replace

from flipflop.launch import Dim3
from flipflop.source.model import Annotation, Range

MARKER = re.compile(r"//\s*flipflop:(?P<body>.*)$")
_SUFFIXES = {"k": 1024, "m": 1024**2, "g": 1024**3}
_DIM_KEYS = {"grid", "block", "threads"}
_SMEM_KEYS = {"smem", "dynamic_smem", "dynamic_smem_bytes", "shared"}
_GRID_DIV_KEYS = {"grid_div_x": 0, "grid_div_y": 1, "grid_div_z": 2}
_SPACE_KEYS = {"problem", "problem_size", "block_size_names", "restrict", "restriction",
               *_GRID_DIV_KEYS}
# Keys that mean something of their own: a variable of one of these names cannot be given by
# name (give the launch's `grid=`, `block=` or `smem=` instead).
RESERVED_KEYS = frozenset({*_DIM_KEYS, *_SMEM_KEYS, *_SPACE_KEYS, "tune"})


def parse_integer(text: str) -> int | None:
    text = text.strip().replace("_", "").replace("'", "")
    if not text:
        return None
    power = re.fullmatch(r"(\d+)\^(\d+)", text)
    if power is not None:
        return int(pow(int(power.group(1)), int(power.group(2))))
    multiplier = _SUFFIXES.get(text[-1].lower(), 1)
    if multiplier != 1:
        text = text[:-1]
    try:
        value = int(text, 0)
    except ValueError:
        return None
    return int(value) * multiplier


def parse_dim3(text: str) -> Dim3 | None:
    parts = [p for p in re.split(r"[,xX×]", text) if p]
    if not 1 <= len(parts) <= 3:
        return None
    values = [parse_integer(p) for p in parts]
    if any(v is None or v <= 0 for v in values):
        return None
    numbers = [int(v or 0) for v in values] + [1] * (3 - len(values))
    return (numbers[0], numbers[1], numbers[2])


def parse_annotation(comment: str, range_: Range) -> Annotation | None:
    """Read one comment; None when it is not a flipflop annotation."""
    match = MARKER.search(comment)
    if match is None:
        return None
    body = match.group("body").strip().removesuffix("*/").strip()
    errors: list[str] = []
    tokens = _tokens(body, errors)
    listed = tokens[0] if tokens and tokens[0] in ("tune", "define") else None
    pairs: list[tuple[str, str]] = []
    for token in tokens[1:] if listed else tokens:
        rule = _block_rule(token)
        if rule is not None and not listed:
            pairs.append(("block_rule", rule))
            continue
        key, sep, value = token.partition("=")
        if not sep or _KEY.fullmatch(key.strip()) is None or not value:
            errors.append(f"not a key=value pair: {token!r}")
        elif listed:
            pairs.append((listed, token))
        else:
            pairs.append((key, value.rstrip(",") if key not in _SPACE_KEYS else value))
    return _build(tuple(pairs), range_, errors)


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_BLOCK_RULE = re.compile(
    r"block(?:_(?P<axis>x|y|z|threads))?(?:%(?P<multiple>\d+)==0|=(?P<value>pow2|any|\d+))")


def _block_rule(token: str) -> str | None:
    """`block_x=pow2` -> "x=pow2", `block_threads%32==0` -> "threads%32", `block=any`."""
    match = _BLOCK_RULE.fullmatch(token.rstrip(","))
    if match is None:
        return None
    axis, multiple, value = match.group("axis"), match.group("multiple"), match.group("value")
    if axis is None and value is not None and value != "any":
        return None  # `block=256` is the launch's block
    axis = axis or ("x" if value == "any" else "threads")
    if multiple is not None:
        return f"{axis}%{multiple}"
    return f"{axis}={value}"


def _tokens(body: str, errors: list[str]) -> list[str]:
    """Whitespace-separated tokens; double quotes keep spaces; `key = value` is one token."""
    raw: list[str] = []
    current: list[str] = []
    quoted = False
    started = False
    for char in body:
        if char == '"':
            quoted = not quoted
            started = True
        elif char.isspace() and not quoted:
            if started:
                raw.append("".join(current))
            current, started = [], False
        else:
            current.append(char)
            started = True
    if quoted:
        errors.append("a double quote is not closed")
    if started:
        raw.append("".join(current))
    merged: list[str] = []
    for token in raw:
        if merged and (token.startswith("=") or (merged[-1].endswith("=") and
                                                 merged[-1].count("=") == 1)):
            merged[-1] += token
        else:
            merged.append(token)
    return merged


def merge(first: Annotation, second: Annotation) -> Annotation:
    """Two consecutive annotation lines as one; keys in the second win."""
    merged = Range(first.range.start, second.range.end, first.range.start_byte,
                   second.range.end_byte)
    combined = _build(first.values + second.values, merged, [])
    return replace(combined, errors=first.errors + second.errors)


def _build(pairs: tuple[tuple[str, str], ...], range_: Range, errors: list[str]) -> Annotation:
    dims: dict[str, Dim3] = {}
    smem: int | None = None
    params: dict[str, int] = {}
    tune: dict[str, str] = {}
    space: dict[str, str] = {}
    grid_div: list[str | None] = [None, None, None]
    restrictions: list[str] = []
    rules: dict[str, str] = {}
    defines: dict[str, str] = {}
    for key, value in pairs:
        lowered = key.lower()
        if lowered == "block_rule":
            axis, _, rule = value.partition("%") if "%" in value else value.partition("=")
            rule = f"%{rule}" if "%" in value else rule
            if rule.startswith("%") and int(rule[1:]) < 1:
                errors.append(f"block_{axis}%{rule[1:]}==0: expected a positive multiple")
            elif rule.isdigit() and int(rule) < 1:
                errors.append(f"block_{axis}={rule}: expected a positive extent")
            else:
                rules[axis if rule != "any" else "any"] = rule
        elif lowered == "tune":
            tune[value.partition("=")[0]] = value
        elif lowered == "define":
            defines[value.partition("=")[0].strip()] = value
        elif lowered in _GRID_DIV_KEYS:
            grid_div[_GRID_DIV_KEYS[lowered]] = value
        elif lowered in ("restrict", "restriction"):
            restrictions.append(value)
        elif lowered in ("problem", "problem_size", "block_size_names"):
            space[lowered.removesuffix("_size")] = value
        elif lowered in _DIM_KEYS:
            shape = parse_dim3(value)
            if shape is None:
                errors.append(f"{key}={value}: expected up to three positive integers")
            else:
                dims[lowered] = shape
        elif lowered in _SMEM_KEYS:
            smem = parse_integer(value)
            if smem is None or smem < 0:
                errors.append(f"{key}={value}: expected a byte count")
                smem = None
        else:
            number = parse_integer(value)
            if number is None:
                errors.append(f"{key}={value}: expected an integer")
            else:
                params[key] = number
    if "grid" in dims and "threads" in dims:
        errors.append("give either grid= or threads=, not both")
    return Annotation(range_, pairs, dims.get("grid"), dims.get("block"), dims.get("threads"),
                      smem, tuple(params.items()), tuple(errors), tuple(tune.values()),
                      space.get("problem"), (grid_div[0], grid_div[1], grid_div[2]),
                      space.get("block_size_names"), tuple(restrictions),
                      tuple(defines.values()),
                      tuple(("x" if axis == "any" else axis, rule) for axis, rule in rules.items()))
