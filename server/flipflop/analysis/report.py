"""The JSON form of a kernel's features for one launch (`"features"` in `analyze --format json`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flipflop.analysis.memory import evaluate_site
from flipflop.launch import LaunchShape

if TYPE_CHECKING:
    from flipflop.analysis.features import KernelFeatures


def features_json(
    features: KernelFeatures, shape: LaunchShape, params: Mapping[str, float]
) -> dict[str, Any]:
    env = features.environment(shape, params)
    work = features.work(shape, params)
    counts = features.counts(shape, params)
    launch = features.factor_values(shape, params)
    threads_per_block = shape.threads_per_block
    loop_ids = {i for i, factor in enumerate(features.factors) if factor.kind == "loop"}
    loops = []
    guards = []
    for index, factor in enumerate(features.factors):
        value, defaulted = launch.values[index], launch.defaulted[index]
        missing = sorted(factor.expression.symbols() - env.keys()) if defaulted else []
        derivation = launch.derivation(features.factors, index)
        how = launch.interpreted.get(index, factor.description)
        if index in launch.not_interpreted:
            how += f" (not interpreted: {launch.not_interpreted[index]})"
        entry: dict[str, Any] = {
            "function": factor.function,
            "lines": list(factor.lines),
            "expression": str(factor.expression),
            "value": _round(value),
            "derivation": derivation,
            "assumed": derivation == "assumed",
            "how": how,
        }
        if factor.kind == "loop":
            entry.update({
                "id": index,
                "depth": factor.depth,
                "parent": factor.parent if factor.parent in loop_ids else None,
                "trip_count": _round(value),
                "missing_parameters": missing,
            })  # fmt: skip
            loops.append(entry)
        else:
            entry.update({
                "active_fraction": _round(value),
                "divergent": factor.divergent,
                "missing_parameters": missing,
            })  # fmt: skip
            guards.append(entry)

    sites = []
    for site, site_work in zip(features.sites, work.sites, strict=True):
        evaluated = evaluate_site(site, shape.block, env)
        sites.append({
            "space": site.space,
            "operation": site.operation,
            "store": site.is_store,
            "width_bytes": site.width_bytes,
            "pattern": evaluated.pattern,
            "stride_bytes": evaluated.stride_bytes,
            "sectors_per_request": _round(evaluated.sectors * 32),
            "bank_conflict_degree": _round(evaluated.bank_conflict_degree),
            "accesses_per_thread": _round(site_work.accesses),
            "bytes_per_thread": _round(site_work.bytes_requested),
            "lines": list(site.lines),
            "assumed": evaluated.assumed,
        })  # fmt: skip

    dram = work.dram_bytes
    flops = work.flops
    shared_bytes = sum(s.bytes_requested for s in work.sites if s.space == "shared")
    per_thread: dict[str, float | None] = {
        "flops": _round(flops),
        "dram_bytes": _round(dram),
        "shared_bytes": _round(shared_bytes),
        "arithmetic_intensity": _round(flops / dram) if dram else None,
    }
    per_block = {
        "flops": _round(flops * threads_per_block),
        "dram_bytes": _round(dram * threads_per_block),
        "shared_bytes": _round(shared_bytes * threads_per_block),
        "arithmetic_intensity": per_thread["arithmetic_intensity"],
    }
    return {
        "kernel": features.name,
        "parameters": list(features.parameter_names),
        "source_parameters": list(features.source_parameter_names),
        "launch": {"block": list(shape.block), "grid": list(shape.grid)},
        "uses_tid_y": features.uses_tid_y,
        "uses_tid_z": features.uses_tid_z,
        "work_depends_on_block": features.work_depends_on_block,
        "instruction_mix": {name: _round(value) for name, value in counts.items()},
        "memory": {
            "global_load_bytes": _round(work.global_load_bytes),
            "global_store_bytes": _round(work.global_store_bytes),
            "global_load_sectors": _round(work.global_load_sectors),
            "global_store_sectors": _round(work.global_store_sectors),
            "local_bytes": _round(work.local_bytes),
            "shared_accesses": _round(work.shared_accesses),
            "shared_wavefronts": _round(work.shared_wavefronts),
            "async_copy_bytes": _round(work.async_copy_bytes),
        },
        "loops": loops,
        "access_sites": sites,
        "divergence": {
            "active_fraction": _round(work.active_fraction),
            "guards": guards,
            "divergent_branch_lines": list(work.divergence_lines),
            "idle_lines": list(work.idle_lines),
        },
        "calls": [{"callee": call.callee, "lines": list(call.lines)} for call in features.calls],
        "totals": {"per_thread": per_thread, "per_block": per_block},
        "assumptions": list(work.assumptions),
    }


def _round(value: float) -> float:
    return float(f"{value:.6g}")
