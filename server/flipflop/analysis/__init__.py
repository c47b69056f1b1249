"""Static features of kernels: control flow, trip counts, instruction classes, memory access
patterns and divergence, each tied to the CUDA source lines it comes from."""

from flipflop.analysis.features import FeatureError, KernelFeatures, extract_features

__all__ = ["FeatureError", "KernelFeatures", "extract_features"]
