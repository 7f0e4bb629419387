"""A budget preview reads only the cells a release touches, and says exactly what the dense vector says.

``preview`` finds the system cost after a one-query charge from the touched cells and the most
expensive untouched cell (``engine/budget/peaks.py``). Checked here against the dense sum
``cell_costs + charge.dense()`` computed independently: the same maximum to the bit and the same
limiting cell (the lowest index among ties), on cost vectors full of ties, for box, sparse and
multi-term queries, including requests that touch every one of the most expensive cells. And on a
10⁶-cell cube an assessment allocates nothing near the size of a dense cost vector.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from dpdesk.engine.answering.workflow import Request, assess
from dpdesk.engine.budget.accounting import preview
from dpdesk.engine.budget.costs import CellCosts
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.queries.query import Query, Term


def _box(rng, shape, widest=None):
    factors = []
    for k in shape:
        w = int(rng.integers(1, min(k, widest or k) + 1))
        lo = int(rng.integers(0, k - w + 1))
        f = np.zeros(k)
        f[lo : lo + w] = rng.choice([1.0, 2.0, 0.5]) if rng.random() < 0.2 else 1.0
        factors.append(f)
    return Term(float(rng.choice([1.0, -1.0, 3.0, 0.7])), tuple(factors))


def _costs(rng, shape, rows):
    c = CellCosts(shape)
    for _ in range(rows):
        c.add(float(rng.choice([0.1, 0.25, 0.05])), Query(shape, terms=(_box(rng, shape),)))
    return c.snapshot()  # read-only, owned: the summarised path


def _dense_reference(costs, charge):
    after = np.asarray(costs, dtype=float).copy()
    for t in charge.terms:
        after = after + t.scale * np.abs(t.query.dense())
    j = int(np.argmax(after))
    return float(after[j]), j


@pytest.mark.parametrize("seed", range(40))
def test_preview_matches_the_dense_sum_to_the_bit(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(k) for k in rng.integers(2, 7, size=int(rng.integers(1, 4))))
    costs = _costs(rng, shape, int(rng.integers(0, 12)))
    n = costs.size
    kind = seed % 4
    if kind == 0:  # a box, often one of the released ones (so it covers the most expensive cells)
        q = Query(shape, terms=(_box(rng, shape),))
    elif kind == 1:  # several boxes summed (the benchmark's requests)
        q = Query(shape, terms=tuple(_box(rng, shape) for _ in range(3)))
    elif kind == 2:  # sparse coefficients
        idx = rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False)
        q = Query(shape, indices=idx, values=rng.choice([1.0, -2.0, 0.5], size=idx.size))
    else:  # every cell
        q = Query(shape, terms=(Term(1.0, tuple(np.ones(k) for k in shape)),))
    charge = Charge((ChargeTerm(float(rng.choice([0.05, 0.3, 1 / 3])), q),))
    b = preview(costs, 10.0, charge)
    assert (b.system_cost_after, b.limiting_cell) == _dense_reference(costs, charge)
    assert b.system_cost == float(costs.max())
    np.testing.assert_array_equal(b.cell_costs_after, costs + charge.dense(n))  # built when asked


def test_a_request_covering_the_most_expensive_cells_finds_the_next_ones():
    shape = (64, 64, 64)  # 262 144 cells: more than the first list of expensive cells
    costs = np.zeros(shape)
    costs[:40, :40, :40] = 0.5  # 64 000 tied cells at the top, all inside the request
    costs[50, 60, 3] = 0.4
    costs[10, 50, 50] = 0.4  # lower index of the two next-highest
    costs = costs.reshape(-1)
    costs.setflags(write=False)
    box = Term(1.0, tuple(np.r_[np.ones(40), np.zeros(24)] for _ in range(3)))
    charge = Charge((ChargeTerm(0.01, Query(shape, terms=(box,))),))
    b = preview(costs, 10.0, charge)
    assert (b.system_cost_after, b.limiting_cell) == _dense_reference(costs, charge) == (0.51, 0)
    wide = Charge((ChargeTerm(1e-9, Query(shape, terms=(box,))),))
    small = preview(costs, 10.0, wide)
    assert (small.system_cost_after, small.limiting_cell) == _dense_reference(costs, wide)
    outside = Term(1.0, (np.r_[np.ones(40), np.zeros(24)], np.ones(64), np.ones(64)))  # rows 0..39 only
    c3 = Charge((ChargeTerm(-0.0 + 1e-12, Query(shape, terms=(outside,))),))
    b3 = preview(costs, 10.0, c3)
    assert (b3.system_cost_after, b3.limiting_cell) == _dense_reference(costs, c3)


def test_assessing_on_a_million_cells_allocates_no_dense_vector():
    shape = (32, 32, 32, 32)
    rng = np.random.default_rng(3)
    h = History(shape)
    for _ in range(30):
        h.append(HistoryRow(Query(shape, terms=(_box(rng, shape, widest=8),)), 0.1, 100.0, "laplace"))
    picks = [h.rows[i].query.terms[0] for i in (3, 7)]
    warm = Request("w", Query(shape, terms=tuple(picks)), eps=5.0, delta=0.05)
    assess(h, warm, 1e6)  # the history's factorisation and its cost summary, once
    q = Query(shape, terms=(h.rows[11].query.terms[0], h.rows[12].query.terms[0]))
    q.sparse()  # the request as it arrives: parsed, its cells listed
    tracemalloc.start()
    a = assess(h, Request("r", q, eps=1.0, delta=0.05), 1e6)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert a.decision == "spend" and a.pricing.budget.system_cost_after is not None
    # less than one dense float vector of the cube (8 MB); the budget preview alone built three before.
    # (The request touches at most 2·8⁴ cells; most of what is allocated is the fusion search's grid.)
    assert peak < 8 * 1_048_576 * 3 / 4, peak
