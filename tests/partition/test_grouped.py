"""The grouped discrete-Laplace error law: exact on a lattice, a rigorous bracket elsewhere."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.partition.grouped import GroupedPosterior, discrete_variance, grouped_terms


def _dl_pmf(b: float, R: int = 400) -> np.ndarray:
    p = math.exp(-1 / b)
    k = np.arange(-R, R + 1)
    return (1 - p) / (1 + p) * p ** np.abs(k)


def test_lattice_sums_are_exact_point_masses():
    b = 3.0
    # S = 2·(N1 + N2 + N3) + 4·N4: atoms on 2Z, reference by direct convolution
    one = _dl_pmf(b)
    three = np.convolve(np.convolve(one, one), one)
    ref = np.zeros(2 * (three.size - 1) + 4 * (one.size - 1) + 1)
    s3 = np.zeros(2 * (three.size - 1) + 1)
    s3[::2] = three
    s1 = np.zeros(4 * (one.size - 1) + 1)
    s1[::4] = one
    ref = np.convolve(s3, s1)
    z = np.arange(ref.size) - ref.size // 2
    post = GroupedPosterior([2.0, 4.0], [3, 1], b)
    assert post.slack == 0.0
    for e in (0.0, 1.9, 2.0, 7.0, 20.0):
        lo, hi = post.prob_within(e)
        want = ref[np.abs(z) <= e].sum()
        assert lo <= want + 1e-12 and want <= hi + 1e-12 and hi - lo < 1e-9
    assert post.std == pytest.approx(math.sqrt(discrete_variance(b) * (3 * 4 + 16)))


def test_non_lattice_bracket_holds_the_truth():
    # Monte Carlo reference with 4·10⁵ draws (±0.0024 at 3 sd): the bracket must contain it within that
    rng = np.random.default_rng(0)
    u, m, b = np.array([1.0, 0.37, 0.123]), np.array([3, 10, 40]), 3.0
    post = GroupedPosterior(u, m, b)
    q = -math.expm1(-1 / b)
    n = 400_000
    s = np.zeros(n)
    for uj, mj in zip(u, m):
        s += uj * (rng.geometric(q, (n, mj)) - rng.geometric(q, (n, mj))).sum(axis=1)
    tol = 3 * math.sqrt(0.25 / n)
    for e in (1.0, 5.0, 10.0, 18.0):
        lo, hi = post.prob_within(e)
        rate = float(np.mean(np.abs(s) <= e))
        assert lo - tol <= rate <= hi + tol
        assert hi - lo < 0.05
    assert post.slack <= 0.02 * post.std * (
        1 + 1e-12
    )  # half-widths are conservative by at most 2 % of the sd
    e95, conf = post.halfwidth(0.05)
    assert conf >= 0.95 and np.mean(np.abs(s) <= e95) >= 0.95 - tol
    assert e95 <= np.quantile(np.abs(s), 0.95) + 2 * post.slack + post.spacing


def test_grouped_terms_merges_equal_magnitudes():
    v, m = grouped_terms(np.array([0.5, -0.5, 0.0, 1 / 3, 1 / 3 + 1e-15]))
    assert v.tolist() == pytest.approx([1 / 3, 0.5]) and m.tolist() == [2, 2]


def test_bad_inputs():
    with pytest.raises(DpdeskError):
        GroupedPosterior([0.0], [1], 1.0)
    with pytest.raises(DpdeskError):
        GroupedPosterior([1.0], [1], -1.0)
    with pytest.raises(DpdeskError, match="delta"):
        GroupedPosterior([1.0], [1], 1.0).halfwidth(1.5)


def test_engine_posterior_is_exact_on_a_lattice_and_conservative_elsewhere():
    lattice = GroupedPosterior([1.0], [12], 3.0)
    post = lattice.to_posterior(10.0)
    assert (
        post.lattice and post.std == pytest.approx(lattice.std) and post.total == pytest.approx(1.0, abs=1e-9)
    )
    for e in (0.0, 3.0, 7.5, 20.0):
        lo, hi = lattice.prob_within(e)
        assert lo - 1e-9 <= post.central_mass(e) <= hi + 1e-9
    ci = post.interval(0.05)
    assert ci.high - 10.0 == lattice.halfwidth(0.05)[0]
    rough = GroupedPosterior([1.0, 0.37, 0.123], [3, 10, 40], 3.0)
    post = rough.to_posterior(0.0)
    for e in (1.0, 5.0, 10.0, 18.0):
        assert post.central_mass(e) <= rough.prob_within(e)[0] + rough.lost + 1e-12  # never more than proven
    assert post.interval(0.05).confidence >= 0.95
