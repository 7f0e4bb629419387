"""The Hellinger distance, the one-record step and the sensitivities of docs/dirichlet.md §2 and §4."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import gammaln

from dpdesk.engine.dirichlet.candidates import CandidateSet, compositions
from dpdesk.engine.dirichlet.hellinger import global_sensitivity, hellinger, log_g, step_hellinger
from dpdesk.engine.dirichlet.smooth import calibrate, local_bound, smooth_bound, smooth_epsilon
from dpdesk.engine.errors import DpdeskError


def _beta_hellinger_by_quadrature(a: tuple[float, float], b: tuple[float, float]) -> float:
    f = lambda x: math.sqrt(stats.beta.pdf(x, *a) * stats.beta.pdf(x, *b))
    bc, _ = integrate.quad(f, 0, 1, limit=200)
    return math.sqrt(max(0.0, 1 - bc))


@pytest.mark.parametrize(
    "a,b", [((5, 5), (4, 6)), ((1, 1), (3, 2)), ((0.5, 2.0), (2.5, 7.0)), ((21, 21), (22, 20))]
)
def test_hellinger_matches_numerical_integration(a, b):
    assert float(hellinger(np.array(a, float), np.array(b, float))) == pytest.approx(
        _beta_hellinger_by_quadrature(a, b), abs=1e-7
    )


def test_hellinger_reproduces_the_notes_distances():
    # the notes' §3.4.1 table: Beta(5,5) against 1..4 steps away
    truth = np.array([5.0, 5.0])
    notes = [0.233629480709, 0.457635865026, 0.662174391701, 0.83737258593]
    for j, h in enumerate(notes, start=1):
        assert float(hellinger(truth, np.array([5.0 - j, 5.0 + j]))) == pytest.approx(h, abs=1e-10)
    assert float(hellinger(truth, truth)) == 0.0


def test_hellinger_is_a_metric_on_random_dirichlets():
    rng = np.random.default_rng(3)
    pts = rng.uniform(0.3, 30, size=(40, 3))
    d = hellinger(pts[:, None, :], pts[None, :, :])
    assert np.allclose(d, d.T) and np.all(d >= 0) and np.all(d <= 1) and np.allclose(np.diag(d), 0)
    # triangle inequality over all triples
    assert np.all(d[:, :, None] <= d[:, None, :] + d.T[None, :, :] + 1e-12)  # d[i,j] <= d[i,l] + d[l,j]


def test_step_closed_form_equals_general_formula():
    rng = np.random.default_rng(4)
    for _ in range(50):
        q = rng.uniform(0.2, 60, size=int(rng.integers(2, 6)))
        i = int(rng.integers(q.size))
        e = np.zeros(q.size)
        e[i] = 1
        assert float(step_hellinger(q[i], q.sum())) == pytest.approx(float(hellinger(q, q + e)), abs=1e-10)


def test_log_g_is_accurate_and_increasing():
    x = np.concatenate([np.linspace(0.05, 80, 4000), np.geomspace(81, 1e9, 200)])
    lg = log_g(x)
    assert np.all(np.diff(lg) > 0) and np.all(lg < 0)  # Lemma 2.2: g increasing, below 1
    small = x <= 30
    ref = gammaln(x[small] + 0.5) - gammaln(x[small]) - 0.5 * np.log(x[small])
    assert np.allclose(lg[small], ref, rtol=1e-12, atol=1e-15)
    # large x: -1/(8x) + 1/(192 x^3) is the independent leading expansion of ln g
    big = x >= 1e4
    assert np.allclose(lg[big], -1 / (8 * x[big]) + 1 / (192 * x[big] ** 3), rtol=1e-9)
    # the switch between the two forms is continuous
    assert float(log_g(np.array([40.0 - 1e-9]))[0]) == pytest.approx(
        float(log_g(np.array([40.0 + 1e-9]))[0]), rel=1e-9
    )


def test_global_sensitivity_is_the_supremum_of_all_steps():
    prior = np.array([1.0, 2.5, 0.7])
    gs = global_sensitivity(prior)
    assert gs == pytest.approx(math.sqrt(1 - math.exp(gammaln(1.2) - gammaln(0.7) - 0.5 * math.log(0.7))))
    steps = [
        float(hellinger(prior + c, prior + c + np.eye(3)[i]))
        for c in itertools.product(range(6), repeat=3)
        for i in range(3)
    ]
    assert max(steps) < gs
    # approached by emptying the smallest-prior category and growing the others
    far = np.array([1e6, 1e6, 0.0])
    assert float(step_hellinger(prior[2] + far[2], (prior + far).sum())) == pytest.approx(gs, rel=1e-5)


def _brute_smooth(prior, c, beta, reach):
    best = 0.0
    for cp in itertools.product(*[range(max(0, ci - reach), ci + reach + 1) for ci in c]):
        d = int(np.abs(np.array(cp) - c).sum())
        if d <= reach:
            best = max(best, local_bound(prior, np.array(cp)) * math.exp(-beta * d))
    return best


def test_local_bound_is_the_largest_neighbour_distance():
    prior = np.array([1.0, 1.0, 2.0])
    c = np.array([3, 0, 5])
    neighbours = [c + e for e in np.eye(3, dtype=int)] + [
        c - e for e in np.eye(3, dtype=int) if (c - e).min() >= 0
    ]
    direct = max(float(hellinger(prior + c, prior + n)) for n in neighbours)
    assert local_bound(prior, c) == pytest.approx(direct, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_smooth_bound_equals_brute_force_search(seed):
    rng = np.random.default_rng(seed)
    k = 2 if seed % 2 else 3
    prior = rng.uniform(0.4, 3, size=k)
    c = rng.integers(0, 6, size=k)
    beta = float(rng.uniform(0.4, 1.2))  # large enough that the brute force's reach covers the maximum
    reach = 14 if k == 2 else 8
    assert math.exp(-beta * (reach + 1)) * global_sensitivity(prior) < local_bound(prior, c)
    assert smooth_bound(prior, c, beta) == pytest.approx(_brute_smooth(prior, c, beta, reach), rel=1e-12)


def test_smooth_bound_is_beta_smooth_and_bounds_local_sensitivity():
    prior = np.array([1.0, 1.0, 1.0])
    beta = 0.05
    for c in itertools.product(range(7), repeat=3):
        c = np.array(c)
        s = smooth_bound(prior, c, beta)
        assert local_bound(prior, c) <= s <= global_sensitivity(prior)
        for i in range(3):
            up = c.copy()
            up[i] += 1
            assert s <= math.exp(beta) * smooth_bound(prior, up, beta) * (1 + 1e-12)
            assert smooth_bound(prior, up, beta) <= math.exp(beta) * s * (1 + 1e-12)
    assert smooth_bound(prior, np.array([2, 2, 2]), 0.0) == global_sensitivity(prior)


def test_local_bound_exceeds_the_utility_change_on_any_candidate_set():
    prior = np.array([1.0, 2.0])
    cs = CandidateSet(prior, 7, 7)
    for c in itertools.product(range(9), repeat=2):
        c = np.array(c)
        u = -hellinger(prior + c, cs.parameters())
        for e in np.eye(2, dtype=int):
            u2 = -hellinger(prior + c + e, cs.parameters())
            assert np.abs(u - u2).max() <= local_bound(prior, c) + 1e-12
            assert np.abs(u - u2).max() <= local_bound(prior, c + e) + 1e-12


def test_calibration_meets_the_budget_exactly():
    cal = calibrate(0.8, 5e-4, 13, split=0.5)
    assert cal.eps0 == pytest.approx(0.4)
    assert smooth_epsilon(cal.eps0, cal.beta, 13, 5e-4) == pytest.approx(0.8, rel=1e-12)
    # the notes' beta for the same setting, ln(1 + eps/(2 ln(2N/delta))), is close to ours
    notes_beta = math.log(1 - 0.8 / (2 * math.log(5e-4 / (2 * 13))))
    assert notes_beta == pytest.approx(cal.beta, rel=0.1)
    for bad in [dict(alpha=0.0, delta=1e-3), dict(alpha=1.0, delta=0.0), dict(alpha=1.0, delta=1.0)]:
        with pytest.raises(DpdeskError):
            calibrate(bad["alpha"], bad["delta"], 10)


def test_candidate_sets():
    assert compositions(3, 3).shape == (10, 3)
    assert np.all(compositions(5, 4).sum(axis=1) == 5)
    assert len({tuple(r) for r in compositions(5, 4)}) == math.comb(8, 3)
    cs = CandidateSet(np.array([1.0, 1.0, 1.0]), 12, 12)
    assert cs.count == math.comb(14, 2) == cs.parameters().shape[0] and cs.exact
    assert np.allclose(cs.parameters().sum(axis=1), 15)
    coarse = CandidateSet.for_size(np.ones(5), 1000, max_candidates=50_000)
    assert coarse.count <= 50_000 < math.comb(coarse.resolution + 5, 4)
    assert np.allclose(coarse.parameters().sum(axis=1), 1005) and not coarse.exact
    with pytest.raises(DpdeskError, match="prior"):
        CandidateSet(np.array([1.0]), 3, 3)
    with pytest.raises(DpdeskError, match="prior"):
        CandidateSet(np.array([1.0, -1.0]), 3, 3)
    with pytest.raises(DpdeskError, match="size"):
        CandidateSet(np.array([1.0, 1.0]), -1, 1)
    assert CandidateSet(np.array([1.0, 2.0]), 0, 0).count == 1
