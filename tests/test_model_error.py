"""The model's error on ratios: split-conformal widths, their held-out judgement, and the energy
checks against meters (flipflop.model.error, flipflop.calibration.held_out,
flipflop.calibration.energy_checks)."""

from __future__ import annotations

import math
import random

import pytest

from flipflop.calibration.energy_checks import (
    EnergyPoint,
    clock_agreement,
    front_agreement,
    pareto_positions,
)
from flipflop.calibration.held_out import (
    MeasuredFile,
    MeasuredPoint,
    held_out_intervals,
    held_out_shortlists,
    interval_shortlist,
    pairs_of,
    stand_in_intervals,
)
from flipflop.model.error import (
    LEVELS,
    ModelErrorFormatError,
    RatioInterval,
    conformal_half_width,
    coverage,
    log_ratio_residuals,
    model_error,
    parse_model_error,
    weighted_conformal_half_width,
)


def test_the_width_is_the_conformal_rank_of_the_absolute_residuals() -> None:
    residuals = [-9.0, 1.0, -2.0, 3.0, 4.0, -5.0, 6.0, 7.0, -8.0]
    # n = 9: at 80% the ⌈10 × 0.8⌉ = 8th smallest |r|.
    assert conformal_half_width(residuals, 0.8) == 8.0
    assert conformal_half_width(residuals, 0.5) == 5.0
    # At 95% the rank (10) passes n: too few residuals to promise that level.
    assert conformal_half_width(residuals, 0.95) == math.inf
    with pytest.raises(ValueError, match="level"):
        conformal_half_width(residuals, 1.0)


def test_exchangeable_residuals_are_covered_at_the_level() -> None:
    rng = random.Random(7)
    calibration = [rng.gauss(0.0, 0.3) for _ in range(400)]
    fresh = [rng.gauss(0.0, 0.3) for _ in range(20000)]
    width = conformal_half_width(calibration, 0.8)
    held = coverage(width, fresh)
    assert held is not None and 0.76 <= held <= 0.86


def test_ratios_forgive_a_bias_shared_by_every_configuration() -> None:
    measured = [1.0, 2.0, 4.0]
    predicted = [3.0 * m for m in measured]  # every prediction 3× off, the ranking exact
    assert log_ratio_residuals(predicted, measured, [(0, 1), (1, 2), (0, 2)]) == pytest.approx(
        [0.0, 0.0, 0.0])
    # Non-positive values cannot form a ratio and are left out.
    assert log_ratio_residuals([1.0, 0.0], [1.0, 1.0], [(0, 1)]) == []


def test_a_saving_holds_only_when_larger_than_the_interval() -> None:
    interval = RatioInterval("energy", "block", 0.8, math.log(1.25), 100, ("a", "b"), 0.8)
    assert interval.percent == pytest.approx(25.0)
    assert not interval.holds(0.15)  # 1/0.85 = 1.18 < 1.25
    assert interval.holds(0.25)  # 1/0.75 = 1.33 > 1.25
    # The ratio 0.7 within ×/÷ 1.25: 0.56 to 0.875, savings of 12% to 44%.
    assert interval.saving_range(0.3) == pytest.approx((0.125, 0.44))
    assert interval.describe(0.3) == "30% (12% to 44% at 80%)"  # 12.5 rounds to even
    assert interval.describe(0.2) == "20% (0% to 36% at 80%)"


def test_the_shipped_widths_cover_every_level_and_say_their_source() -> None:
    for level in LEVELS:
        error = model_error(level)
        time_code = error.interval("time", "code")
        assert time_code is not None and time_code.level == level
        assert time_code.log_half_width > 0.0 and len(time_code.kernels) >= 5
        assert "validate_all.py" in error.source
    # Wider at a higher level.
    narrow, wide = model_error(0.5).interval("time", "code"), model_error(0.9).interval(
        "time", "code")
    assert narrow is not None and wide is not None
    assert narrow.log_half_width < wide.log_half_width
    with pytest.raises(ValueError, match="levels measured"):
        model_error(0.7)


def test_a_malformed_error_file_is_a_positioned_error() -> None:
    with pytest.raises(ModelErrorFormatError, match=r"intervals\[0\].*metric"):
        parse_model_error({"intervals": [{"metric": "power", "kind": "block", "level": 0.8,
                                          "log_half_width": 0.1, "pairs": 1, "kernels": []}]},
                          origin="error.json")
    with pytest.raises(ModelErrorFormatError, match="list 'intervals'"):
        parse_model_error([], origin="error.json")


def _point(code: str, block: str, predicted: float, measured: float) -> MeasuredPoint:
    return MeasuredPoint((("tile", code),), (block,), predicted, measured, None, None)


def test_pairs_are_told_apart_by_what_differs() -> None:
    points = [_point("1", "32", 1.0, 1.0), _point("1", "64", 1.0, 1.0),
              _point("2", "32", 1.0, 1.0)]
    assert list(pairs_of(points, "block")) == [(0, 1)]
    assert list(pairs_of(points, "code")) == [(0, 2), (1, 2)]


def _kernel(name: str, noise: float, seed: int) -> MeasuredFile:
    rng = random.Random(seed)
    points = []
    for tile in range(12):
        for block in (32, 64, 128):
            measured = 1.0 + tile + block / 64.0
            points.append(_point(str(tile), str(block), measured * math.exp(rng.gauss(0, noise)),
                                 measured))
    return MeasuredFile(name, f"{name}.json", tuple(points))


def test_a_held_out_kernel_is_judged_with_the_width_of_the_others() -> None:
    files = [_kernel("exact", 0.0, 1), _kernel("noisy", 0.4, 2), _kernel("noisier", 0.6, 3)]
    judged = {j.kernel: j for j in held_out_intervals(files, "time", "code", 0.8)}
    # Held out, the exact kernel gets the noisy kernels' width and all its pairs are inside.
    assert judged["exact"].coverage == 1.0 and judged["exact"].log_half_width > 0.3
    # The noisier one, judged with widths from an exact and a noisy kernel, is under-covered:
    # what the held-out figure is there to show.
    assert judged["noisier"].coverage is not None and judged["noisier"].coverage < 0.8
    shortlists = {s.kernel: s for s in held_out_shortlists(files, 0.8)}
    assert shortlists["exact"].holds_best and shortlists["exact"].best_regret == 0.0
    assert 0 < shortlists["exact"].size < shortlists["exact"].configurations


def test_the_interval_shortlist_keeps_what_may_be_as_fast() -> None:
    points = [_point("1", "32", 1.0, 1.0), _point("2", "32", 1.2, 1.0),
              _point("3", "32", 2.0, 1.0)]
    assert interval_shortlist(points, math.log(1.25), share=1.0) == [0, 1]
    assert interval_shortlist(points, 0.0, share=1.0) == [0]
    # The share stays the upper bound: a tenth of three configurations is one.
    assert interval_shortlist(points, math.log(1.25)) == [0]


def test_every_kernel_weighs_the_same_in_a_pooled_width() -> None:
    # One kernel with a hundred small residuals and one with four large ones: pooled flat, the
    # large ones are 4% of the residuals and the 80% width is small; weighed by kernel they are
    # half the weight, and the width reaches them.
    small = [0.01] * 100
    large = [1.0] * 4
    assert conformal_half_width(small + large, 0.8) == 0.01
    assert weighted_conformal_half_width([small, large], 0.8) == 1.0
    assert weighted_conformal_half_width([small, large], 0.4) == 0.01
    # Groups of one residual each: the plain split-conformal width.
    residuals = [float(i) for i in range(1, 10)]
    assert weighted_conformal_half_width([[r] for r in residuals], 0.8) == \
        conformal_half_width(residuals, 0.8)
    assert weighted_conformal_half_width([], 0.8) == math.inf


def test_energy_ratios_are_judged_with_the_time_width_of_the_other_kernels() -> None:
    files = [_kernel("exact", 0.0, 1), _kernel("noisy", 0.4, 2)]
    rng = random.Random(5)
    metered = MeasuredFile("metered", "metered.json", tuple(
        MeasuredPoint((("tile", str(t)),), ("32",), 1.0 + t, 1.0 + t,
                      (1.0 + t) * math.exp(rng.gauss(0, 0.05)), 1.0 + t) for t in range(12)))
    judged = stand_in_intervals([*files, metered], "code", 0.8)
    assert [j.kernel for j in judged] == ["metered"]
    # The time width of the other two kernels is wide enough for this kernel's small errors.
    assert judged[0].coverage == 1.0 and judged[0].pairs == 66


def _energy(code: str, clock: float, predicted: float, measured: float) -> EnergyPoint:
    return EnergyPoint((("tile", code),), clock, 1.0, 1.0, predicted, measured)


def test_the_energy_optimal_clock_is_counted_in_steps() -> None:
    points = [
        # tile 1: measured best at 1500, predicted best at 1500: exact.
        _energy("1", 1400, 3.0, 2.0), _energy("1", 1500, 1.0, 1.0), _energy("1", 1600, 2.0, 3.0),
        # tile 2: measured best at 1400, predicted at 1600: two steps, regret 3/1 - 1.
        _energy("2", 1400, 3.0, 1.0), _energy("2", 1500, 2.0, 2.0), _energy("2", 1600, 1.0, 3.0),
        # tile 3: one clock only, not counted.
        _energy("3", 1400, 1.0, 1.0),
    ]
    agreement = clock_agreement(points)
    assert agreement is not None
    assert (agreement.configurations, agreement.exact, agreement.within_one_step) == (2, 1, 1)
    assert agreement.median_energy_regret == pytest.approx(1.0)
    assert clock_agreement([_energy("1", 1400, 1.0, 1.0)]) is None


def test_fronts_are_compared_by_their_members() -> None:
    assert pareto_positions([1.0, 2.0, 3.0, 2.5], [3.0, 2.0, 1.0, 2.5]) == {0, 1, 2}
    points = [
        EnergyPoint((), None, 1.0, 1.0, 3.0, 3.0),
        EnergyPoint((), None, 2.0, 2.0, 2.0, 4.0),  # predicted on the front, measured not
        EnergyPoint((), None, 3.0, 3.0, 1.0, 1.0),
    ]
    front = front_agreement(points)
    assert (front.measured_front, front.predicted_front, front.common) == (2, 3, 2)
    assert front.recall == 1.0 and front.precision == pytest.approx(2 / 3)
