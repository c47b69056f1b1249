"""Which configurations a person is shown, and how tied ones collapse into one line.

The table, the hover and the chart tooltip all read these rows: every configuration that is the
current launch, NVIDIA's choice, the recommendation or the fastest gets a row of its own; any
other shape on the Pareto front is shown through its tie group (or alone when it ties with
nothing); the shapes of a tie group beyond those rows are counted on one line with their range.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from flipflop.advice import Advice
from flipflop.advice.ties import TIE_TOLERANCE, ConfigurationKey, TieGroup, configuration_key
from flipflop.launch import Dim3, volume
from flipflop.model.predict import Prediction
from flipflop.units import format_energy, format_time


@dataclass(frozen=True)
class ConfigRow:
    prediction: Prediction
    labels: tuple[str, ...]  # "recommended", "current", "NVIDIA heuristic", "fastest", "tie 2"


@dataclass(frozen=True)
class TieRow:
    group: TieGroup
    shown: int  # members of the group that have a row of their own just above
    text: str  # the whole line, naming the rows above it
    summary: str  # the group on its own: "51 shapes tie within 1% at … (…)"

    @property
    def more(self) -> int:
        """Members beyond the rows shown."""
        return len(self.group.members) - self.shown

    @property
    def time(self) -> str:
        return _span([p.time_s for p in self.group.members], format_time)

    @property
    def energy(self) -> str:
        return _span([p.energy_j for p in self.group.members], format_energy)

    @property
    def power(self) -> str:
        return _span([p.power_w for p in self.group.members], lambda w: f"{w:.0f} W")


Row = ConfigRow | TieRow


def notable(advice: Advice) -> list[tuple[str, Prediction]]:
    """The configurations every view names, in the order their labels are read."""
    found: list[tuple[str, Prediction]] = []
    for label, prediction in (
        ("recommended", advice.recommendation.prediction),
        ("current", advice.current),
        ("NVIDIA heuristic", advice.heuristic),
        ("fastest", advice.fastest),
    ):
        if prediction is not None:
            found.append((label, prediction))
    return found


def report_rows(advice: Advice, show_all: bool = False) -> list[Row]:
    """The rows of one launch's table, fastest first (every configuration with `show_all`)."""
    labels: dict[ConfigurationKey, list[str]] = {}
    named: dict[ConfigurationKey, Prediction] = {}
    for label, prediction in notable(advice):
        labels.setdefault(configuration_key(prediction), []).append(label)
        named.setdefault(configuration_key(prediction), prediction)
    if show_all:
        rows: list[Row] = []
        for prediction in advice.predictions:
            marks = list(labels.get(configuration_key(prediction), []))
            group = advice.tie_group(prediction)
            if group is not None:
                marks.append(f"tie {group.index + 1}")
            rows.append(ConfigRow(prediction, tuple(marks)))
        return rows

    units: list[tuple[float, list[Row]]] = []
    swept = {configuration_key(p) for p in advice.predictions}
    for group in advice.ties:
        own = [p for p in group.members if configuration_key(p) in labels]
        if not own and not any(p.pareto for p in group.members):
            continue
        shown = own or [next(p for p in group.members if p.pareto)]
        group_rows: list[Row] = [
            ConfigRow(p, tuple(labels.get(configuration_key(p), ()))) for p in _by_time(shown)
        ]
        if len(group.members) > len(shown):
            group_rows.append(
                TieRow(group, len(shown), describe_tie(group, advice, len(shown)),
                       describe_tie(group, advice))
            )  # fmt: skip
        units.append((_by_time(shown)[0].time_s, group_rows))
    for prediction in advice.predictions:
        if advice.tie_group(prediction) is not None:
            continue
        key = configuration_key(prediction)
        if prediction.pareto or key in labels:
            units.append((prediction.time_s, [ConfigRow(prediction, tuple(labels.get(key, ())))]))
    # Named configurations outside the sweep (a current block the search excluded).
    for key, prediction in named.items():
        if key not in swept:
            units.append((prediction.time_s, [ConfigRow(prediction, tuple(labels[key]))]))
    units.sort(key=lambda unit: unit[0])
    return [row for _, unit_rows in units for row in unit_rows]


def _by_time(predictions: Iterable[Prediction]) -> list[Prediction]:
    return sorted(predictions, key=lambda p: (p.time_s, p.energy_j))


def describe_tie(group: TieGroup, advice: Advice, shown: int = 0) -> str:
    """"38 shapes tie at 683 µs / 82 mJ (128…1024 threads, any 2-D split)", plus which rows
    above belong to it."""
    members = group.members
    times = [p.time_s for p in members]
    energies = [p.energy_j for p in members]
    text = (
        f"{len(members)} shapes tie within {TIE_TOLERANCE:.0%} at"
        f" {_span(times, format_time)} / {_span(energies, format_energy)}"
        f" ({shape_range(members, advice.predictions)})"
    )
    if any(p.params for p in members):  # configurations of compile-time tunables
        text = (
            f"{len(members)} configurations tie within {TIE_TOLERANCE:.0%} at"
            f" {_span(times, format_time)} / {_span(energies, format_energy)}"
        )
    if shown == 1:
        text += ", the row above among them"
    elif shown > 1:
        text += f", the {shown} rows above among them"
    return text


def _span(values: list[float], show: Callable[[float], str]) -> str:
    """"683 µs" when both ends print alike, "683–684 µs" when they share a unit."""
    low, high = show(min(values)), show(max(values))
    if low == high:
        return low
    low_number, _, low_unit = low.partition(" ")
    high_number, _, high_unit = high.partition(" ")
    if low_unit == high_unit:
        return f"{low_number}–{high_number} {high_unit}"
    return f"{low}–{high}"


def shape_range(members: tuple[Prediction, ...], candidates: tuple[Prediction, ...]) -> str:
    """Thread counts and splits of the tied shapes, e.g. "32…1024 threads, any 2-D split".

    "any 2-D split" means every candidate shape of at most two dimensions with those thread
    counts is in the group (1-D blocks are the 2-D splits with y = 1); "any split" adds 3-D.
    """
    limit = members[0].power_limit_w
    blocks = {p.block for p in members}
    all_blocks = {p.block for p in candidates if p.power_limit_w == limit}
    threads = _thread_counts(sorted({volume(b) for b in blocks}),
                             sorted({volume(b) for b in all_blocks}))
    rank = max(_rank(b) for b in blocks)
    deepest = max(_rank(b) for b in all_blocks)
    counts = {volume(b) for b in blocks}
    complete = all(
        b in blocks for b in all_blocks if volume(b) in counts and _rank(b) <= rank
    )
    if rank == 1:
        return threads if deepest == 1 else f"{threads}, 1-D only"
    if complete:
        return f"{threads}, any split" if rank == 3 else f"{threads}, any 2-D split"
    kinds = " and ".join(f"{r}-D" for r in sorted({_rank(b) for b in blocks}))
    return f"{threads}, some {kinds} shapes"


def _thread_counts(counts: list[int], candidates: list[int]) -> str:
    if len(counts) == 1:
        return f"{counts[0]} threads"
    first, last = candidates.index(counts[0]), candidates.index(counts[-1])
    if candidates[first : last + 1] == counts:
        return f"{counts[0]}…{counts[-1]} threads"
    if len(counts) >= 3 and all(c & (c - 1) == 0 for c in counts):
        return f"{counts[0]}…{counts[-1]} threads in powers of two"
    if len(counts) <= 4:
        return ", ".join(str(c) for c in counts[:-1]) + f" and {counts[-1]} threads"
    return f"{len(counts)} sizes from {counts[0]} to {counts[-1]} threads"


def _rank(block: Dim3) -> int:
    if block[2] > 1:
        return 3
    return 2 if block[1] > 1 else 1
