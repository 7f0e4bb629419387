"""Maximum entropy from released answers (seed §4): the fit solves the dual it states, on a domain small
enough to solve it densely, and its synthetic rows follow the fitted distribution.

The oracle is independent of the particle solver: the same box-constrained dual (seed Eq. 37) over
all 60 cells by L-BFGS-B with exact expectations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.estimates.kernel import LocalQuery
from dpdesk.engine.estimates.maxent import fit_maxent
from dpdesk.engine.estimates.released import Released
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE, LAPLACE
from dpdesk.engine.queries.query import Query, Term

SHAPE = (3, 4, 5)
PARTICLES = 30_000


def _marginal_rows(x, b, rng):
    """Every cell of the three 2-way marginals, released with Laplace noise of scale b."""
    qs, truth = [], []
    for axes in ((0, 1), (0, 2), (1, 2)):
        other = 3 - sum(axes)
        marg = x.sum(axis=other)
        for cell in np.ndindex(marg.shape):
            t = np.zeros(marg.shape)
            t[cell] = 1.0
            qs.append(LocalQuery(SHAPE, axes, t))
            truth.append(marg[cell])
    truth = np.array(truth)
    return Released.laplace(SHAPE, qs, truth + rng.laplace(0, b, truth.size), b)


def _dense_dual(rel, n, tau):
    """The seed's dual over every cell: max Σ w_i a_i/n − ln Z_w, |v_i| ≤ τ with w_i = v_i n / s_i."""
    s = np.sqrt(rel.variances / 2)
    F = np.array(
        [
            np.broadcast_to(
                q.table[tuple(slice(None) if d in q.axes else None for d in range(3))], SHAPE
            ).reshape(-1)
            for q in rel.queries
        ]
    )

    # solved in w (curvature Var_p(f) ≤ 1/4 in every direction) to a projected gradient of 1e-12
    def f(w):
        logit = w @ F
        lz = logsumexp(logit) - math.log(F.shape[1])
        p = np.exp(logit - logsumexp(logit))
        return -(w @ rel.answers / n - lz), -(rel.answers / n - F @ p)

    box = tau * n / s
    res = minimize(
        f,
        np.zeros(len(rel)),
        jac=True,
        method="L-BFGS-B",
        bounds=list(zip(-box, box)),
        options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 50000, "maxcor": 50},
    )
    w = res.x
    p = np.exp(w @ F - logsumexp(w @ F))
    return n * F @ p, p


def _table(rng):
    x = rng.poisson(rng.gamma(4.0, 50.0, SHAPE)).astype(float)
    x[0, 0, :] += 400  # structure a product distribution cannot have
    return x


@pytest.mark.calibration
def test_fit_matches_the_dense_dual_solution_and_synthetic_rows_follow_it():
    rng = np.random.default_rng(11)
    x = _table(rng)
    n = x.sum()
    rel = _marginal_rows(x, 2.0, rng)
    tau = 0.03
    want, p = _dense_dual(rel, n, tau)
    fit = fit_maxent(rel, table_size=n, tau=tau, particles=PARTICLES, seed=3)
    assert fit.converged, (fit.rounds, fit.ess, fit.max_gradient)
    # Monte Carlo error of n·p̂[f] from an effective sample of ESS·M particles: n·√(p(1−p)/(ESS·M));
    # five of those standard errors per released row
    q = np.clip(want / n, 1e-6, 1)
    tol = 5 * n * np.sqrt(q * (1 - q) / (fit.ess * PARTICLES))
    assert np.all(np.abs(fit.expected - want) <= tol), np.max(np.abs(fit.expected - want) / tol)
    # the box binds: the fit is *not* consistent with the answers (seed Eqs. 26, 37)
    assert np.max(np.abs(fit.misfit(rel.answers))) > 1.0
    assert np.max(np.abs(fit.scaled_weights)) == pytest.approx(tau, rel=1e-6)
    rows = fit.sample(40_000, np.random.default_rng(5))
    assert rows.shape == (40_000, 3) and rows.min() >= 0 and np.all(rows.max(axis=0) < np.array(SHAPE))
    freq = np.bincount(np.ravel_multi_index(rows.T, SHAPE), minlength=60) / 40_000
    # total variation from the exact fit: sampling alone gives about √(K/N)/2·√(2/π) ≈ 0.016
    # for K = 60 cells and N = 40 000 rows; twice that allows for the particle approximation
    assert 0.5 * np.abs(freq - p).sum() < 0.035


def test_range_queries_become_clique_tables_and_bad_inputs_are_named():
    rng = np.random.default_rng(13)
    x = _table(rng)
    n = x.sum()
    box = Query(SHAPE, terms=(Term(1.0, (np.array([1.0, 1, 0]), np.ones(4), np.array([0.0, 1, 1, 1, 0]))),))
    rel = Released.laplace(SHAPE, [box], [box.answer(x)], 1.0)
    fit = fit_maxent(rel, table_size=n, tau=50.0, particles=PARTICLES, seed=1)
    assert (
        abs(fit.misfit(rel.answers)[0])
        <= 0.05 * 1.01 + 5 * math.sqrt(n) / 1.0 / math.sqrt(fit.ess * PARTICLES) * 1.0
    )
    with pytest.raises(DpdeskError, match="tau"):
        fit_maxent(rel, table_size=n, tau=0.0)
    with pytest.raises(DpdeskError, match="table_size"):
        fit_maxent(rel, table_size=-1.0, tau=1.0)
    with pytest.raises(DpdeskError, match="rows"):
        fit.sample(0, rng)


def test_fourth_moments_of_the_noise_families_and_released_rows_from_history():
    for b in (0.7, 3.0):
        k = np.arange(-400, 401)
        p = math.exp(-1 / b)
        law = (1 - p) / (1 + p) * p ** np.abs(k)
        assert DISCRETE_LAPLACE.fourth_moment(b) == pytest.approx(float(np.sum(law * k**4.0)), rel=1e-10)
        assert DISCRETE_LAPLACE.variance(b) == pytest.approx(float(np.sum(law * k**2.0)), rel=1e-10)
    assert LAPLACE.fourth_moment(2.0) == pytest.approx(24 * 16)
    h = History(SHAPE)
    q = Query(SHAPE, terms=(Term(1.0, tuple(np.ones(k) for k in SHAPE)),))
    h.append(HistoryRow(q, alpha=0.5, answer=100.0, family="discrete_laplace"))
    rel = Released.from_history(h)
    assert rel.answers[0] == 100.0
    assert rel.variances[0] == pytest.approx(DISCRETE_LAPLACE.variance(2.0))
    assert rel.fourth_moments[0] == pytest.approx(DISCRETE_LAPLACE.fourth_moment(2.0))


def test_consistent_answers_remove_the_flat_directions_and_the_fit_converges_at_large_tau():
    """Noisy marginals violate the dependencies among their cells (each sums to n; two share a 1-way
    marginal). The projection restores them exactly; the dual is then bounded without the box, so the fit
    converges at any τ and is the dense dual's solution for the projected answers."""
    from dpdesk.engine.estimates.maxent import consistent_answers

    rng = np.random.default_rng(11)
    x = _table(rng)
    n = x.sum()
    rel = _marginal_rows(x, 2.0, rng)
    proj = consistent_answers(rel, n)
    blocks = np.split(proj, [12, 27])  # the (0,1), (0,2) and (1,2) marginals' cells, C order
    ab, ac, bc = blocks[0].reshape(3, 4), blocks[1].reshape(3, 5), blocks[2].reshape(4, 5)
    for m in (ab, ac, bc):
        assert m.sum() == pytest.approx(n, rel=1e-12)
    assert ab.sum(axis=1) == pytest.approx(ac.sum(axis=1), rel=1e-10)  # attribute 0's marginal, both ways
    assert ab.sum(axis=0) == pytest.approx(bc.sum(axis=1), rel=1e-10)  # attribute 1's
    assert ac.sum(axis=0) == pytest.approx(bc.sum(axis=0), rel=1e-10)  # attribute 2's
    assert np.sum(np.abs(rel.answers.sum() - 3 * n)) > 1.0  # the raw answers did not
    projected = Released(rel.shape, rel.queries, proj, rel.variances, rel.fourth_moments)
    for tau in (0.3, 3.0):
        fit = fit_maxent(rel, table_size=n, tau=tau, particles=PARTICLES, seed=3, consistent=True)
        assert fit.converged and fit.rounds <= 2, (tau, fit.rounds, fit.ess, fit.max_gradient)
        want, _ = _dense_dual(projected, n, tau)
        q = np.clip(want / n, 1e-6, 1)
        tol = 5 * n * np.sqrt(q * (1 - q) / (fit.ess * PARTICLES))  # as in the test above
        assert np.all(np.abs(fit.expected - want) <= tol), np.max(np.abs(fit.expected - want) / tol)
