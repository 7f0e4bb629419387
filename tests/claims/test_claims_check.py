"""Watched claims: reading Pr(C), what touches a claim, the crossing risk, bad claims, the odds bound."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from dpdesk.engine import cube as cube_module
from dpdesk.engine.claims.claim import Claim, ClaimError, read_claim
from dpdesk.engine.claims.control import check_release, crossing_risk
from dpdesk.engine.claims.odds import odds_bound
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.inference.posterior import posterior
from dpdesk.engine.queries.query import query_from_vector


def v(*coefs):
    return query_from_vector(list(coefs), (len(coefs),))


def claim(low, high, tau=0.8, risk=0.05, query=None):
    return Claim(query if query is not None else v(0, 1), low, high, tau, risk, name="cell 2")


# -- bad claims ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "low, high, tau, risk, words",
    [
        (5, 3, 0.8, 0.05, "L₀ (5) is greater than U₀ (3)"),
        (None, None, 0.8, 0.05, "give L₀, U₀ or both"),
        (0, 3, 0.0, 0.05, "threshold τ (0.0) must lie strictly between 0 and 1"),
        (0, 3, 1.0, 0.05, "threshold τ (1.0)"),
        (0, 3, 0.8, 0.0, "risk budget (0.0)"),
        (0, 3, 0.8, 1.5, "risk budget (1.5)"),
        (0, math.nan, 0.8, 0.05, "U₀ (nan) must be a finite number"),
    ],
)
def test_a_bad_claim_is_refused_in_one_line_naming_the_problem(low, high, tau, risk, words):
    with pytest.raises(ClaimError) as info:
        claim(low, high, tau, risk)
    msg = str(info.value)
    assert "\n" not in msg and words in msg and msg.startswith("cell 2: ")


# -- reading Pr(C) ------------------------------------------------------------------------------------
def test_pr_c_is_the_posterior_mass_of_the_interval():
    h = History((2,), [HistoryRow(v(0, 1), 0.5, 2.4, "laplace")])
    r = read_claim(h, claim(0, 3))
    # one Laplace row of scale 2: θ = 2.4 − N, so Pr(0 ≤ θ ≤ 3) = F(2.4) − F(−0.6) in closed form
    F = lambda z: 0.5 * math.exp(z / 2) if z < 0 else 1 - 0.5 * math.exp(-z / 2)
    assert r.estimable and r.probability == pytest.approx(F(2.4) - F(-0.6), abs=1e-6)
    assert r.over_threshold is (r.probability >= 0.8)
    one_sided = read_claim(h, claim(None, 3)).probability
    assert one_sided == pytest.approx(1 - F(-0.6), abs=1e-6)  # Pr(θ ≤ 3) = Pr(N ≥ −0.6)


def test_a_claim_on_an_unestimable_query_is_the_worst_case():
    h = History((2,), [HistoryRow(v(1, 1), 1.0, 0.0)])
    r = read_claim(h, claim(None, 3))
    assert not r.estimable and r.probability is None and r.worst_case and r.over_threshold
    assert "not estimable" in r.describe()


# -- touching ---------------------------------------------------------------------------------------
def test_a_release_touches_a_claim_when_it_changes_the_posterior_not_when_it_shares_cells():
    h = History((2,), [HistoryRow(v(1, 1), 1.0, 2.0)])
    c = claim(0, 3)
    assert not check_release(h, c, v(1, 1), 1.0).touches  # shares cell 2, reveals nothing of it alone
    revealing = check_release(h, c, v(1, 0), 1.0)  # [1, 1] − [1, 0] is cell 2
    assert revealing.touches
    # once cell 2 is estimable, another answer on it moves the posterior again
    h.append(HistoryRow(v(0, 1), 1.0, 1.0))
    assert check_release(h, c, v(0, 1), 1.0).touches
    # a third cell's count shares nothing and leaves θ's BLUE as it is
    h3 = History((3,), [HistoryRow(v(0, 1, 0), 1.0, 1.0)])
    assert not check_release(h3, claim(0, 3, query=v(0, 1, 0)), v(0, 0, 1), 5.0).touches


def test_a_release_that_does_not_touch_leaves_pr_c_exactly_as_it_was_and_is_always_allowed():
    h = History((3,), [HistoryRow(v(0, 1, 0), 0.5, 2.0), HistoryRow(v(1, 1, 0), 0.5, 9.0)])
    c = claim(0, 3, risk=1e-6, query=v(0, 1, 0))
    before = read_claim(h, c).probability
    check = check_release(h, c, v(0, 0, 1), 10.0, spent=c.risk)  # no risk left at all
    assert check.allowed and not check.touches and check.risk == 0.0
    h.append(HistoryRow(v(0, 0, 1), 10.0, 4.0))
    assert read_claim(h, c).probability == before


# -- the crossing risk against a brute-force oracle --------------------------------------------------
def _laplace_cdf(z, b):
    return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0) / b), 1 - 0.5 * np.exp(-np.maximum(z, 0) / b))


@pytest.mark.parametrize(
    "low, high, b", [(0.0, 3.0, 0.5), (0.0, 3.0, 0.9), (10.0, 30.0, 4.0), (None, 3.0, 0.7)]
)
def test_crossing_risk_is_the_supremum_over_true_values_found_by_brute_force(low, high, b):
    """One Laplace row of scale b: g(c) = Pr(c + Z ∈ C) in closed form, S and the sup on fine grids."""
    c = claim(low, high, tau=0.8)
    shape = posterior(0.0, [1.0], [b], "laplace")
    lo = -40.0 if low is None else low
    cs = np.arange(lo - 10 * b, high + 10 * b, 1e-3)
    g = _laplace_cdf(high - cs, b) - (0.0 if low is None else _laplace_cdf(low - cs, b))
    inside = cs[g >= 0.8]
    truths = (0.0, high) if low is None else (low, high)  # a count: θ ≥ 0
    ts = np.linspace(truths[0], truths[1], 2001)
    s1 = -math.inf if low is None else inside.min()
    brute = (_laplace_cdf(inside.max() - ts, b) - (0.0 if low is None else _laplace_cdf(s1 - ts, b))).max()
    assert crossing_risk(shape, c, truths) == pytest.approx(brute, abs=2e-3)


def test_a_one_sided_claim_without_a_public_bound_on_its_open_side_is_certain_to_cross():
    shape = posterior(0.0, [1.0], [1.0], "laplace")
    assert crossing_risk(shape, claim(5, None), (5.0, math.inf)) == pytest.approx(1.0, abs=1e-6)


def test_a_release_too_noisy_to_ever_reach_the_threshold_has_no_risk():
    h = History((2,))
    check = check_release(h, claim(0, 3), v(0, 1), 0.05, family="laplace")  # scale 20 ≫ the claim's width
    assert check.touches and check.risk == 0.0 and check.allowed


def test_the_decision_spends_only_what_is_left_and_says_why():
    h = History((2,))
    c = claim(0, 3, risk=0.5)
    sharp = check_release(h, c, v(0, 1), 2.0, family="laplace")
    assert 0 < sharp.risk < 1
    assert sharp.allowed == (sharp.risk <= 0.5)
    late = check_release(h, c, v(0, 1), 2.0, family="laplace", spent=0.5 - sharp.risk / 2)
    assert not late.allowed and "declined" in late.reason and "\n" not in late.reason


# -- public inputs only ------------------------------------------------------------------------------
def test_the_check_never_reads_the_table(monkeypatch):
    """It takes no cube, and builds or reads none: every way into a cube raises during the check."""
    names = set(inspect.signature(check_release).parameters) | set(inspect.signature(read_claim).parameters)
    assert names == {"history", "claim", "query", "alpha", "spent", "family", "table_size", "method"}

    def refuse(*_a, **_k):
        raise AssertionError("the claim check touched the table")

    monkeypatch.setattr(cube_module, "build_cube", refuse)
    monkeypatch.setattr(cube_module.Cube, "__post_init__", refuse)
    for member in ("flat", "total"):
        monkeypatch.setattr(cube_module.Cube, member, property(refuse))
    h = History((2,), [HistoryRow(v(1, 1), 1.0, 2.0)])
    assert check_release(h, claim(0, 3), v(1, 0), 3.0).touches
    read_claim(h, claim(0, 3))


def test_the_check_reads_no_released_value():
    """Two histories of the same structure with different answers give the same verdict."""
    rows = [(v(1, 1), 1.0), (v(0, 1), 0.3)]
    a = History((2,), [HistoryRow(q, al, 2.0) for q, al in rows])
    b = History((2,), [HistoryRow(q, al, 37.0) for q, al in rows])
    ca, cb = (check_release(h, claim(0, 3), v(1, 0), 2.0) for h in (a, b))
    assert (ca.risk, ca.allowed, ca.touches) == (cb.risk, cb.allowed, cb.touches)


# -- the DP bound for one person ---------------------------------------------------------------------
def test_the_odds_bound_holds_for_the_exact_likelihood_ratio_of_a_release():
    """A Laplace answer on cell 0 at α: Alice in cell 0 (count k+1) vs absent (k) vs in cell 1."""
    h = History(
        (3,), [HistoryRow(v(1, 0, 0), 0.7, 3.2, "laplace"), HistoryRow(v(0, 1, 0), 0.4, 1.0, "laplace")]
    )
    costs = h.cell_costs
    ys = np.linspace(-20, 20, 4001)
    dens = lambda y, m, a: a / 2 * np.exp(-a * np.abs(y - m))
    # presence: the likelihood ratio of the cell-0 answer, k+1 vs k, is at most e^α and reaches it
    ratio = dens(ys, 4.0, 0.7) / dens(ys, 3.0, 0.7)
    bound = odds_bound(costs, [0])
    assert ratio.max() <= bound.factor * (1 + 1e-12) and ratio.max() == pytest.approx(bound.factor)
    # attribute: cell 0 vs cell 1 changes both answers; the joint ratio reaches e^{B_0 + B_1}
    joint = (dens(ys[:, None], 4.0, 0.7) * dens(ys[None, :], 1.0, 0.4)) / (
        dens(ys[:, None], 3.0, 0.7) * dens(ys[None, :], 2.0, 0.4)
    )
    attr = odds_bound(costs, [0], [1])
    assert attr.exponent == pytest.approx(0.7 + 0.4)
    assert joint.max() <= attr.factor * (1 + 1e-12) and joint.max() == pytest.approx(attr.factor)
    assert attr.posterior_at_most(0.5) == pytest.approx(math.exp(1.1) / (1 + math.exp(1.1)))
    assert odds_bound(costs, [2]).factor == 1.0  # nothing released on cell 2: prior odds stand


def test_an_open_integer_claim_without_a_public_bound_is_a_sure_crossing():
    # θ ≥ 5 for a count, no declared table size: the truth may lie arbitrarily deep inside the claim
    h = History((2,), [])
    chk = check_release(h, claim(5, None, tau=0.5, risk=0.5), v(0, 1), 1.0, family="discrete_laplace")
    assert chk.touches and not chk.allowed and chk.risk > 0.99
    bounded = check_release(
        h, claim(5, None, tau=0.5, risk=0.5), v(0, 1), 1.0, family="discrete_laplace", table_size=8
    )
    assert bounded.touches and bounded.risk <= chk.risk


@pytest.mark.parametrize(
    "centre, step", [(0.0, 1.0), (37.0, 1.0), (-1234567.0, 1.0), (0.25, 0.5), (3.0e8, 2.0)]
)
def test_lattice_counts_by_arithmetic_equal_numpy_searchsorted(centre, step):
    """The claim check's lattice sums index an evenly spaced grid by arithmetic; the counts must be
    those of a binary search, including queries exactly on, a hair beside, and far outside the points."""
    from dpdesk.engine.claims.control import _lattice_count

    grid = centre + step * np.arange(-300, 301)
    rng = np.random.default_rng(7)
    on = grid[rng.integers(0, grid.size, 200)]
    hair = 1e-9 * step
    x = np.concatenate(
        [
            on,
            on + hair,
            on - hair,
            np.nextafter(on, np.inf),
            np.nextafter(on, -np.inf),
            rng.uniform(grid[0] - 50 * step, grid[-1] + 50 * step, 400),
            [grid[0] - 1e6 * step, grid[-1] + 1e6 * step],
        ]
    )
    for side in ("left", "right"):
        assert np.array_equal(_lattice_count(grid, step, x, side), np.searchsorted(grid, x, side=side)), side


@pytest.mark.parametrize(
    "low, high, truths",
    [
        (0.0, 40.0, [float(t) for t in range(41)]),
        (10.0, None, [float(t) for t in range(-5, 60, 3)]),
        (None, 12.0, [3.0, 7.0, 12.0, 30.0]),
        (5.0, 9.0, [0.5, 4.5, 9.5]),  # off the lattice: each truth summed on its own
    ],
)
def test_the_lattice_risk_over_many_truths_equals_the_sum_truth_by_truth(low, high, truths):
    """The lattice crossing risk, evaluated once over the union lattice of centres, must equal the
    direct sum Σ_z Pr(Z = z)·[Pr(C | θ̂' = t + z) ≥ τ] computed truth by truth with binary searches."""
    from dpdesk.engine.claims.control import _lattice_risk

    rows = [
        HistoryRow(v(0, 1), 0.4, 0.0, "discrete_laplace"),
        HistoryRow(v(1, 1), 0.3, 0.0, "discrete_laplace"),
    ]
    est = History((2,), rows).estimate(v(0, 1))
    shape = posterior(0.0, est.coefficients, est.noise_scales, list(est.families), method="fft")
    assert shape.lattice
    c = claim(low, high, tau=0.6)
    lo = -math.inf if low is None else low
    hi = math.inf if high is None else high

    def pr_c(centre):
        points = centre + shape.grid
        return shape.mass[(points >= lo - 1e-9) & (points <= hi + 1e-9)].sum()

    expected = max(
        sum(m for z, m in zip(shape.grid, shape.mass) if pr_c(t + z) >= c.threshold) for t in truths
    )
    assert _lattice_risk(shape, c, truths) == pytest.approx(expected, abs=1e-12)
