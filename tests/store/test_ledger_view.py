"""The one ledger view: extended as entries arrive, equal to a view rebuilt from the raw entries."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.query import query_from_json
from dpdesk.store import Project
from dpdesk.store.errors import StoreError
from dpdesk.store.view import LedgerView

RELEASED = ([1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1], [0, 0, 1, 1], [1, 1, 0, 0])
TARGETS = ([1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1], [0, 0, 1, 0])


def _by_hand(entries, shape):
    """Per-cell costs, system-cost curve and history rows straight from the fresh payloads (Thm 5.4)."""
    n = int(np.prod(shape))
    costs, curve, rows = np.zeros(n), [(0, 0.0)], []
    for e in entries:
        if e.kind == "fresh":
            sparse = e.payload["query"]
            q = query_from_json(
                {"indices": list(sparse["indices"]), "values": list(sparse["values"])}, n, shape
            )
            costs += e.payload["alpha"] * np.abs(q.dense()) / q.sensitivity
            rows.append(HistoryRow(q, e.payload["alpha"], e.payload["answer"], e.payload["family"]))
        curve.append((e.seq, float(costs.max())))
    return costs, curve, rows


def test_the_project_view_grows_with_the_ledger_and_matches_a_rebuild(store):
    path = store.new_project(budget=50.0, test_project=True)
    with Project.open(path, "w") as p:
        sampler = SeededSampler(3)
        view = p.view()
        for n, q in enumerate(RELEASED, 1):
            r = p.add_request(q, 2.0 if n < len(RELEASED) else 30.0, 0.1)  # the last one loose: inferred
            p.release(p.assess(r.id), sampler)
            assert p.view() is view  # the same view, extended
            entries = p.ledger()
            fresh = LedgerView(p.schema, p.genesis)
            fresh.extend(entries)
            costs, curve, rows = _by_hand(entries, p.schema.shape)
            np.testing.assert_allclose(view.cell_costs, costs, rtol=1e-12)
            np.testing.assert_array_equal(view.cell_costs, fresh.cell_costs)
            assert view.cost_curve() == fresh.cost_curve() and len(view.cost_curve()) == n + 1
            assert [c for _, c in view.cost_curve()] == pytest.approx([c for _, c in curve], rel=1e-12)
            rebuilt = History(p.schema.shape, rows)
            with view.assessing() as state:
                assert state.head == (entries[-1].seq, entries[-1].hash) and len(state.history) == len(rows)
                for t in TARGETS:
                    tq = query_from_json(t, p.schema.n_cells, p.schema.shape)
                    a, b = (
                        state.history.estimate(tq),
                        rebuilt.estimate(tq),
                    )  # the kept one reuses its factorisation
                    assert a.estimable == b.estimable
                    if a.estimable:
                        assert a.estimate == pytest.approx(b.estimate, rel=1e-9, abs=1e-9)
                        assert a.variance == pytest.approx(b.variance, rel=1e-9)
        assert view.history_builds == 1  # built once, then only extended
        # who spent each cell: each fresh answer's own charge on it, the inferred one nothing
        kinds = {e.request_id: e.kind for e in p.ledger()}
        assert sorted(kinds.values()).count("inferred") >= 1  # a free release charges nothing
        for cell in range(4):
            spent = dict(view.spenders(cell))
            assert set(spent) == {
                rid for rid, k in kinds.items() if k == "fresh" and p.request(rid).query.dense()[cell] != 0
            }
            assert sum(spent.values()) == pytest.approx(view.cell_costs[cell], rel=1e-12)
        # an entry that does not continue the chain is refused, and the view is unchanged
        with pytest.raises(StoreError, match="does not extend"):
            view.add(p.ledger()[0])
        assert view.head == p.head()
