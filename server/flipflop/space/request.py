"""What a search space request holds: the tunables, their restrictions, Kernel Tuner's launch
semantics, and the configuration the source runs as written.

The space comes from the options (`--tune`, `--tune-file`, or tunables already read from a
measured file), else from a `// flipflop: tune …` annotation above the kernel; the launch
semantics from the options, else the annotation (`problem=`, `grid_div_x=`,
`block_size_names=`), else Kernel Tuner's defaults. The current configuration is the template
arguments of a launch of the kernel in the file, else the tunables' `#ifndef` defaults, else
their first values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from flipflop.source.model import Annotation, SourceFile
from flipflop.source.model import Kernel as SourceKernel
from flipflop.space.errors import SpaceError
from flipflop.space.expressions import Expression
from flipflop.space.kernel_tuner import GPU_SETTINGS, KernelTunerLaunch, kernel_tuner_launch
from flipflop.space.tunables import (
    Configuration,
    ParamValue,
    SearchSpace,
    Tunable,
    choose_indices,
    parse_tune_option,
)
from flipflop.toolchain.names import kernel_base_name

Compiler = Literal["auto", "nvrtc", "nvcc"]


@dataclass(frozen=True)
class SpaceOptions:
    """What the user said about the search space (command-line options or settings)."""

    tune: tuple[str, ...] = ()  # `NAME=V1,V2,…` or `NAME=A..B:STEP`
    # Already parsed: a `--tune-file`, a measured space, a T1 file.
    tunables: tuple[Tunable, ...] = ()
    restrictions: tuple[str, ...] = ()
    problem_size: tuple[str, ...] | None = None  # integers or expressions of the tunables
    grid_div: tuple[tuple[str, ...] | None, tuple[str, ...] | None, tuple[str, ...] | None] = (
        None, None, None,
    )
    block_size_names: tuple[str, ...] | None = None
    # Preprocessor definitions computed from the tunables, `NAME=EXPR` (Kernel Tuner's
    # `defines` with functions); they replace a define of the same name in the annotation or
    # the T1 file.
    defines: tuple[str, ...] = ()
    # Launch semantics already built (a T1 file); the options above refine it.
    launch: KernelTunerLaunch | None = None
    sample: int | None = None
    seed: int = 0
    # Exactly these configurations (what a measurement file measured); None: the whole space.
    configurations: tuple[Mapping[str, ParamValue], ...] | None = None
    # Also evaluate the source's default configuration when it is not among those asked for.
    include_current: bool = True
    compiler: Compiler = "auto"
    workers: int = 0  # 0: one per core
    use_cache: bool = True
    in_process: bool = False  # compile here instead of in worker processes

    @property
    def given(self) -> bool:
        return bool(self.tune or self.tunables or self.configurations is not None)


def space_annotation(
    source: SourceFile, kernel: str | None
) -> tuple[SourceKernel, Annotation] | None:
    """The kernel whose annotation declares a space or derived defines (the named one, else
    the first)."""
    for candidate in source.kernels:
        annotation = candidate.annotation
        if annotation is None or not (annotation.tunes or annotation.defines):
            continue
        wanted = kernel.split("<", 1)[0].strip() if kernel is not None else None
        if wanted is None or wanted in (candidate.name, candidate.qualified_name):
            return candidate, annotation
    return None


def build_space(
    options: SpaceOptions, annotation: Annotation | None, max_threads: int
) -> tuple[SearchSpace, KernelTunerLaunch, Literal["option", "annotation", "default"]]:
    """The search space and launch semantics; raises `SpaceError` with the reason."""
    from flipflop.space.kernel_tuner import kernel_tuner_search_space

    tunables: list[Tunable] = [*options.tunables]
    tunables.extend(parse_tune_option(spec) for spec in options.tune)
    restrictions = list(options.restrictions)
    if not tunables and annotation is not None:
        tunables = [parse_tune_option(spec) for spec in annotation.tune]
    if annotation is not None:
        restrictions.extend(annotation.restrictions)
    if not tunables:
        raise SpaceError("no tunables: give --tune NAME=VALUES or a `// flipflop: tune` annotation")
    space = kernel_tuner_search_space(tunables, restrictions, max_threads)

    base = options.launch
    problem: Sequence[int | str] | None = options.problem_size
    origin: Literal["option", "annotation", "default"] = "option"
    if problem is None and annotation is not None and annotation.problem:
        problem, origin = annotation.problem.split(","), "annotation"
    written = annotation.grid_div if annotation else (None, None, None)
    grid_div = [
        list(option) if option is not None else (text.split(",") if text else None)
        for option, text in zip(options.grid_div, written, strict=True)
    ]
    names = options.block_size_names
    if names is None and annotation is not None and annotation.block_size_names:
        names = tuple(annotation.block_size_names.split(","))
    written_defines = annotation.defines if annotation is not None else ()
    launch = kernel_tuner_launch(
        [_integer_or_text(entry) for entry in problem or ()] or [1],
        grid_div[0], grid_div[1], grid_div[2], block_size_names=names,
        defines=_overridden(written_defines, options.defines),
    )
    if base is not None:
        # The given launch (a T1 file's) with whatever the options set on top of it.
        launch = replace(
            base,
            problem_size=launch.problem_size if problem is not None else base.problem_size,
            grid_div_x=launch.grid_div_x if grid_div[0] is not None else base.grid_div_x,
            grid_div_y=launch.grid_div_y if grid_div[1] is not None else base.grid_div_y,
            grid_div_z=launch.grid_div_z if grid_div[2] is not None else base.grid_div_z,
            block_size_names=names if names is not None else base.block_size_names,
            derived=_merged(base.derived, launch.derived),
        )
        origin = "option"
    elif problem is None:
        origin = "default"
    launch.check(space.names)
    return space, launch, origin


def _overridden(written: Sequence[str], given: Sequence[str]) -> list[str]:
    """The `NAME=EXPR` defines written in the source, those given by name replacing them."""
    names = {define.partition("=")[0].strip() for define in given}
    return [d for d in written if d.partition("=")[0].strip() not in names] + list(given)


def _merged(base: Sequence[tuple[str, Expression]], given: Sequence[tuple[str, Expression]]
            ) -> tuple[tuple[str, Expression], ...]:
    names = {name for name, _ in given}
    return (*(d for d in base if d[0] not in names), *given)


def _integer_or_text(entry: str | int) -> int | str:
    if isinstance(entry, int):
        return entry
    text = entry.strip()
    try:
        return int(text, 0)
    except ValueError:
        return text


@dataclass(frozen=True)
class TemplateKernel:
    """A kernel template named with its arguments, `--kernel 'sgemm<BM,BN,8>'` or `f<float, 4>`:
    Kernel Tuner instantiates such a name itself, so the source need not."""

    name: str  # as the source spells it
    qualified_name: str  # with its namespaces, for a reference from file scope
    parameters: str = ""  # the template's parameter list, `typename T, int N`, for messages

    @classmethod
    def of(cls, kernel_name: str, declared: SourceKernel | None) -> TemplateKernel | None:
        """The template `kernel_name` instantiates (None: not a name with arguments); SpaceError
        when `declared`, the kernel of that name in the source or its headers, is no template."""
        if "<" not in kernel_name:
            return None
        base = kernel_base_name(kernel_name)
        if declared is None or not declared.template_parameters:
            raise SpaceError(f"{base} is not a kernel template in this file or its headers")
        return cls.declared_as(declared)

    @classmethod
    def declared_as(cls, declared: SourceKernel) -> TemplateKernel:
        parameters = ", ".join(f"{p.type} {p.name}".strip() for p in declared.template_parameters)
        return cls(declared.name, declared.qualified_name, parameters)

    def refusal(self, instance: str, reason: str) -> str:
        """Why `instance` does not instantiate the template, for `--kernel`'s error."""
        return (f"--kernel '{instance}': {self.name}<{self.parameters}> does not take these "
                f"template arguments ({reason})")

    def instantiation(self, instance: str) -> str:
        """Source text that makes the compiler emit `instance` (appended to the source). Taking
        the instance's address from file scope instantiates it in nvcc and NVRTC alike, needs no
        parameter types, and is harmless when the file instantiates it too; a failure names the
        line after the source's last."""
        arguments = instance.partition("<")[2]
        return (f"\nstatic auto* const flipflop_instance __attribute__((unused)) = "
                f"&{self.qualified_name}<{arguments};\n")


def template_arguments(kernel_name: str) -> tuple[str, ...]:
    """`sgemm<BM, BN, 8>` -> ("BM", "BN", "8")."""
    inside = kernel_name.partition("<")[2].rpartition(">")[0]
    return tuple(part.strip() for part in inside.split(",")) if inside else ()


def _launched_values(
    space: SearchSpace, source: SourceFile, kernel_name: str, block_names: Sequence[str]
) -> dict[str, ParamValue]:
    """Tunables that a launch of the template in the file instantiates with constants
    (`sgemm<BM, BN><<<…, (BM * BN) / TM>>>` with `const uint BM = 128;`): the template
    arguments, and the block for the block-size tunables. That launch is the current one."""
    pattern = template_arguments(kernel_name)
    if not pattern:
        return {}
    base = kernel_name.split("<", 1)[0].strip()
    for site in source.launches_of(base):
        found: dict[str, ParamValue] = {}
        for name, value in zip(pattern, site.template_values, strict=False):
            if name in space.names and value is not None:
                found[name] = value
        if not found:
            continue
        block = site.block_folded.value
        if block is not None:
            for name, extent in zip(block_names, block, strict=False):
                if name in space.names:
                    found.setdefault(name, extent)
        return found
    return {}


def current_configuration(
    space: SearchSpace, source: SourceFile, kernel_name: str = "",
    block_names: Sequence[str] = (),
) -> tuple[Configuration | None, str]:
    """The configuration the source runs as written: template arguments of a launch of the
    kernel, else the tunables' defaults (`#ifndef` definitions), else their first values."""
    values: dict[str, ParamValue] = {}
    from_source = False
    launched = _launched_values(space, source, kernel_name, block_names)
    for tunable in space.tunables:
        if tunable.name in launched:
            values[tunable.name] = _matching(tunable, launched[tunable.name])
            from_source = True
            continue
        definition = source.default_of(tunable.name)
        chosen = tunable.values[0]
        if tunable.name in GPU_SETTINGS:
            # Without a lock the GPU runs its highest clock, under its highest limit.
            chosen = max(tunable.values, key=lambda v: v if isinstance(v, (int, float)) else 0)
        if definition is not None:
            for value in tunable.values:
                if str(value) == definition.value.strip("()"):
                    chosen, from_source = value, True
                    break
        values[tunable.name] = chosen
    configuration = space.configuration(values)
    if not space.satisfies(configuration):
        return None, ""
    origin = "launch site" if launched else "source defaults"
    return configuration, origin if from_source else "first values"


def _matching(tunable: Tunable, value: ParamValue) -> ParamValue:
    """The tunable's own spelling of `value` (64 for 64.0), or `value` when it is not listed."""
    return next((v for v in tunable.values if v == value), value)


def unused_tunables(
    space: SearchSpace, launch: KernelTunerLaunch, source_text: str, kernel_name: str
) -> tuple[str, ...]:
    """Tunables nothing reads: not the source, the kernel's template arguments, the block or
    the grid (a typo, or a parameter the kernel lost)."""
    used = set(template_arguments(kernel_name)) | set(launch.block_names(space.names))
    for entry in (*launch.problem_size, *(d for ds in launch.grid_divs for d in ds or ())):
        if not isinstance(entry, int):
            used |= entry.names
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source_text))
    return tuple(t.name for t in space.tunables if t.name not in used and t.name not in words)


def configurations_of(
    space: SearchSpace, options: SpaceOptions
) -> tuple[tuple[Configuration, ...], int]:
    if options.configurations is not None:
        chosen = tuple(space.configuration(dict(values)) for values in options.configurations)
        size = len(chosen)
    else:
        size = space.size
        chosen = space.configurations
    if options.sample is not None and options.sample < len(chosen):
        picked = choose_indices(len(chosen), options.sample, options.seed)
        chosen = tuple(chosen[index] for index in picked)
    if not chosen:
        raise SpaceError("the search space is empty: no configuration satisfies the restrictions")
    return chosen, size


