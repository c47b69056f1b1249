"""How a configuration becomes a launch: block, grid, parameter values and compile-time tunables."""
