"""How a configuration becomes a launch: block, grid, parameter values and compile-time tunables.

`problem`: the problem size, block, parameter values and dynamic shared memory of a launch as
written; `expressions`: the safe Python-subset evaluator of restrictions and T1 fields;
`tunables`: tunable parameters, configurations and search spaces; `kernel_tuner`: how Kernel
Tuner turns a configuration into a block, a grid, preprocessor definitions and a cache key.
"""
