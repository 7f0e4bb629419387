"""Kernel-PCA shrinkage (seed §3): inner products, the τ limits, and the estimate's own accounting.

Oracles are dense and independent of the code under test: prior-weighted dot products of explicit
coefficient vectors, the equality-constrained generalised least squares (KKT system) for τ → ∞, the
engine's own BLUE (:class:`History`), and the Gaussian posterior mean for finite τ.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdesk.engine.errors import DpdeskError, QueryError
from dpdesk.engine.estimates.kernel import LocalQuery, QueryStack, gram
from dpdesk.engine.estimates.released import Released
from dpdesk.engine.estimates.shrinkage import ShrinkageModel
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.queries.query import Query, Term, query_from_vector

SHAPE = (3, 4, 5)
N = 60


def _prior(rng):
    p = [rng.random(k) + 0.2 for k in SHAPE]
    return [v / v.sum() for v in p]


def _p0(prior):
    return np.multiply.outer(np.multiply.outer(prior[0], prior[1]), prior[2]).reshape(-1)


def _dense(q):
    if isinstance(q, LocalQuery):
        idx = tuple(slice(None) if d in q.axes else None for d in range(len(SHAPE)))
        return np.broadcast_to(q.table[idx], SHAPE).reshape(-1)
    return q.dense()


def _box(rng):
    factors = []
    for k in SHAPE:
        lo = rng.integers(0, k)
        hi = rng.integers(lo, k)
        f = np.zeros(k)
        f[lo : hi + 1] = 1.0
        factors.append(f)
    return Query(SHAPE, terms=(Term(1.0, tuple(factors)),))


def _history(rng, m=25):
    x = rng.integers(0, 20, N).astype(float)
    qs = [_box(rng) for _ in range(m)]
    b = rng.uniform(1, 3, m)
    Q = np.array([q.dense() for q in qs])
    a = Q @ x + rng.laplace(0, b)
    return x, qs, Q, a, b


def test_gram_matches_prior_weighted_dot_products_for_every_query_form():
    rng = np.random.default_rng(1)
    prior = _prior(rng)
    qs = [
        Query(
            SHAPE,
            terms=tuple(
                Term(rng.normal(), tuple(rng.normal(size=k) for k in SHAPE)) for _ in range(1 + i % 2)
            ),
        )
        for i in range(4)
    ]
    qs += [
        LocalQuery(SHAPE, (0, 2), rng.normal(size=(3, 5))),
        LocalQuery(SHAPE, (1,), rng.normal(size=4)),
        LocalQuery(SHAPE, (0, 1, 2), rng.normal(size=SHAPE)),
        Query(SHAPE, indices=np.array([0, 5, 17, 59]), values=np.array([1.0, 2.0, -1.0, 3.0])),
        Query(SHAPE, indices=np.array([5, 6, 17]), values=np.array([1.0, 2.0, -1.0])),
    ]
    D = np.array([_dense(q) for q in qs])
    ref = (D * _p0(prior)) @ D.T
    stack = QueryStack(qs, SHAPE)
    np.testing.assert_allclose(gram(stack, stack, prior), ref, rtol=1e-12, atol=1e-14)
    keep = np.array([7, 1, 4])
    np.testing.assert_allclose(gram(stack.subset(keep), stack, prior), ref[keep], rtol=1e-12, atol=1e-14)


def test_uniform_prior_normalises_the_universal_query_to_norm_one():
    u = Query(SHAPE, terms=(Term(1.0, tuple(np.ones(k) for k in SHAPE)),))
    half = Query(SHAPE, terms=(Term(1.0, (np.array([1.0, 0, 0]), np.ones(4), np.ones(5))),))
    s = QueryStack([u, half], SHAPE)
    g = gram(s, s, None)
    assert g[0, 0] == pytest.approx(1.0) and g[1, 1] == pytest.approx(1 / 3)


@pytest.mark.parametrize("use_prior", [False, True])
def test_infinite_tau_is_the_blue_of_history_plus_the_universal_query(use_prior):
    rng = np.random.default_rng(3)
    prior = _prior(rng) if use_prior else None
    x, qs, Q, a, b = _history(rng)
    n = x.sum()
    model = ShrinkageModel.fit(Released.laplace(SHAPE, qs, a, b), table_size=n, prior=prior)
    W = np.diag(1.0 / (2 * b * b))
    u = np.ones(N)
    kkt = np.block([[Q.T @ W @ Q, u[:, None]], [u[None, :], np.zeros((1, 1))]])
    xhat = np.linalg.lstsq(kkt, np.concatenate([Q.T @ W @ a, [n]]), rcond=None)[0][:N]
    for coef in ([1, 0, 2, 0, -1], [0, 3, 0, 1, 1]):
        qd = np.asarray(coef, float) @ Q[:5] - 0.5 * u  # estimable: rows of history plus u
        est = model.estimate(query_from_vector(qd, SHAPE), math.inf)
        assert est.estimable
        assert est.value == pytest.approx(qd @ xhat, rel=1e-9, abs=1e-7)


def test_without_a_declared_size_a_released_total_plays_the_universal_query():
    rng = np.random.default_rng(4)
    x, qs, Q, a, b = _history(rng)
    total = query_from_vector(np.ones(N), SHAPE)
    qs = qs + [total]
    a = np.append(a, x.sum() + rng.laplace(0, 4.0))
    b = np.append(b, 4.0)
    model = ShrinkageModel.fit(Released.laplace(SHAPE, qs, a, b), table_size=None)
    history = History(SHAPE)
    for q, ans, scale in zip(qs, a, b):
        history.append(HistoryRow(q, alpha=q.sensitivity / scale, answer=float(ans)))
    target = query_from_vector(Q[2] + 2 * Q[7] - np.ones(N), SHAPE)
    blue = history.estimate(target)
    assert blue.estimable
    est = model.estimate(target, math.inf)
    assert est.value == pytest.approx(blue.estimate, rel=1e-9)
    assert est.noise_std == pytest.approx(blue.std, rel=1e-7)
    for tau in (0.5, 20.0, math.inf):
        assert model.noise_std_many([target], [tau])[0, 0] == pytest.approx(
            model.estimate(target, tau).noise_std, rel=1e-9
        )


def test_finite_tau_is_the_gaussian_posterior_mean_and_tau_zero_the_prior_answer():
    rng = np.random.default_rng(5)
    prior = _prior(rng)
    x, qs, Q, a, b = _history(rng)
    n = x.sum()
    model = ShrinkageModel.fit(Released.laplace(SHAPE, qs, a, b), table_size=n, prior=prior)
    P = _p0(prior)
    target = _box(rng)
    qd = target.dense()
    h, hq = Q @ P, qd @ P
    Kp = (Q * P) @ Q.T - np.outer(h, h)
    kp = (Q * P) @ qd - hq * h
    for tau in (3.0, 37.0, 400.0):
        C = tau**2 * Kp + np.diag(2 * b * b)
        ref = n * hq + tau**2 * kp @ np.linalg.solve(C, a - n * h)
        est = model.estimate(target, tau)
        assert est.value == pytest.approx(ref, rel=1e-9)
        # the estimate is the linear combination it reports, and its noise part is that combination's
        assert est.coefficients @ a + est.offset == pytest.approx(est.value, rel=1e-12)
        assert est.noise_std == pytest.approx(math.sqrt(np.sum(est.coefficients**2 * 2 * b * b)), rel=1e-9)
        np.testing.assert_allclose(model.estimate_many([target], [tau])[0, 0], est.value, rtol=1e-10)
        np.testing.assert_allclose(model.noise_std_many([target], [tau])[0, 0], est.noise_std, rtol=1e-10)
    assert model.estimate(target, 1e-9).value == pytest.approx(n * hq, rel=1e-9)


def test_bad_inputs_are_named():
    rng = np.random.default_rng(6)
    x, qs, Q, a, b = _history(rng, m=5)
    rel = Released.laplace(SHAPE, qs, a, b)
    with pytest.raises(DpdeskError, match="table_size"):
        ShrinkageModel.fit(rel, table_size=-3.0)
    with pytest.raises(DpdeskError, match="no released rows"):
        ShrinkageModel.fit(Released.laplace(SHAPE, [], [], []), table_size=10.0)
    model = ShrinkageModel.fit(rel, table_size=x.sum())
    with pytest.raises(DpdeskError, match="tau"):
        model.estimate(qs[0], 0.0)
    with pytest.raises(QueryError, match="prior for attribute 1"):
        ShrinkageModel.fit(rel, table_size=10.0, prior=[np.ones(3) / 3, np.ones(4), np.ones(5) / 5])
    with pytest.raises(QueryError, match="table has shape"):
        LocalQuery(SHAPE, (0, 1), np.ones((3, 5)))
    with pytest.raises(DpdeskError, match="cannot estimate"):
        ShrinkageModel.fit(rel, table_size=None).estimate(qs[0], math.inf)
