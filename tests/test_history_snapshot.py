"""A History stored as arrays and rebuilt (engine/inference/snapshot.py) answers exactly as the original,
before and after more rows arrive, in both forms, with dependent rows and sparse rows among them."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.errors import HistoryError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.inference.snapshot import factor_consistent, history_arrays, history_from_arrays
from dpdesk.engine.queries.query import Query, Term

SHAPE = (6, 5, 4)


def box(rng: np.random.Generator) -> Query:
    factors = []
    for k in SHAPE:
        lo = int(rng.integers(0, k))
        hi = int(rng.integers(lo + 1, k + 1))
        f = np.zeros(k)
        f[lo:hi] = 1.0
        factors.append(f)
    return Query(SHAPE, terms=(Term(float(rng.integers(1, 3)), tuple(factors)),))


def rows(rng: np.random.Generator, m: int) -> list[HistoryRow]:
    out = []
    for i in range(m):
        if i % 7 == 3:  # a sparse row (not one product term)
            idx = np.sort(rng.choice(int(np.prod(SHAPE)), size=5, replace=False))
            q = Query(SHAPE, indices=idx, values=rng.integers(1, 4, size=5).astype(float))
        elif i % 5 == 4 and i:  # an exact repeat: a dependent row
            q = out[i - 2].query
        else:
            q = box(rng)
        out.append(
            HistoryRow(
                q,
                float(rng.uniform(0.05, 0.5)),
                float(rng.normal(100, 10)),
                "laplace" if i % 3 else "discrete_laplace",
            )
        )
    return out


def same(a, b) -> None:
    assert a.estimable == b.estimable
    if a.estimable:
        assert a.estimate == pytest.approx(b.estimate, rel=1e-9, abs=1e-9)
        assert a.variance == pytest.approx(b.variance, rel=1e-9)
        assert a.families == b.families
        np.testing.assert_allclose(a.coefficients, b.coefficients, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("form", ["dual", "primal"])
def test_rebuilt_history_answers_as_the_original(form: str) -> None:
    rng = np.random.default_rng(7)
    first = rows(rng, 40)
    h = History(SHAPE, first)
    targets = [box(rng) for _ in range(6)] + [first[3].query, first[0].query]
    for q in targets:  # builds the factorisation of the chosen form
        h.estimate(q, form)
    meta, arrays = history_arrays(h)
    assert meta["spaces"] == [form]
    g = history_from_arrays(meta, {k: np.array(v) for k, v in arrays.items()})
    assert len(g) == len(h)
    np.testing.assert_array_equal(g.cell_costs, h.cell_costs)
    for q in targets:
        same(g.estimate(q, form), h.estimate(q, form))
    # both grow the same way afterwards (new independent, dependent and sparse rows)
    for row in rows(np.random.default_rng(8), 12):
        h.append(row)
        g.append(row)
    for q in targets + [box(rng) for _ in range(4)]:
        same(g.estimate(q, form), h.estimate(q, form))
    assert [r.query for r in g.rows] == [r.query for r in h.rows]
    assert [(r.alpha, r.answer, r.family) for r in g.rows] == [(r.alpha, r.answer, r.family) for r in h.rows]


def test_arrays_that_do_not_fit_are_refused() -> None:
    h = History(SHAPE, rows(np.random.default_rng(1), 10))
    meta, arrays = history_arrays(h)
    arrays = dict(arrays, alpha=arrays["alpha"][:-1])
    with pytest.raises(HistoryError, match="alpha has 9 rows, expected 10"):
        history_from_arrays(meta, arrays)


def test_factor_consistent_catches_an_edited_factor() -> None:
    rng = np.random.default_rng(3)
    h = History(SHAPE, [HistoryRow(box(rng), 0.3, 10.0) for _ in range(30)])
    h.estimate(box(rng), "dual")
    meta, arrays = history_arrays(h)
    L = np.array(arrays["space.dual.gram.L"])
    ids = arrays["space.dual.ids"]
    norms = np.array(
        [h._w.view[i] ** 2 * float(h.rows[i].query.dense() @ h.rows[i].query.dense()) for i in ids]
    )
    assert factor_consistent(L, norms)
    L[len(L) // 2, 1] += 0.01
    assert not factor_consistent(L, norms)


@pytest.mark.parametrize(
    "form, factor",
    [
        ("dual", "space.dual.gram.L"),
        ("dual", "space.dual.coords.L"),
        ("primal", "space.primal.coords.L"),
        ("primal", "space.primal.U"),
    ],
)
def test_history_factors_consistent_holds_for_built_factors_and_catches_an_edited_one(
    form: str, factor: str
) -> None:
    # the public check the view cache runs on a History read back from storage (store/view_cache.py)
    rng = np.random.default_rng(11)
    h = History(
        SHAPE, rows(rng, 40)
    )  # sparse rows and exact repeats among them: coords factors not the identity
    h.estimate(box(rng), form)
    assert h.factors_consistent()
    meta, arrays = history_arrays(h)
    assert factor in arrays
    assert history_from_arrays(meta, {k: np.array(v) for k, v in arrays.items()}).factors_consistent()
    edited = {k: np.array(v) for k, v in arrays.items()}
    edited[factor][len(edited[factor]) // 2, 1] += 0.01
    assert not history_from_arrays(meta, edited).factors_consistent()
