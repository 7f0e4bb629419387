"""How released counts are shown (engine/answering/rounding.py): the rounding keeps the release's promise."""

from __future__ import annotations

import math

import numpy as np

from dpdesk.engine.answering.rounding import count_interval, format_interval, format_value, round_count


def test_float_noise_of_an_inferred_estimate_is_shown_as_the_count():
    assert format_value(59950.999999999985, True) == "59951"
    assert format_interval(59830.999999999985, 60070.999999999985, True) == "[59831, 60071]"
    assert format_interval(14353.000000000064, 14653.000000000064, True) == "[14353, 14653]"
    assert (
        format_value(790.652, True) == "791"
        and format_interval(740.652, 840.652, True, 790.652) == "[741, 840]"
    )


def test_a_query_that_is_not_a_count_keeps_six_digits():
    assert format_value(790.652, False) == "790.652" and format_value(1234567.891, False) == "1234567.9"
    assert format_interval(740.652, 840.652, False) == "[740.652, 840.652]"


def test_the_integers_inside_are_the_same_event_and_the_rounded_value_keeps_integer_eps():
    rng = np.random.default_rng(14)
    for v, eps in zip(rng.uniform(-50, 50, 2000), rng.integers(1, 6, 2000)):
        lo, hi = count_interval(v - eps, v + eps, v)
        for theta in range(math.floor(v) - 8, math.ceil(v) + 9):  # every integer truth near v
            assert (lo <= theta <= hi) == (v - eps <= theta <= v + eps)
            if abs(v - theta) <= eps:
                assert abs(round_count(v) - theta) <= eps


def test_an_interval_without_integers_still_holds_the_rounded_value():
    assert count_interval(10.3, 10.45, 10.4) == (10, 10)
    assert round_count(2.5) == 3 and round_count(-2.5) == -2
