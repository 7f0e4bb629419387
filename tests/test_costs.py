"""Per-cell costs accumulated in factored batches equal the row-by-row sum of (α/S)|Q| (Thm 5.4)."""

from __future__ import annotations

import numpy as np
import pytest

import dpdesk.engine.budget.costs as costs_module
from dpdesk.engine.budget.costs import CellCosts, _split
from dpdesk.engine.queries.query import Query, Term, query_from_vector


def _product(rng, shape, terms=1):
    out = []
    for _ in range(terms):
        factors = tuple(
            rng.integers(-2, 3, size=k).astype(float) * rng.choice([1.0, 0.5, 1.7]) for k in shape
        )
        factors = tuple(f if np.any(f) else np.eye(len(f))[0] for f in factors)
        out.append(Term(float(rng.choice([-2.0, 1.0, 3.0])), factors))
    return Query(shape, terms=tuple(out))


@pytest.mark.parametrize("shape", [(7,), (3, 5), (4, 2, 3), (8, 8, 8, 8), (2, 3, 1, 5, 2)])
@pytest.mark.parametrize("batch", [1, 4, 512])
def test_batched_costs_equal_the_row_by_row_sum(monkeypatch, shape, batch):
    monkeypatch.setattr(costs_module, "BATCH", batch)
    rng = np.random.default_rng(len(shape) * 100 + batch)
    n = int(np.prod(shape))
    b, ref = CellCosts(shape), np.zeros(n)
    for i in range(60):
        kind = i % 3
        if kind == 0:
            q = _product(rng, shape)
        elif kind == 1:
            q = _product(rng, shape, terms=2) if len(shape) > 1 else _product(rng, shape)
        else:
            vec = rng.integers(-3, 4, size=n) * (rng.random(n) < 0.3)
            if not np.any(vec):
                continue
            q = query_from_vector(vec, shape)
        scale = float(rng.uniform(0.01, 1.0)) / q.sensitivity
        b.add(scale, q)
        ref += scale * np.abs(q.dense())
        if rng.random() < 0.2:  # reads in between flush what is pending
            np.testing.assert_allclose(b.values, ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(b.values, ref, rtol=1e-12, atol=1e-15)


def test_the_split_balances_the_two_groups():
    assert _split((32, 32, 32, 32)) == 2
    assert _split((1000, 2, 2)) == 1
    assert _split((2, 2, 1000)) == 2


@pytest.mark.parametrize("shape, rows", [((8, 6, 5, 7), 120), ((9,), 60), ((32, 32, 32, 32), 20)])
def test_add_touched_adds_what_add_adds_and_tracks_the_largest_cost(shape, rows):
    """The cost curve's fast path: the same values as ``add`` (bit for bit), and the running maximum of
    what it returns is the largest cost over the whole cube after every row."""
    rng = np.random.default_rng(7)
    slow, fast, top = CellCosts(shape), CellCosts(shape), 0.0
    for i in range(rows):
        fs = [(rng.random(k) < 0.5) * rng.uniform(-3, 3, k) for k in shape]
        if not all(f.any() for f in fs):
            continue
        q = Query(shape, terms=(Term(float(rng.uniform(0.1, 3)), tuple(fs)),))
        if i % 3 == 0:  # the sparse form too (no product structure to use)
            q = query_from_vector(q.dense(), shape)
        scale = float(rng.random())
        slow.add(scale, q)
        top = max(top, fast.add_touched(scale, q))
        assert np.array_equal(slow.values, fast.values)
        assert top == slow.values.max()
