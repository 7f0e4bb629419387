"""A mean's interval keeps its confidence at every table; its accuracy holds under its stated assumption.

Coverage is checked at fixed truths — small counts (1, 3 values), a mean at its bound, large counts — by
drawing the releases' noise from seeded generators and running the engine's interval on each draw. The
interval claims at least 1 − δ at every table (docs/sums.md, Theorem 3), so its miss rate must not exceed
δ by more than 4 binomial standard deviations, ``4·sqrt(δ(1 − δ)/n)`` (a correct engine fails less than
once in 30 000 per check); the check can fail — an interval ``Ŝ/Ĉ ± w/Ĉ`` of the same width misses at small
counts far more often (asserted). The fresh mean's price is checked the same way at the tables that are
worst for it (exactly N values, all at a bound).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdesk.engine.sums.accuracy import MeanAccuracy, count_floor, fresh_mean, history_failure
from dpdesk.engine.sums.ratio import RatioLaw, mean_interval

pytestmark = pytest.mark.calibration

DELTA = 0.1
LOWER, UPPER = 0.0, 100.0  # a measure clamped to [0, 100]


def draws(rng, family, scale, n):
    if family == "laplace":
        return rng.laplace(0.0, scale, n)
    p = -math.expm1(-1.0 / scale)
    return (rng.geometric(p, n) - rng.geometric(p, n)).astype(float)


def allowed_misses(n, delta=DELTA):
    return delta + 4 * math.sqrt(delta * (1 - delta) / n)


def run(law, rows, theta_s, theta_c, reps, rng):
    """Releases ``rows`` (each ``(coefficient on θ_S, on θ_C)``) drawn ``reps`` times; the intervals."""
    noise = np.array([draws(rng, f, b, reps) for b, f in zip(law.scales, law.families)])
    truths = np.array([cs * theta_s + cc * theta_c for cs, cc in rows])
    y = truths[:, None] + noise
    s_hat, c_hat = law.a @ y, law.c @ y
    return [mean_interval(law, float(s), float(c), DELTA, LOWER, UPPER) for s, c in zip(s_hat, c_hat)]


# a fresh mean: the box's sum (Laplace, sensitivity 100 at α = 1) and its count (discrete Laplace, α = 0.5)
FRESH = RatioLaw(
    np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([100.0, 2.0]), ("laplace", "discrete_laplace")
)


@pytest.mark.parametrize(
    ("count", "mean", "reps"),
    [(1, 100.0, 400), (3, 37.5, 400), (3, 0.0, 300), (20, 99.0, 400), (400, 61.25, 300)],
)
def test_fresh_mean_interval_covers_at_fixed_truths(count, mean, reps):
    rng = np.random.default_rng(count * 1000 + int(mean))
    ivs = run(FRESH, [(1, 0), (0, 1)], mean * count, count, reps, rng)
    misses = np.mean([not (iv.low <= mean <= iv.high) for iv in ivs])
    assert misses <= allowed_misses(reps)
    if count >= 20:  # informative once the box holds a few values: far narrower than [0, 100]
        assert np.median([iv.high - iv.low for iv in ivs]) < (60 if count == 20 else 5)
    if count == 400:  # and close to the exact set's coverage, not a wide safe margin (4.7 sd below δ)
        assert misses >= 0.3 * DELTA


def test_the_check_can_fail_at_small_counts():
    """The naive ratio interval ``(Ŝ ± w)/Ĉ`` — the sum's own ±w divided by the noisy count — misses at
    a count of 3 far more often than δ: the coverage test above would catch it."""
    rng = np.random.default_rng(5)
    reps, count, mean = 2000, 3, 100.0
    s = mean * count + draws(rng, "laplace", 100.0, reps)
    c = count + draws(rng, "discrete_laplace", 2.0, reps)
    w = 100.0 * math.log(1 / DELTA)
    ok = (c > 0) & (np.abs(s / np.where(c > 0, c, 1) - mean) <= w / np.where(c > 0, c, 1))
    assert 1 - ok.mean() > allowed_misses(reps)


def test_correlated_estimates():
    """The sum read off a release that also counted: Ŝ = y₁ − y₂ shares y₂ with Ĉ = y₂."""
    law = RatioLaw(
        np.array([1.0, -1.0]), np.array([0.0, 1.0]), np.array([101.0 / 0.8, 1 / 0.5]), ("laplace", "laplace")
    )
    rng = np.random.default_rng(8)
    for count, mean in [(5, 80.0), (60, 12.5)]:
        ivs = run(law, [(1, 1), (0, 1)], mean * count, count, 600, rng)
        assert np.mean([not (iv.low <= mean <= iv.high) for iv in ivs]) <= allowed_misses(600)


def test_history_of_three_rows():
    """A count read from two releases (the posterior of a three-term law, not a closed form)."""
    law = RatioLaw(
        np.array([1.0, 0.0, 0.0]),
        np.array([0.0, 0.5, 0.5]),
        np.array([100 / 0.6, 1 / 0.3, 1 / 0.4]),
        ("laplace",) * 3,
    )
    rng = np.random.default_rng(9)
    ivs = run(law, [(1, 0), (0, 1), (0, 1)], 8 * 42.0, 8, 150, rng)
    assert np.mean([not (iv.low <= 42.0 <= iv.high) for iv in ivs]) <= allowed_misses(150)


def test_counts_not_positive_say_so():
    iv = mean_interval(FRESH, 30.0, -2.0, DELTA, LOWER, UPPER)
    assert iv.estimate is None
    assert (iv.low, iv.high) == (LOWER, UPPER) and not iv.informative
    iv = mean_interval(FRESH, 5000.0, 40.0, DELTA, LOWER, UPPER)  # a ratio of 125, above every mean
    assert iv.estimate == UPPER and iv.high == UPPER and iv.low > 50


@pytest.mark.parametrize(("a", "n"), [(5.0, 200), (10.0, 30)])
def test_fresh_price_meets_its_accuracy_at_the_worst_tables(a, n):
    req = MeanAccuracy(a, DELTA, n)
    price = fresh_mean(100.0, LOWER, UPPER, req)
    assert price.failure <= DELTA
    b_s, b_c = 100.0 / price.alpha_sum, 1.0 / price.alpha_count
    rng = np.random.default_rng(int(a * n))
    reps = 20000
    for mean in (UPPER, LOWER, 50.0):  # exactly N values: the least the assumption allows
        s = mean * n + draws(rng, "laplace", b_s, reps)
        c = n + draws(rng, "discrete_laplace", b_c, reps)
        est = np.clip(np.where(c > 0, s / np.where(c > 0, c, 1), 0.5 * (LOWER + UPPER)), LOWER, UPPER)
        assert np.mean(np.abs(est - mean) > a) <= allowed_misses(reps)
    # the same releases read as a history: the same bound
    law = RatioLaw(
        np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([b_s, b_c]), ("laplace", "discrete_laplace")
    )
    assert history_failure(law, req, LOWER, UPPER) <= DELTA + 1e-3
    # less budget does not meet it
    assert history_failure(RatioLaw(law.a, law.c, law.scales * 1.3, law.families), req, LOWER, UPPER) > DELTA


def test_history_failure_on_shared_rows_is_an_upper_bound():
    law = RatioLaw(
        np.array([1.0, -1.0]), np.array([0.0, 1.0]), np.array([101.0 / 2, 1 / 1.5]), ("laplace", "laplace")
    )
    req = MeanAccuracy(4.0, DELTA, 150)
    bound = history_failure(law, req, LOWER, UPPER)
    assert bound < 1
    rng = np.random.default_rng(2)
    reps = 20000
    for mean in (UPPER, 0.0, 37.0):
        n1 = draws(rng, "laplace", law.scales[0], reps)
        n2 = draws(rng, "laplace", law.scales[1], reps)
        s = (mean * 150 + 150 + n1) - (150 + n2)
        c = 150 + n2
        est = np.clip(np.where(c > 0, s / np.where(c > 0, c, 1), 50.0), LOWER, UPPER)
        assert np.mean(np.abs(est - mean) > 4.0) <= bound + 4 * math.sqrt(bound * (1 - bound) / reps)


def test_count_floor_holds_its_level():
    law = RatioLaw(
        np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([100.0, 4.0]), ("laplace", "discrete_laplace")
    )
    rng = np.random.default_rng(4)
    c = 75 + draws(rng, "discrete_laplace", 4.0, 2000)
    floors = np.array([count_floor(float(x), law, 0.05) for x in c])
    assert np.mean(floors > 75) <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / 2000)


def test_accuracy_states_its_assumption():
    assert MeanAccuracy(5.0, 0.05, 200).assumption() == "assuming at least 200 values in the box"
    with pytest.raises(Exception, match="assumes at least N values"):
        MeanAccuracy(5.0, 0.05, 0)
