"""History and BLUE: the paper's worked example, primal vs dual, rank deficiency, incremental updates."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stats_helpers import random_box

from dpdesk.engine.errors import HistoryError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.queries.query import Query, query_from_vector

PAPER_H = [
    [1, 1, 0, 0],
    [0, 0, 1, 1],
    [0, 0, 0, 1],
    [0, 0, 1, 0],
    [0, 1, 0, 1],
    [2, 1, 0, 0],
    [0, 0, 2, -1],
    [0, -1, 0, 1],
]
PAPER_ALPHA = [0.05, 0.1, 0.05, 0.1, 0.1, 0.05, 0.05, 0.1]
PAPER_Y = [30.8, 30.3, 46.9, 20.2, 30.4, 68.9, 38.9, 9.5]


def paper_history() -> History:
    h = History((4,))
    for q, a, y in zip(PAPER_H, PAPER_ALPHA, PAPER_Y):
        h.append(HistoryRow(query_from_vector(q, (4,)), a, y))
    return h


def reference_blue(H, alpha, y, variances, Q):
    """Textbook GLS with a pseudo-inverse, computed densely (the literal formula)."""
    H = np.asarray(H, float)
    w = np.sqrt(2.0 / np.asarray(variances))
    Z = w[:, None] * H
    lam = np.asarray(Q, float) @ np.linalg.pinv(Z)
    A = lam * w
    return A, float(A @ np.asarray(y)), float((A * A) @ np.asarray(variances))


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_paper_worked_example(form):
    h = paper_history()
    xhat = [h.estimate(query_from_vector(np.eye(4)[j], (4,)), form=form).estimate for j in range(4)]
    # the paper prints x̂ truncated to one decimal (24.99 → 24.9) and A rounded to two
    np.testing.assert_array_equal(np.floor(np.asarray(xhat) * 10) / 10, [24.9, 10.1, 17.0, 19.5])
    est = h.estimate(query_from_vector([1, 0, 1, 0], (4,)), form=form)
    assert est.estimable
    assert round(est.estimate, 1) == 42.0
    np.testing.assert_array_equal(
        np.round(est.coefficients, 2), [0.48, 0.36, -0.03, 0.50, -0.50, 0.26, 0.07, 0.24]
    )
    np.testing.assert_allclose(h.cell_costs, [0.1, 0.275, 0.25, 0.375], atol=1e-12)
    assert h.system_cost == pytest.approx(0.375)


def test_paper_example_file_matches_api():
    path = Path(__file__).resolve().parents[1] / "resources" / "examples" / "paper.history.json"
    with open(path) as fh:
        h = History.from_json(json.load(fh))
    est = h.estimate(query_from_vector([1, 0, 1, 0], (4,)))
    assert round(est.estimate, 1) == 42.0


def test_empty_history_is_not_estimable_and_costs_nothing():
    h = History((3,))
    est = h.estimate(query_from_vector([1, 0, 0], (3,)))
    assert not est.estimable and est.estimate is None and est.history_size == 0
    assert h.system_cost == 0.0
    np.testing.assert_array_equal(h.cell_costs, np.zeros(3))


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_query_outside_row_space_is_not_estimable(form):
    h = History((3,))
    h.append(HistoryRow(query_from_vector([1, 1, 0], (3,)), 0.1, 10.0))
    h.append(HistoryRow(query_from_vector([2, 2, 0], (3,)), 0.1, 21.0))  # dependent
    assert not h.estimate(query_from_vector([1, 0, 0], (3,)), form=form).estimable
    est = h.estimate(query_from_vector([3, 3, 0], (3,)), form=form)
    assert est.estimable
    # two independent measurements of x0+x1: inverse-variance weighting (row 2 has scale 20, row 1 10)
    v1, v2 = 2 * 10.0**2, 2 * 20.0**2
    expected = 3 * (10.0 / v1 + 21.0 / 2 / (v2 / 4)) / (1 / v1 + 1 / (v2 / 4))
    assert est.estimate == pytest.approx(expected, rel=1e-12)


def _random_history(rng, n, m, rank_deficient, integer=True):
    if rank_deficient:
        k = max(1, min(n, m) - 1 - int(rng.integers(0, max(1, min(n, m) // 2))))
        basis = rng.integers(-2, 3, size=(k, n)).astype(float)
        basis[np.all(basis == 0, axis=1), 0] = 1.0
        mix = rng.integers(-2, 3, size=(m, k)).astype(float)
        mix[np.all(mix == 0, axis=1), 0] = 1.0
        H = mix @ basis
        H[np.all(H == 0, axis=1)] = basis[0]
    else:
        H = rng.integers(-2, 3, size=(m, n)).astype(float)
        H[np.all(H == 0, axis=1), 0] = 1.0
    if not integer:
        H = H * rng.uniform(0.5, 1.5, size=H.shape)
    alpha = rng.uniform(0.01, 1.0, size=m)
    y = rng.normal(50, 20, size=m)
    return H, alpha, y


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 12),
    m=st.integers(1, 20),
    rank_deficient=st.booleans(),
    integer=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_primal_and_dual_agree_with_the_dense_reference(n, m, rank_deficient, integer, seed):
    rng = np.random.default_rng(seed)
    H, alpha, y = _random_history(rng, n, m, rank_deficient, integer)
    h = History((n,))
    for row, a, v in zip(H, alpha, y):
        h.append(HistoryRow(query_from_vector(row, (n,)), float(a), float(v)))
    variances = [r.variance for r in h.rows]
    rank = np.linalg.matrix_rank(H)
    # targets: a combination of history rows (estimable) and a random vector (usually not)
    targets = [rng.integers(-2, 3, size=m).astype(float) @ H, rng.normal(size=n)]
    for Q in targets:
        if not np.any(Q):
            continue
        q = query_from_vector(Q, (n,))
        p, d = h.estimate(q, form="primal"), h.estimate(q, form="dual")
        inside = np.linalg.norm(Q - Q @ np.linalg.pinv(H) @ H) <= 1e-7 * np.linalg.norm(Q)
        assert p.estimable == d.estimable == inside or (rank == n and p.estimable and d.estimable)
        if p.estimable:
            A_ref, theta_ref, var_ref = reference_blue(H, alpha, y, variances, Q)
            scale = np.abs(A_ref).sum() * np.abs(y).max() + 1e-12
            assert abs(p.estimate - d.estimate) <= 1e-9 * scale
            assert abs(p.estimate - theta_ref) <= 1e-8 * scale
            np.testing.assert_allclose(
                p.coefficients, d.coefficients, rtol=1e-9, atol=1e-9 * np.abs(A_ref).max()
            )
            np.testing.assert_allclose(p.coefficients, A_ref, rtol=1e-7, atol=1e-8 * np.abs(A_ref).max())
            assert p.variance == pytest.approx(var_ref, rel=1e-7)
            assert d.variance == pytest.approx(p.variance, rel=1e-9)


@pytest.mark.parametrize("form", ["primal", "dual"])
@pytest.mark.parametrize("block", [1, 3, 7, 128])
@pytest.mark.parametrize(
    "n,m,rank_deficient,integer",
    [(12, 40, True, True), (12, 40, False, False), (64, 300, True, True), (30, 200, True, False)],
)
def test_blocked_build_matches_the_reference(monkeypatch, form, block, n, m, rank_deficient, integer):
    """A factorisation built from a stored history, whole blocks of rows at a time, gives the BLUE the
    row-by-row build and the dense reference give."""
    import dpdesk.engine.inference.history as history_module

    monkeypatch.setattr(history_module, "PRIMAL_BLOCK", block)
    monkeypatch.setattr(history_module, "DUAL_BLOCK", block)
    rng = np.random.default_rng(1000 * n + m)
    H, alpha, y = _random_history(rng, n, m, rank_deficient, integer)
    rows = [HistoryRow(query_from_vector(r, (n,)), float(a), float(v)) for r, a, v in zip(H, alpha, y)]
    stored = History((n,), rows)  # the factorisation is built from all rows at the first estimate
    grown = History((n,), rows[:1])
    grown.estimate(query_from_vector(H[0], (n,)), form=form)  # built on one row, then row by row
    assert form in grown._spaces
    for r in rows[1:]:
        grown.append(r)
    variances = [r.variance for r in rows]
    for Q in (rng.integers(-2, 3, size=m).astype(float) @ H, H[0] + H[-1], H[m // 2]):
        if not np.any(Q):
            continue
        q = query_from_vector(Q, (n,))
        b, g = stored.estimate(q, form=form), grown.estimate(q, form=form)
        A_ref, theta_ref, var_ref = reference_blue(H, alpha, y, variances, Q)
        scale = np.abs(A_ref).sum() * np.abs(y).max() + 1e-12
        assert b.estimable and g.estimable
        assert abs(b.estimate - theta_ref) <= 1e-8 * scale and abs(b.estimate - g.estimate) <= 1e-9 * scale
        np.testing.assert_allclose(b.coefficients, A_ref, rtol=1e-7, atol=1e-8 * np.abs(A_ref).max())
        assert b.variance == pytest.approx(var_ref, rel=1e-7) and b.variance == pytest.approx(
            g.variance, rel=1e-9
        )
    assert stored._spaces[form].rank == grown._spaces[form].rank == np.linalg.matrix_rank(H)


def test_incremental_factorisation_matches_reference_at_every_step():
    rng = np.random.default_rng(7)
    n, m = 6, 15
    H, alpha, y = _random_history(rng, n, m, rank_deficient=True)
    h = History((n,))
    Q = H[:3].sum(axis=0)
    q = query_from_vector(Q, (n,))
    for i in range(m):
        h.append(HistoryRow(query_from_vector(H[i], (n,)), float(alpha[i]), float(y[i])))
        for form in ("primal", "dual"):
            est = h.estimate(q, form=form)
            if i >= 2:
                A_ref, theta_ref, _ = reference_blue(
                    H[: i + 1], alpha[: i + 1], y[: i + 1], [r.variance for r in h.rows], Q
                )
                assert est.estimable
                assert est.estimate == pytest.approx(theta_ref, rel=1e-9, abs=1e-9)


def test_product_form_rows_use_the_factored_inner_products():
    # a 3x4x5 cube; rows are boxes; dual estimates must match the dense primal
    shape = (3, 4, 5)
    rng = np.random.default_rng(3)
    h = History(shape)
    rows = [random_box(rng, shape) for _ in range(40)]
    for q in rows:
        h.append(HistoryRow(q, float(rng.uniform(0.05, 0.5)), float(rng.normal(100, 10))))
    target = Query(shape, terms=rows[0].terms + rows[5].terms)
    p, d = h.estimate(target, form="primal"), h.estimate(target, form="dual")
    assert p.estimable and d.estimable
    assert d.estimate == pytest.approx(p.estimate, rel=1e-9)
    dense_costs = sum(r.alpha / r.sensitivity * np.abs(r.query.dense()) for r in h.rows)
    np.testing.assert_allclose(h.cell_costs, dense_costs, rtol=1e-12)


def test_discrete_noise_rows_are_weighted_by_their_true_variance():
    h = History((2,))
    q = query_from_vector([1, 1], (2,))
    h.append(HistoryRow(q, 1.0, 10.0, "discrete_laplace"))
    h.append(HistoryRow(q, 0.2, 14.0, "laplace"))
    v1, v2 = h.rows[0].variance, h.rows[1].variance
    p = np.exp(-1.0)
    assert v1 == pytest.approx(2 * p / (1 - p) ** 2)
    est = h.estimate(q)
    assert est.estimate == pytest.approx((10.0 / v1 + 14.0 / v2) / (1 / v1 + 1 / v2))
    assert est.families == ("discrete_laplace", "laplace")


def test_history_json_errors_name_the_row():
    with pytest.raises(HistoryError, match=r"rows\[1\]\.alpha"):
        History.from_json(
            {
                "cells": 2,
                "rows": [
                    {"query": [1, 0], "alpha": 0.1, "answer": 1},
                    {"query": [1, 0], "alpha": -1, "answer": 1},
                ],
            }
        )
    with pytest.raises(HistoryError, match=r"rows\[0\]\.query.*3 coefficients"):
        History.from_json({"cells": 2, "rows": [{"query": [1, 0, 1], "alpha": 0.1, "answer": 1}]})
    with pytest.raises(HistoryError, match="cells"):
        History.from_json({"cells": 0, "rows": []})
    with pytest.raises(HistoryError, match=r"rows\[0\]: missing 'answer'"):
        History.from_json({"cells": 2, "rows": [{"query": [1, 0], "alpha": 0.1}]})


def test_history_json_round_trip():
    h = paper_history()
    h2 = History.from_json(json.loads(json.dumps(h.to_json(total_budget=1.0))))
    q = query_from_vector([1, 0, 1, 0], (4,))
    assert h2.estimate(q).estimate == pytest.approx(h.estimate(q).estimate, rel=1e-12)


def test_sparse_target_dots_against_product_rows_match_inner_products():
    """A sparse target (a sum of boxes) against one-term rows is gathered in blocks; each value is the
    inner product the row-by-row path computes."""
    from dpdesk.engine.inference.rowspace import _ProductStack
    from dpdesk.engine.queries.algebra import inner
    from dpdesk.engine.queries.query import Query, Term

    rng = np.random.default_rng(4)
    shape = (7, 5, 6)
    stack, rows = _ProductStack(shape), []
    for _ in range(300):
        q = Query(
            shape,
            terms=(
                Term(
                    float(rng.integers(1, 4)),
                    tuple(rng.integers(0, 2, k).astype(float) + (np.arange(k) == 0) for k in shape),
                ),
            ),
        )
        stack.add(q)
        rows.append(q)
    dense = sum(r.dense() for r in rows[:3])
    target = Query(shape, indices=np.flatnonzero(dense), values=dense[dense != 0])
    assert target.terms is None
    ids = np.arange(300)[::-1].copy()
    np.testing.assert_allclose(stack.dots(target, ids), [inner(target, rows[i]) for i in ids], rtol=1e-12)
