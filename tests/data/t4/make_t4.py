"""Generator of the T4 results files in this folder, from a measured Kernel Tuner cache.

The measurements are real: twelve configurations of pnpoly on the RTX 3090 (both correct and
failed ones), taken from calibration/data/measured/pnpoly/RTX_3090.json.gz (benchmark_hub,
MIT) and written in the two shapes Kernel Tuner writes T4 results in:

- pnpoly_RTX_3090_results.json: `kernel_tuner.file_utils.store_output_file` (every measurement,
  unit "ms" for names that start with "time", runtimes under times.runtimes);
- pnpoly_RTX_3090_T4.json: `kernel_tuner.cache.convert.convert_cache_to_t4` (the objective only,
  unit "", `"metadata": {"timeunit": "miliseconds"}`).

Regenerate with: .venv/bin/python tests/data/t4/make_t4.py
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CACHE = HERE.parents[2] / "calibration" / "data" / "measured" / "pnpoly" / "RTX_3090.json.gz"
KEYS = ["0,32,1,0", "0,32,1,1", "1,256,4,2", "2,512,8,0", "3,96,20,1", "1,992,2,2",
        "2,64,16,1", "3,448,10,0", "0,800,6,2", "3,992,20,1", "3,992,20,2", "2,960,18,0"]
TIMING_KEYS = ("compile_time", "benchmark_time", "framework_time", "strategy_time",
               "verification_time")


def _invalidity(time: object) -> str:
    return {"CompilationFailedConfig": "compile", "RuntimeFailedConfig": "runtime",
            "InvalidConfig": "constraints"}.get(time, "correct") if isinstance(time, str) \
        else "correct"


def main() -> None:
    with gzip.open(CACHE, "rt") as handle:
        cache = json.load(handle)
    tune_params = cache["tune_params_keys"]
    entries = [cache["cache"][key] for key in KEYS]

    output: list[dict[str, Any]] = []
    converted: list[dict[str, Any]] = []
    for entry in entries:
        configuration = {name: entry[name] for name in tune_params}
        invalidity = _invalidity(entry["time"])
        measurements = [{"name": name, "value": value,
                         "unit": "ms" if name.startswith("time") else ""}
                        for name, value in entry.items()
                        if name not in tune_params and name not in TIMING_KEYS
                        and name not in ("timestamp", "times")]
        output.append({
            "timestamp": entry["timestamp"],
            "configuration": configuration,
            "times": {"compilation": entry["compile_time"], "benchmark": entry["benchmark_time"],
                      "framework": entry["framework_time"],
                      "search_algorithm": entry["strategy_time"],
                      "validation": entry["verification_time"],
                      "runtimes": entry.get("times", [])},
            "invalidity": invalidity,
            "correctness": 1,
            "measurements": measurements,
            "objectives": ["time"],
        })
        times = {"compilation": entry["compile_time"], "framework": entry["framework_time"],
                 "search_algorithm": entry["strategy_time"],
                 "validation": entry["verification_time"]}
        if "times" in entry:
            times["runtimes"] = entry["times"]
        converted.append({
            "timestamp": entry["timestamp"],
            "configuration": configuration,
            "times": times,
            "invalidity": invalidity,
            "correctness": 1 if invalidity == "correct" else 0,
            "measurements": [{"name": "time", "value": entry["time"], "unit": ""}],
            "objectives": ["time"],
        })
    (HERE / "pnpoly_RTX_3090_results.json").write_text(
        json.dumps({"results": output, "schema_version": "1.0.0"}) + "\n")
    (HERE / "pnpoly_RTX_3090_T4.json").write_text(json.dumps(
        {"metadata": {"timeunit": "miliseconds"}, "results": converted,
         "schema_version": "1.0.0"}, indent=2) + "\n")


if __name__ == "__main__":
    main()
