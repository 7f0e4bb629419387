"""The History kept between GUI assessments: extended as answers arrive, equal to a rebuild."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.query import query_from_json
from dpdesk.store import Project
from dpdesk.store.replay import HistoryCache, history_from_ledger

RELEASED = ([1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1], [0, 0, 1, 1])
TARGETS = ([1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1], [0, 0, 1, 0])


def _answer_all(path, seed):
    with Project.open(path, "w") as p:
        sampler = SeededSampler(seed)
        for q in RELEASED:
            p.answer(p.add_request(q, 2.0, 0.1).id, sampler=sampler)
            yield p.ledger(), p.schema


def test_the_cache_extends_its_history_and_matches_a_rebuild(store):
    cache = HistoryCache()
    for n, (entries, schema) in enumerate(_answer_all(store.new_project(budget=50.0, test_project=True), 3), 1):
        with cache.lock:
            cached = cache.history(entries, schema)
            rebuilt = history_from_ledger(entries, schema)
            assert len(cached) == len(rebuilt) == n
            for t in TARGETS:
                q = query_from_json(t, schema.n_cells, schema.shape)
                a, b = cached.estimate(q), rebuilt.estimate(q)  # the cached one reuses its factorisation
                assert a.estimable == b.estimable
                if a.estimable:
                    assert a.estimate == pytest.approx(b.estimate, rel=1e-9, abs=1e-9)
                    assert a.variance == pytest.approx(b.variance, rel=1e-9)
            np.testing.assert_allclose(cached.cell_costs, rebuilt.cell_costs, rtol=1e-12)
    assert cache.rebuilds == 1  # built once, then only extended
    # a ledger that does not extend the cached one (another project's answers) starts over
    *_, (entries, schema) = _answer_all(store.new_project("other.dpdesk", budget=50.0, test_project=True), 4)
    with cache.lock:
        h = cache.history(entries, schema)
        assert [r.answer for r in h.rows] == [r.answer for r in history_from_ledger(entries, schema).rows]
    assert cache.rebuilds == 2
