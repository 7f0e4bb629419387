"""The structured BLUE of a partition release against a dense least-squares reference and the engine's History."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.inference.history import History
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.partition.plan import cells_plan, marginals_by_order, marginals_plan, tree_plan
from dpdesk.engine.partition.release import draw_release
from dpdesk.engine.partition.solver import PlanSolver, pieces_dense
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.queries.text import parse_query

PLANS = {
    "cells": lambda s: cells_plan(s),
    "marginals12": lambda s: marginals_by_order(s, [1, 2]),
    "marginals-partial": lambda s: marginals_plan(s, [["age"], ["sex", "edu"]]),
    "tree2": lambda s: tree_plan(s, "age", 2),
    "tree3-summed": lambda s: tree_plan(s, "age", 3, cross=False),
    "tree2-sex": lambda s: tree_plan(s, "age", 2, cross=["sex"]),
    "tree2-shallow": lambda s: tree_plan(s, "age", 2, depth=2),
}


def _reference(plan, q: Query):
    """Dense GLS with equal weights: residual of Q outside range(G), Q G⁺ Qᵀ, and A = W G⁺ Qᵀ."""
    W = np.vstack(
        [
            np.kron(np.kron(g.blocks[0].matrix(), g.blocks[1].matrix()), g.blocks[2].matrix())
            for g in plan.groups
        ]
    )
    G = W.T @ W
    Gp = np.linalg.pinv(G)
    Q = q.dense()
    return np.linalg.norm(Q - G @ Gp @ Q) / np.linalg.norm(Q), Q @ Gp @ Q, W @ Gp @ Q


def _random_queries(rng, shape, k=8):
    out = []
    for _ in range(k):
        f = [(rng.random(n) < 0.6) * rng.integers(1, 3, n).astype(float) for n in shape]
        for v in f:
            if not v.any():
                v[rng.integers(len(v))] = 1.0
        q = Query(shape, terms=(Term(1.0, tuple(f)), Term(-0.5, tuple(np.ones(n) for n in shape))))
        out.append(q)
        d = q.dense()
        nz = np.flatnonzero(d)
        out.append(Query(shape, indices=nz, values=d[nz]))  # the same query in sparse form
    return out


@pytest.mark.parametrize("name", list(PLANS))
def test_solver_matches_dense_least_squares(schema3, name):
    plan = PLANS[name](schema3)
    solver = PlanSolver(plan)
    rng = np.random.default_rng(hash(name) % 2**32)
    for q in _random_queries(rng, schema3.shape):
        res, var, A = _reference(plan, q)
        assert solver.residual(q) == pytest.approx(res, abs=1e-9)
        assert solver.estimable(q) == (res < 1e-9)
        if res < 1e-9:
            assert solver.variance_factor(q) == pytest.approx(var, rel=1e-9)
            got = np.concatenate(
                [
                    (c.reshape(-1) if isinstance(c, np.ndarray) else pieces_dense(c, g.shape).reshape(-1))
                    for c, g in zip(solver.group_coefficients(q), plan.groups)
                ]
            )
            assert np.allclose(got, A, atol=1e-10)


@pytest.mark.parametrize("name", ["cells", "marginals12", "tree2", "tree2-sex"])
def test_release_estimates_equal_the_history_blue_of_its_rows(schema3, counts3, name):
    plan = PLANS[name](schema3)
    rel = draw_release(plan, 0.5, counts3, SeededSampler(7), allow_insecure=True)
    hist = History(schema3.shape, rel.history_rows())
    assert np.allclose(hist.cell_costs, 0.5)  # every cell pays α in all (paper Thm 5.4)
    for text in [
        'count(age=["10-20","20-30","30-40"])',
        'count(age="70-80", sex="M")',
        '2*count(age="0-10") - count(edu="c")',
        'count(sex="F", edu="b")',
    ]:
        q = parse_query(text, schema3)
        mine, ref = rel.estimate(q), hist.estimate(q)
        assert mine.estimable == ref.estimable, text
        if ref.estimable:
            assert mine.estimate == pytest.approx(ref.estimate, abs=1e-7), text
            assert mine.std == pytest.approx(ref.std, rel=1e-9), text


@pytest.mark.parametrize("name", ["cells", "tree2", "tree3-summed", "marginals12"])
def test_cell_estimates_give_the_blue_of_every_estimable_query(schema3, counts3, name):
    plan = PLANS[name](schema3)
    rel = draw_release(plan, 0.5, counts3, SeededSampler(3), allow_insecure=True)
    xhat = rel.cell_estimates().reshape(-1)
    for text in ['count(age=["10-20","20-30"])', 'count(sex="F")', 'count(age="70-80", edu="b")']:
        q = parse_query(text, schema3)
        e = rel.estimate(q)
        if e.estimable:
            assert float(q.dense() @ xhat) == pytest.approx(e.estimate, abs=1e-8)
