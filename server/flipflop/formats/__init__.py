"""File formats of auto-tuning: Kernel Tuner caches, T1 inputs, T4 results, Kernel Tuner inputs.

Every reader gives typed, frozen results and raises `FormatError` naming the file (and the line
and column where JSON says so) on anything it cannot read.
"""
