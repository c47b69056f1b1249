"""Search spaces of compile-time tunables, with Kernel Tuner's semantics.

`expressions`: the safe Python-subset evaluator of restrictions and T1 fields; `tunables`: tunable
parameters, configurations and search spaces; `kernel_tuner`: how Kernel Tuner turns a
configuration into a block, a grid, preprocessor definitions and a cache key.
"""
