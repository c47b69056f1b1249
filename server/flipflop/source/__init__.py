"""Reading CUDA source with tree-sitter-cuda: kernels, launches, folding, annotations, edits."""

from flipflop.source.coverage import problem_size
from flipflop.source.edits import Fix, Refusal, rewrite_launch, set_launch_bounds
from flipflop.source.model import (
    Annotation,
    ConfigArgument,
    Declaration,
    Folded,
    FoldedDim3,
    GridAxis,
    Kernel,
    KernelParameter,
    LaunchBounds,
    LaunchSite,
    Position,
    Range,
    SourceFile,
    TemplateParameter,
    TextEdit,
)
from flipflop.source.parse import parse_source
from flipflop.source.positions import apply_edits

__all__ = [
    "Annotation",
    "ConfigArgument",
    "Declaration",
    "Fix",
    "Folded",
    "FoldedDim3",
    "GridAxis",
    "Kernel",
    "KernelParameter",
    "LaunchBounds",
    "LaunchSite",
    "Position",
    "Range",
    "Refusal",
    "SourceFile",
    "TemplateParameter",
    "TextEdit",
    "apply_edits",
    "parse_source",
    "problem_size",
    "rewrite_launch",
    "set_launch_bounds",
]
