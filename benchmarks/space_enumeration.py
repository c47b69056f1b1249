"""Search-space enumeration and cache reading, each beside a baseline measured in the same run.

    .venv/bin/python benchmarks/space_enumeration.py [--repeat 5]

1. Enumerating GEMM's space (82,944 configurations before the restrictions of tune_gemm.py.txt,
   17,472 after): SearchSpace tests each restriction as soon as the values it names are set;
   the baseline filters the whole product, every restriction on every configuration, as
   Kernel Tuner's brute-force builder does. Both use the same evaluator and give the same list.
2. Reading the largest measured cache (GEMM, RTX 2080 Ti): the typed reader beside `json.loads`
   of the same text, the least any reader must do.

Times are process CPU time, best of --repeat; the two sides alternate so both see the same
load on a shared machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path

from flipflop.formats.files import read_text
from flipflop.formats.kernel_tuner_cache import parse_kernel_tuner_cache
from flipflop.space.expressions import parse_expression
from flipflop.space.tunables import SearchSpace, search_space

MEASURED = Path(__file__).resolve().parents[1] / "calibration" / "data" / "measured"
GEMM_RESTRICTIONS = [
    "KWG % KWI == 0", "MWG % (MDIMC * VWM) == 0", "NWG % (NDIMC * VWN) == 0",
    "MWG % (MDIMA * VWM) == 0", "NWG % (NDIMB * VWN) == 0",
    "KWG % ((MDIMC * NDIMC)/MDIMA) == 0", "KWG % ((MDIMC * NDIMC)/NDIMB) == 0",
    "not (MWG == 128 and NWG == 128 and MDIMC == 8 and NDIMC == 8)",
]


def _cpu(action: Callable[[], object]) -> float:
    start = time.process_time()
    action()
    return time.process_time() - start


def _filter_whole_product(space: SearchSpace) -> list[tuple[object, ...]]:
    names = space.names
    kept = []
    for values in itertools.product(*(tunable.values for tunable in space.tunables)):
        env = dict(zip(names, values, strict=True))
        if all(restriction.evaluate(env) for restriction in space.restrictions):
            kept.append(values)
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()

    text = read_text(MEASURED / "gemm" / "RTX_2080_Ti.json.gz")
    tunables = parse_kernel_tuner_cache(text, "gemm").tunables
    restrictions = tuple(parse_expression(r) for r in GEMM_RESTRICTIONS)
    expected = _filter_whole_product(SearchSpace(tunables, restrictions))
    assert [c.as_tuple() for c in search_space(tunables, restrictions)] == expected

    pruned, whole, typed, plain = [], [], [], []
    for _ in range(arguments.repeat):
        pruned.append(_cpu(lambda: search_space(tunables, restrictions).configurations))
        whole.append(_cpu(lambda: _filter_whole_product(SearchSpace(tunables, restrictions))))
        typed.append(_cpu(lambda: parse_kernel_tuner_cache(text, "gemm")))
        plain.append(_cpu(lambda: json.loads(text)))
    print(f"GEMM space, {len(expected)} of 82944 configurations")
    print(f"  pruned enumeration      {min(pruned):7.3f} s")
    print(f"  filtered whole product  {min(whole):7.3f} s   (baseline)")
    print(f"  ratio                   {min(pruned) / min(whole):7.2f}")
    print(f"GEMM cache, {len(text) / 1e6:.1f} MB of JSON")
    print(f"  typed reader            {min(typed):7.3f} s")
    print(f"  json.loads              {min(plain):7.3f} s   (baseline)")
    print(f"  ratio                   {min(typed) / min(plain):7.2f}")


if __name__ == "__main__":
    main()
