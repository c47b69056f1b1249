"""Many variants of one source (compile-time tunables): compiled once each, cached, in parallel."""
