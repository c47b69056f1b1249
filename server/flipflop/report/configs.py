"""How a configuration is named in reports: its block, or its tunables and block in a space."""

from __future__ import annotations

from collections.abc import Sequence

from flipflop.model.predict import Prediction
from flipflop.results import LaunchReport
from flipflop.units import format_shape


def varying_tunables(predictions: Sequence[Prediction]) -> tuple[str, ...]:
    """The tunables whose value differs between configurations, in the space's order."""
    if not predictions or not predictions[0].params:
        return ()
    names = [name for name, _ in predictions[0].params]
    return tuple(
        name for position, name in enumerate(names)
        if len({p.params[position][1] for p in predictions}) > 1
    )


def short_label(prediction: Prediction, varying: Sequence[str]) -> str:
    """`256` for a block shape; `32 4 (256)` — the varying tunables' values, then the block."""
    if not varying:
        return format_shape(prediction.block)
    values = dict(prediction.params)
    return " ".join(str(values[name]) for name in varying) + f" ({format_shape(prediction.block)})"


def described(prediction: Prediction) -> str:
    """`block 256`, or `block_size_x=32, tile_size=4 (block 32)`."""
    if prediction.params:
        values = ", ".join(f"{name}={value}" for name, value in prediction.params)
        return f"{values} (block {format_shape(prediction.block)})"
    return f"block {format_shape(prediction.block)}"


def space_summary(launch: LaunchReport) -> str | None:
    """One sentence on the search space behind a launch's advice (None: block shapes only)."""
    space = launch.space
    if space is None:
        return None
    advice = launch.advice
    sampled = f", a sample of {space.evaluated} (seed {space.seed})" if space.sample else ""
    recommended = len([p for p in advice.recommended_set if p.power_limit_w is None])
    return (
        f"search space: {space.size} configurations of {len(space.space.tunables)} tunables"
        f"{sampled}; {space.variants} variants compiled with {space.compiler}"
        f" ({space.cached_variants} from the cache); {recommended} within the slack,"
        f" {len(advice.shortlist)} worth measuring ({advice.search_space_reduction:.1%}"
        " reduction)"
    )
