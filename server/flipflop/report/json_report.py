"""`flipflop analyze --format json`: the report as one JSON object (`gpu`, `toolchain`, `kernels`,
`notes`), and nothing else."""

from __future__ import annotations

from typing import Any

from flipflop.advice import Advice, advice_to_json
from flipflop.advice.assumptions import Influence
from flipflop.analysis.report import features_json
from flipflop.constraints import BlockConstraints
from flipflop.launch import Dim3, LaunchShape
from flipflop.model.predict import Prediction
from flipflop.results import AnalysisResult, KernelReport, LaunchReport
from flipflop.tuning import SpaceReport

JsonObject = dict[str, Any]


def analysis_to_json(result: AnalysisResult) -> JsonObject:
    profile = result.profile
    return {
        "gpu": {"id": profile.id, "name": profile.name, "arch": result.arch},
        "toolchain": {"nvcc": str(result.toolchain.nvcc), "version": result.toolchain.version},
        "kernels": [kernel_to_json(kernel) for kernel in result.kernels],
        "notes": list(result.notes),
    }


def kernel_to_json(kernel: KernelReport) -> JsonObject:
    launch = kernel.primary
    advice = launch.advice
    resources = kernel.resources
    shape = _feature_shape(launch)
    return {
        "name": kernel.info.name,
        "display_name": kernel.info.display_name,
        "source": {"file": kernel.info.file, "line": kernel.info.line},
        "resources": {
            "registers": resources.registers,
            "static_smem_bytes": resources.static_smem_bytes,
            "stack_bytes": resources.stack_bytes,
            "spill_store_bytes": resources.spill_store_bytes,
            "spill_load_bytes": resources.spill_load_bytes,
        },
        "features": features_json(kernel.features, shape, dict(launch.params)),
        "launch": launch_to_json(launch),
        **advice_to_json(advice),
        "current": prediction_brief(advice.current),
        "search": {
            "slack": advice.slack,
            "candidates": len(advice.predictions),
            "recommended_set": [
                {"block": list(p.block), "params": dict(p.params)} if p.params
                else list(p.block)
                for p in advice.recommended_set
            ],
            "shortlist": [
                {"block": list(p.block), "params": dict(p.params)} if p.params
                else list(p.block)
                for p in advice.shortlist
            ],
        },
        "excluded": [
            {"block": list(e.block), **({"params": dict(e.params)} if e.params else {}),
             "reason": e.reason}
            for e in advice.excluded
        ],
        "other_launches": [launch_to_json(other) for other in kernel.launches[1:]],
        **({"space": space_to_json(launch.space, advice)} if launch.space is not None else {}),
    }


def space_to_json(space: SpaceReport, advice: Advice) -> JsonObject:
    """How the search space was built, how much of it was evaluated, what it recommends."""
    launch = space.launch
    return {
        "tunables": {t.name: list(t.values) for t in space.space.tunables},
        "restrictions": [r.text for r in space.space.restrictions],
        "problem_size": [e if isinstance(e, int) else e.text for e in launch.problem_size],
        "problem_size_from": space.problem_from,
        "grid_div": [
            None if divisors is None else [d if isinstance(d, int) else d.text for d in divisors]
            for divisors in launch.grid_divs
        ],
        "block_size_names": list(launch.block_names(space.space.names)),
        "defines": {name: expression.text for name, expression in launch.derived},
        "configurations": space.size,
        "evaluated": space.evaluated,
        "sample": space.sample,
        "seed": space.seed,
        "variants": space.variants,
        "cached_variants": space.cached_variants,
        "compiler": space.compiler,
        "current": dict(space.current) if space.current is not None else None,
        "current_from": space.current_from or None,
        "recommended_set_size": len(
            [p for p in advice.recommended_set if p.power_limit_w is None]
        ),
        "shortlist_size": len(advice.shortlist),
        "search_space_reduction": advice.search_space_reduction,
        "unused_tunables": list(space.unused),
        "constraint_warnings": list(space.constraint_warnings),
    }


def launch_to_json(launch: LaunchReport) -> JsonObject:
    problem = launch.problem
    return {
        "grid": list(problem.grid) if problem.grid is not None else None,
        "threads": list(problem.threads) if problem.threads is not None else None,
        "axes": [list(axis) for axis in problem.axes] if problem.axes is not None else None,
        "block": list(launch.current_block) if launch.current_block is not None else None,
        "dynamic_smem_bytes": launch.dynamic_smem_bytes,
        "problem_size_from": launch.problem_origin,
        # The size is the documented default: absolute time, energy and traffic hold for it.
        "problem_size_assumed": launch.size_assumed,
        "needs": list(launch.site.needs) if launch.site is not None else [],
        "line": launch.site.line + 1 if launch.site is not None else None,
        "assumptions": [influence_to_json(influence) for influence in launch.assumptions],
        "constraints": constraints_to_json(launch.advice.constraints),
    }


def constraints_to_json(constraints: BlockConstraints | None) -> JsonObject | None:
    """What the kernel's code needs of its block at this launch (`flipflop.constraints`)."""
    if constraints is None:
        return None
    fixed = constraints.fixed_shape()
    return {
        "summary": constraints.summary(),
        "generic": constraints.is_generic,
        "fixed_block": list(fixed) if fixed is not None else None,
        "declared_generic": constraints.declared_generic,
        "requirements": [
            {
                "condition": r.condition,
                "axis": r.axis,
                "relation": r.relation,
                "value": r.value,
                "class": r.evidence,
                "proven": r.proven,
                "parameter": r.parameter,
                "because": list(r.because),
                "lines": list(r.lines),
            }
            for r in constraints.requirements
        ],
        "unsure": [{"reason": u.reason, "lines": list(u.lines)} for u in constraints.unsure],
        "conflicts": [
            {"message": c.describe(), "line": c.line,
             "block": list(c.block) if c.block is not None else None}
            for c in constraints.conflicts
        ],
    }


def influence_to_json(influence: Influence) -> JsonObject:
    """A guessed input, what was assumed, the annotation that pins it, and what 4× would do."""
    guess = influence.guess
    return {
        "kind": guess.kind,
        "name": guess.name,
        "assumed": guess.assumed,
        "annotation": guess.annotation,
        "lines": list(guess.lines),
        "influence": influence.score,
        "moves_recommendation": influence.moves_recommendation,
        "variations": [
            {
                "variation": outcome.label,
                "recommendation": prediction_brief(
                    outcome.recommendation.prediction if outcome.recommendation else None
                ),
                "extra_energy_of_pick": outcome.pick_regret,
                "saving_shift": outcome.saving_shift,
                "moves_recommendation": outcome.moves,
            }
            for outcome in influence.outcomes
        ],
        "summary": influence.describe(),
    }


def prediction_brief(prediction: Prediction | None) -> JsonObject | None:
    """Block, limit, time, power and energy of one configuration (None stays None)."""
    if prediction is None:
        return None
    return {
        "block": list(prediction.block),
        **({"params": dict(prediction.params)} if prediction.params else {}),
        "power_limit_w": prediction.power_limit_w,
        "time_s": prediction.time_s,
        "power_w": prediction.power_w,
        "energy_j": prediction.energy_j,
    }


def _feature_shape(launch: LaunchReport) -> LaunchShape:
    """Features are shown for the launch as written, else for the recommended block."""
    advice = launch.advice
    chosen = advice.current or advice.recommendation.prediction
    block: Dim3 = chosen.block
    return LaunchShape(block=block, grid=chosen.grid, dynamic_smem_bytes=launch.dynamic_smem_bytes)
