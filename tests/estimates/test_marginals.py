"""Marginal-shaped histories: the closed-form consistent projection is the dense generalised least-squares
projection, and the max-entropy fit to released marginals is the dense dual's solution.

Oracles are independent of the code under test: a dense design matrix over every cell of a small domain
(least squares by ``numpy.linalg.lstsq``, the table size kept by a null-space parametrisation), the
engine's kernel BLUE (:func:`consistent_answers`), and the seed's dual solved over every cell.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.estimates.kernel import LocalQuery
from dpdesk.engine.estimates.marginal_fit import fit_marginals
from dpdesk.engine.estimates.marginals import Marginal, consistent_marginals
from dpdesk.engine.estimates.maxent import consistent_answers
from dpdesk.engine.estimates.released import Released

SHAPE = (3, 4, 2, 3)


def _operator(shape, axes):
    """The dense marginalisation matrix: cells of the marginal on ``axes`` × cells of the domain."""
    cells = np.array(list(np.ndindex(*shape)))
    dims = tuple(shape[a] for a in axes)
    rows = np.ravel_multi_index(tuple(cells[:, a] for a in axes), dims)
    out = np.zeros((math.prod(dims), cells.shape[0]))
    out[rows, np.arange(cells.shape[0])] = 1.0
    return out


def _dense_gls(shape, marginals, total=None):
    """min Σ_A ‖y_A − M_A x‖²/σ_A² over all x (with 1ᵀx = total if given); returns the fitted M_A x."""
    ops = [_operator(shape, mg.axes) for mg in marginals]
    w = np.concatenate([np.full(op.shape[0], 1 / math.sqrt(mg.variance)) for op, mg in zip(ops, marginals)])
    M = np.vstack(ops)
    y = np.concatenate([mg.table.reshape(-1) for mg in marginals])
    N = M.shape[1]
    if total is None:
        x, *_ = np.linalg.lstsq(w[:, None] * M, w * y, rcond=None)
    else:
        x0 = np.full(N, total / N)
        basis = np.linalg.svd(np.ones((1, N)))[2][1:].T  # the null space of 1ᵀ
        z, *_ = np.linalg.lstsq(w[:, None] * (M @ basis), w * (y - M @ x0), rcond=None)
        x = x0 + basis @ z
    fitted = M @ x
    return np.split(fitted, np.cumsum([op.shape[0] for op in ops])[:-1])


def _noisy(shape, x, axes_list, variances, rng):
    out = []
    for axes, v in zip(axes_list, variances):
        marg = x.sum(axis=tuple(d for d in range(len(shape)) if d not in axes))
        out.append(Marginal(axes, marg + rng.normal(0, math.sqrt(v), marg.shape), v))
    return out


@pytest.mark.parametrize("total", [None, "declared"])
def test_closed_form_projection_is_the_dense_weighted_least_squares(total):
    rng = np.random.default_rng(3)
    x = rng.poisson(30.0, SHAPE).astype(float)
    # nested and overlapping sets, one 3-way, unequal noise: the weights ω_A = 1/(σ_A² N_{A∖S}) matter
    axes = [(0, 1), (1, 2), (0, 2), (2, 3), (0, 1, 3), (3,)]
    margs = _noisy(SHAPE, x, axes, [4.0, 25.0, 9.0, 1.0, 16.0, 100.0], rng)
    n = x.sum() if total else None
    got = consistent_marginals(SHAPE, margs, n)
    want = _dense_gls(SHAPE, margs, n)
    for g, w, mg in zip(got, want, margs):
        assert g.shape == mg.table.shape
        np.testing.assert_allclose(g.reshape(-1), w, rtol=0, atol=1e-9 * x.sum())
    if total:
        assert all(g.sum() == pytest.approx(n, rel=1e-12) for g in got)
    # consistency: (0, 1) and (0, 1, 3) agree on (0, 1); (0, 2) and (0, 1, 3) on attribute 0
    np.testing.assert_allclose(got[0], got[4].sum(axis=2), atol=1e-9 * x.sum())
    np.testing.assert_allclose(got[2].sum(axis=1), got[4].sum(axis=(1, 2)), atol=1e-9 * x.sum())


def test_all_two_way_marginals_at_equal_noise_match_the_kernel_blue():
    shape = (3, 4, 5)
    rng = np.random.default_rng(7)
    x = rng.poisson(rng.gamma(3.0, 20.0, shape)).astype(float)
    n = x.sum()
    b = 2.0
    margs = _noisy(shape, x, [(0, 1), (0, 2), (1, 2)], [2 * b * b] * 3, rng)
    qs, ans = [], []
    for mg in margs:
        for cell in np.ndindex(mg.table.shape):
            t = np.zeros(mg.table.shape)
            t[cell] = 1.0
            qs.append(LocalQuery(shape, mg.axes, t))
            ans.append(mg.table[cell])
    dense = consistent_answers(Released.laplace(shape, qs, ans, b), n)
    got = np.concatenate([g.reshape(-1) for g in consistent_marginals(shape, margs, n)])
    np.testing.assert_allclose(got, dense, rtol=0, atol=1e-7 * n)


def test_bad_marginals_are_named():
    with pytest.raises(DpdeskError, match="increasing"):
        Marginal((1, 0), np.zeros((4, 3)), 1.0)
    with pytest.raises(DpdeskError, match="variance"):
        Marginal((0,), np.zeros(3), 0.0)
    with pytest.raises(DpdeskError, match=r"table shape \(4,\)"):
        consistent_marginals(SHAPE, [Marginal((0,), np.zeros(4), 1.0)])
    with pytest.raises(DpdeskError, match="no marginals"):
        fit_marginals(SHAPE, [], table_size=10.0, tau=1.0)


def _dense_dual(shape, answers, scales, axes_list, n, tau):
    """The seed's dual (Eq. 37) over every cell: max Σ w_i a_i/n − ln Z_w, |w_i| ≤ τ n/s_i.

    Solved to its optimality (KKT) conditions, which are checked: every dual variable strictly inside
    its box has a zero gradient (the expected count matches the target), and one on the box has a
    gradient that pushes outwards. One L-BFGS-B run is not enough where no non-negative table has the
    targets as its marginals (the sparse case below): the optimum then lies on the box, hundreds of
    units out, the problem is badly conditioned, and a run stops where its line search stalls (the run
    from 0 stopped at a mean squared misfit of 0.52 noise scales², the optimum's is 2·10⁻⁴). Restarting
    from the last point, with a fresh curvature memory, until the objective stops falling reaches it.
    """
    F = np.vstack([_operator(shape, a) for a in axes_list])

    def f(w):
        logit = w @ F
        p = np.exp(logit - logsumexp(logit))
        return -(w @ answers / n - logsumexp(logit)), -(answers / n - F @ p)

    box = tau * n / scales
    w, best = np.zeros(answers.size), math.inf
    for _ in range(100):
        res = minimize(
            f,
            w,
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(-box, box)),
            options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 50000, "maxcor": 50},
        )
        w = res.x
        if not res.fun < best - 1e-14:
            break
        best = res.fun
    else:
        raise AssertionError("the dense dual did not settle in 100 restarts")
    grad = f(w)[1]
    # the KKT conditions, in counts: a free variable's expected count within 10⁻³ of its target
    inside = np.abs(w) < box * (1 - 1e-9)
    assert n * np.abs(grad[inside]).max(initial=0.0) < 1e-3, n * np.abs(grad[inside]).max()
    assert np.all(n * grad[~inside] * np.sign(w[~inside]) < 1e-3)
    logit = w @ F
    p = np.exp(logit - logsumexp(logit))
    return n * F @ p, p


def _case(b):
    shape = (3, 4, 5)
    rng = np.random.default_rng(11)
    x = rng.poisson(rng.gamma(4.0, 50.0, shape)).astype(float)
    x[0, 0, :] += 400  # a three-way structure pairwise marginals do not pin down exactly
    axes = [(0, 1), (0, 2), (1, 2)]
    return shape, x.sum(), axes, _noisy(shape, x, axes, [2 * b * b] * 3, rng)


def _exact_counts(shape, axes_list, theta, n):
    """``n·p_θ`` of every marginal's cells, by enumerating the whole (small) domain."""
    logit = np.zeros(shape)
    for axes, th in zip(axes_list, theta):
        logit = logit + th.reshape(tuple(shape[a] if a in axes else 1 for a in range(len(shape))))
    p = np.exp(logit - logsumexp(logit))
    return np.concatenate(
        [
            (n * p.sum(axis=tuple(d for d in range(len(shape)) if d not in axes))).reshape(-1)
            for axes in axes_list
        ]
    ), p.reshape(-1)


@pytest.mark.calibration
@pytest.mark.parametrize("sparse", [False, True])
def test_fit_to_released_marginals_is_the_dense_max_entropy_solution(sparse):
    from dpdesk.engine.estimates.marginals import nonnegative_marginals

    b, particles, gtol, tau = 30.0, 200_000, 0.3, 3.0
    shape, n, axes, margs = (_sparse_case if sparse else _case)(b)
    fit = fit_marginals(shape, margs, table_size=n, tau=tau, particles=particles, seed=3, gtol=gtol)
    assert fit.converged, (fit.iterations, fit.tests, fit.check)
    # the test that passed is the last one, of the returned (averaged) θ on fresh chains
    assert fit.check.passes(gtol) and fit.tests[-1, 1] == fit.bias_rms and fit.tests[-1, 2] <= gtol
    assert fit.averaged >= 8
    # the targets: consistent and non-negative (with negative projected cells in the sparse case)
    target = np.concatenate([g.reshape(-1) for g in nonnegative_marginals(shape, margs, n)])
    np.testing.assert_array_equal(fit.targets, target)
    assert target.min() >= 0 and (not sparse or (target == 0).any())
    if sparse:  # clipped targets would lie farther than gtol from every consistent set: no fit could pass
        plain = np.concatenate([g.reshape(-1) for g in consistent_marginals(shape, margs, n)])
        assert np.mean((np.clip(plain, 0, None) - target) ** 2) / b**2 > gtol**2
    want, p = _dense_dual(shape, target, np.full(target.size, b), axes, n, tau)
    # the fitted θ's exact expectations (enumerated): the test passed with B + 2·se_B ≤ gtol² on one
    # Monte Carlo sample, and B errs from the exact mean squared misfit by about se_B, so the exact one
    # is below gtol² + se_B but for a 3-standard-error event
    exact, _ = _exact_counts(shape, axes, fit.theta, n)
    exact_ms = np.mean((exact - want) ** 2) / b**2
    assert exact_ms <= gtol**2 + fit.check.bias_se, (exact_ms, fit.check)
    # and the test is not vacuous here: its bound can fail (2·se_B is well below gtol²), and the start was
    # far outside it
    assert 2 * fit.check.bias_se < gtol**2 / 2 and fit.trace[0] > gtol
    rows = fit.sample(40_000, np.random.default_rng(5))
    assert rows.shape == (40_000, 3) and rows.min() >= 0 and np.all(rows.max(axis=0) < np.array(shape))
    freq = np.bincount(np.ravel_multi_index(rows.T, shape), minlength=p.size) / 40_000
    # total variation of 40 000 draws from the exact p is about ½·Σ√(2p(1−p)/(πN)); twice that allows
    # for the fit's own error
    tv_sampling = 0.5 * np.sum(np.sqrt(2 * p * (1 - p) / (math.pi * 40_000)))
    assert 0.5 * np.abs(freq - p).sum() < 2 * tv_sampling, (0.5 * np.abs(freq - p).sum(), tv_sampling)


def test_fit_reports_non_convergence_and_names_bad_settings():
    shape, n, _, margs = _case(10.0)
    fit = fit_marginals(shape, margs, table_size=n, tau=3.0, particles=60_000, seed=1, gtol=0.1, max_iter=1)
    assert not fit.converged and fit.iterations == 1 and fit.trace.size == 1 and fit.bias_rms > 0.1
    with pytest.raises(DpdeskError, match="tau"):
        fit_marginals(shape, margs, table_size=n, tau=0.0)
    with pytest.raises(DpdeskError, match="start"):
        fit_marginals(shape, margs, table_size=n, tau=1.0, start="zero")
    shape, n, _, margs = _case(30.0)
    independent = fit_marginals(
        shape, margs, table_size=n, tau=3.0, particles=200_000, seed=3, gtol=0.3, start="independent"
    )
    assert independent.converged, (independent.iterations, independent.bias_rms)
    with pytest.raises(DpdeskError, match="particles"):
        fit_marginals(shape, margs, table_size=n, tau=1.0, particles=10)
    with pytest.raises(DpdeskError, match="decay"):
        fit_marginals(shape, margs, table_size=n, tau=1.0, decay=0.5)


def _sparse_case(b):
    """``_case`` with two attribute values rare: their 2-way cells are small against the noise, so the
    consistent projection has negative cells; clipped to 0 they would be targets no distribution meets
    (0.12 noise scales² of mean squared misfit from the nearest consistent non-negative ones: above
    gtol² = 0.09 in the fit's test below, which therefore needs the non-negative projection)."""
    shape = (3, 4, 5)
    rng = np.random.default_rng(11)
    x = rng.poisson(rng.gamma(4.0, 50.0, shape)).astype(float)
    x[0, 0, :] += 400
    x[2] = rng.poisson(2.0, x[2].shape)
    x[:, 3] = rng.poisson(2.0, x[:, 3].shape)
    axes = [(0, 1), (0, 2), (1, 2)]
    return shape, x.sum(), axes, _noisy(shape, x, axes, [2 * b * b] * 3, rng)


def test_nonnegative_marginals_are_the_dense_constrained_least_squares_projection():
    from scipy.optimize import minimize as _minimize

    from dpdesk.engine.estimates.marginals import nonnegative_marginals

    shape, n, axes, margs = _sparse_case(30.0)
    plain = np.concatenate([g.reshape(-1) for g in consistent_marginals(shape, margs, n)])
    assert (plain < 0).sum() >= 3  # the case needs the constraint
    got = nonnegative_marginals(shape, margs, n)
    # oracle: min Σ_A ‖y_A − M_A x‖²/σ_A² over real tables x with M x ≥ 0 and 1ᵀx = n (SLSQP, dense)
    M = np.vstack([_operator(shape, a) for a in axes])
    y = np.concatenate([mg.table.reshape(-1) for mg in margs])
    w = np.concatenate([np.full(mg.table.size, 1 / mg.variance) for mg in margs])
    res = _minimize(
        lambda x: (w * (y - M @ x) ** 2).sum(),
        np.full(M.shape[1], n / M.shape[1]),
        jac=lambda x: -2 * M.T @ (w * (y - M @ x)),
        method="SLSQP",
        constraints=[
            {"type": "ineq", "fun": lambda x: M @ x, "jac": lambda x: M},
            {"type": "eq", "fun": lambda x: x.sum() - n, "jac": lambda x: np.ones((1, x.size))},
        ],
        options={"ftol": 1e-14, "maxiter": 2000},
    )
    assert res.success, res.message
    want = M @ res.x
    flat = np.concatenate([g.reshape(-1) for g in got])
    assert flat.min() >= 0.0
    np.testing.assert_allclose(flat, want, rtol=0, atol=1e-3)
    # consistent: projecting again changes nothing, and the table size is kept
    again = np.concatenate(
        [
            g.reshape(-1)
            for g in consistent_marginals(
                shape, [Marginal(a, g, mg.variance) for a, g, mg in zip(axes, got, margs)], n
            )
        ]
    )
    np.testing.assert_allclose(again, flat, rtol=0, atol=1e-5)
    # a release whose projection is already non-negative is returned as projected
    shape, n, _, margs = _case(30.0)
    for g, c in zip(nonnegative_marginals(shape, margs, n), consistent_marginals(shape, margs, n)):
        np.testing.assert_array_equal(g, c)
