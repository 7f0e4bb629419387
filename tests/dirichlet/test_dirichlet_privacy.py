"""Privacy of the posterior releases by exact enumeration on small add/remove neighbours.

For every table ``c`` in a grid and every neighbour ``c + e_i``, both directions: pure DP needs
``P_x(r) ≤ e^α P_y(r)`` for every output ``r``; (α, δ)-DP needs
``Σ_r max(0, P_x(r) − e^α P_y(r)) ≤ δ`` (docs/dirichlet.md §2–§5).
"""

from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from dpdesk.engine.dirichlet.candidates import CandidateSet
from dpdesk.engine.dirichlet.mechanisms import (
    ExponentialGlobal,
    ExponentialSmooth,
    LaplaceCounts,
    NoisySize,
)

_spec = importlib.util.spec_from_file_location(
    "dirichlet_baselines", Path(__file__).resolve().parents[2] / "benchmarks" / "dirichlet_baselines.py"
)
baselines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(baselines)

PRIORS = [(1.0, 1.0), (0.5, 2.0), (1.0, 1.0, 1.0), (3.0, 0.7, 1.0)]


def _pairs(k: int, top: int):
    """Every table with counts < top and each of its add-one neighbours."""
    for c in itertools.product(range(top), repeat=k):
        c = np.array(c)
        for i in range(k):
            yield c, c + np.eye(k, dtype=np.int64)[i]


def _max_log_ratio(p: np.ndarray, q: np.ndarray) -> float:
    return float(max(np.max(np.log(p / q)), np.max(np.log(q / p))))


def _delta_both(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    e = math.exp(alpha)
    return float(max(np.maximum(0, p - e * q).sum(), np.maximum(0, q - e * p).sum()))


@pytest.mark.parametrize("prior", PRIORS)
def test_global_exponential_is_pure_dp(prior):
    prior = np.array(prior)
    k = prior.size
    for cs in (CandidateSet(prior, 0, 0), CandidateSet(prior, 4, 4), CandidateSet(prior, 9, 3)):
        for alpha in (0.3, 0.8, 2.0):
            mech = ExponentialGlobal(cs, alpha)
            worst = max(_max_log_ratio(mech.probabilities(x), mech.probabilities(y)) for x, y in _pairs(k, 6))
            assert worst <= alpha * (1 + 1e-12)


@pytest.mark.parametrize("prior", PRIORS)
def test_smooth_exponential_meets_alpha_delta(prior):
    prior = np.array(prior)
    k = prior.size
    for cs in (CandidateSet(prior, 3, 3), CandidateSet(prior, 7, 7)):
        for alpha, delta in ((0.8, 5e-4), (0.3, 1e-2), (2.0, 1e-3)):
            mech = ExponentialSmooth(cs, alpha, delta)
            assert mech.alpha == alpha and mech.delta == delta
            for x, y in _pairs(k, 6 if k == 2 else 4):
                assert _delta_both(mech.probabilities(x), mech.probabilities(y), alpha) <= delta


def test_local_sensitivity_exponential_is_not_private():
    """The notes' §2.2 on a table where one record changes the local sensitivity 2.4-fold."""
    prior = np.array([1e-4, 3.0])
    alpha = 0.5
    mech = baselines.LocalSensitivityExponential(CandidateSet(prior, 150, 150), alpha)
    x, y = np.array([1, 150]), np.array([2, 150])
    ratio = _max_log_ratio(mech.probabilities(x), mech.probabilities(y))
    assert ratio > 1.05 * alpha
    # the shipped mechanisms on the same neighbours keep their guarantees
    glob = ExponentialGlobal(CandidateSet(prior, 150, 150), alpha)
    assert _max_log_ratio(glob.probabilities(x), glob.probabilities(y)) <= alpha
    smooth = ExponentialSmooth(CandidateSet(prior, 150, 150), alpha, 1e-3)
    assert _delta_both(smooth.probabilities(x), smooth.probabilities(y), alpha) <= 1e-3


def test_the_notes_candidate_set_reveals_the_count():
    """Candidates summing to n + Σprior: neighbours have disjoint supports, so δ = 1."""
    prior = np.array([1.0, 1.0])
    x, y = np.array([3, 2]), np.array([3, 3])
    px = ExponentialGlobal(CandidateSet(prior, int(x.sum()), int(x.sum())), 0.8)
    py = ExponentialGlobal(CandidateSet(prior, int(y.sum()), int(y.sum())), 0.8)
    support_x = {tuple(r) for r in px.candidates.parameters()}
    support_y = {tuple(r) for r in py.candidates.parameters()}
    assert not support_x & support_y
    # Pr_x[output in support_x] = 1 while Pr_y[...] = 0: no ε satisfies P_x ≤ e^ε P_y + δ with δ < 1
    assert px.probabilities(x).sum() == pytest.approx(1.0)


def test_laplace_counts_are_pure_dp():
    alpha = 0.7
    mech = LaplaceCounts(np.array([1.0, 2.0, 0.5]), alpha)
    upto = 40
    for x, y in _pairs(3, 5):
        for i in range(3):  # released pseudo-counts are independent per category: compare marginals
            p, q = mech.marginal(int(x[i]), upto), mech.marginal(int(y[i]), upto)
            assert _max_log_ratio(p, q) <= alpha * (1 + 1e-12)


def test_two_stage_release_composes():
    """Noisy size (α_s) then the exponential mechanism on R(m): every joint output within e^(α_s+α)."""
    prior = np.array([1.0, 1.0])
    a_size, alpha, delta = 0.4, 0.6, 1e-3
    size = NoisySize(a_size)
    for x, y in _pairs(2, 5):
        top = int(max(x.sum(), y.sum())) + 6
        sx, sy = size.pmf(int(x.sum()), top), size.pmf(int(y.sum()), top)
        assert _max_log_ratio(sx, sy) <= a_size * (1 + 1e-12)
        worst_pure, excess = 0.0, 0.0
        for m in range(top + 1):
            cs = CandidateSet(prior, m, m)
            g = ExponentialGlobal(cs, alpha)
            jx, jy = sx[m] * g.probabilities(x), sy[m] * g.probabilities(y)
            worst_pure = max(worst_pure, _max_log_ratio(jx, jy))
            s = ExponentialSmooth(cs, alpha, delta)
            kx, ky = sx[m] * s.probabilities(x), sy[m] * s.probabilities(y)
            excess += _delta_both(kx, ky, a_size + alpha)
        assert worst_pure <= (a_size + alpha) * (1 + 1e-12)
        assert excess <= delta


def test_scores_never_leave_the_mechanism_description():
    cs = CandidateSet(np.array([1.0, 1.0, 1.0]), 5, 5)
    mech = ExponentialSmooth(cs, 0.8, 1e-3)
    desc = mech.describe()
    assert set(desc) == {"mechanism", "alpha", "delta", "candidates", "eps0", "beta", "split"}
    assert desc["candidates"] == {"prior": [1.0, 1.0, 1.0], "size": 5, "resolution": 5, "count": 21}
    # the description is the same for any data: it cannot carry the smooth sensitivity
    assert mech.describe() == ExponentialSmooth(cs, 0.8, 1e-3).describe()


def test_enumeration_detects_an_undersized_sensitivity():
    """The pure-DP check has power: a third of the global sensitivity breaks it on these tables."""

    class Undersized(ExponentialGlobal):
        def _scale(self, counts):
            return 2.0 * self.sensitivity / 3 / self.alpha

    mech = Undersized(CandidateSet(np.array([1.0, 1.0]), 4, 4), 0.8)
    assert max(_max_log_ratio(mech.probabilities(x), mech.probabilities(y)) for x, y in _pairs(2, 6)) > 0.8
