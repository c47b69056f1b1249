"""File formats of auto-tuning: Kernel Tuner caches, T1 inputs, T4 results, Kernel Tuner inputs.

`kernel_tuner_cache`, `t1`, `t4`: readers; `measurements.read_measured_space`: the one reader
`validate` needs (cache or T4, told apart by content); `emit`: the `--emit-kernel-tuner` writer
and its reader; `tune_file`: `--tune-file`; `measured`: the typed result every measurement
reader gives. Every reader raises `FormatError` naming the file (and the line and column where
JSON says so) on anything it cannot read.
"""
