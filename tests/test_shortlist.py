"""The shortlist worth measuring: the predicted fastest share of a space (known answers)."""

from __future__ import annotations

import pytest

from flipflop.advice.shortlist import DEFAULT_SHORTLIST_SHARE, fastest_share, shortlist_size


def test_a_share_keeps_at_least_one_and_rounds_up() -> None:
    assert DEFAULT_SHORTLIST_SHARE == 0.10
    assert [shortlist_size(n, 0.10) for n in (0, 1, 9, 10, 11, 100, 101)] == [0, 1, 1, 1, 2, 10, 11]
    assert shortlist_size(7, 1.0) == 7
    for share in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="shortlist share"):
            shortlist_size(10, share)


def test_the_fastest_are_kept_and_ties_go_to_the_lower_energy() -> None:
    names = ["a", "b", "c", "d", "e"]
    time_s = [3.0, 1.0, 2.0, 1.0, 5.0]
    energy_j = [1.0, 9.0, 1.0, 4.0, 1.0]
    # 60% of five: three; b and d tie on time, d uses less energy.
    assert fastest_share(names, time_s, energy_j, 0.6) == ["d", "b", "c"]
    assert fastest_share(names, time_s, energy_j, 0.2) == ["d"]


def test_the_configuration_to_keep_takes_the_last_place() -> None:
    names = ["a", "b", "c", "d", "e"]
    time_s = [3.0, 1.0, 2.0, 4.0, 5.0]
    energy_j = [1.0] * 5
    assert fastest_share(names, time_s, energy_j, 0.4, keep="e") == ["b", "e"]
    assert fastest_share(names, time_s, energy_j, 0.4, keep="b") == ["b", "c"]  # already in
