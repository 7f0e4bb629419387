"""Queries over a cube's measures and the cube's own cells, moved between the two (docs/sums.md).

A query over the cube's cells (a count) is the same query over the measures' vector with its
coefficients on the count block (:func:`lift`); a query over the vector charges each cube cell what one
record there can move it (:func:`footprint`, the per-cell load of docs/sums.md Theorem 1), and reads one
block as a query over the cube's cells (:func:`part`). Product form is kept throughout: a term over the
vector is a block factor times the cube's factors.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import DpdeskError, QueryError
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.queries.query import Query, Term, product_form, query_from_vector

__all__ = ["counts_only", "exact_answer", "footprint", "lift", "part", "product_form_over", "value_vector"]


def lift(q: Query, layout: Layout, block: int = 0) -> Query:
    """``q`` over the cube's cells as a query over ``layout``'s vector, on ``block`` (0: the counts).

    Its sensitivity does not change (the block's bound times ``q``'s), and a count's flat indices stay
    what they were: the count block comes first.

    Examples
    --------
    >>> from dpdesk.engine.queries.layout import Block
    >>> lay = Layout((2,), (Block("count", None, 1, 1, 1), Block("sum", "v", 10, 0, 10)))
    >>> q = lift(query_from_vector([1, 0], (2,)), lay)
    >>> q.dense().tolist(), q.sensitivity
    ([1.0, 0.0, 0.0, 0.0], 1.0)
    """
    if q.layout is not None:
        if q.layout != layout:
            raise QueryError("query: it reads another cube's measures")
        return q
    if q.n_cells != layout.n_base:
        raise QueryError(f"query has {q.n_cells} coefficients, the cube has {layout.n_base} cells")
    if not 0 <= block < len(layout.blocks):
        raise QueryError(f"query: block {block} outside 0..{len(layout.blocks) - 1}")
    if q.terms is not None and all(t.shape == layout.cells for t in q.terms):
        e = np.zeros(len(layout.blocks))
        e[block] = 1.0
        terms = tuple(Term(t.weight, (e,) + t.factors) for t in q.terms)
        return Query(layout.shape, terms=terms, text=q.text, layout=layout)
    idx, val = q.sparse()
    return Query(layout.shape, indices=idx + block * layout.n_base, values=val, text=q.text, layout=layout)


def footprint(q: Query) -> Query:
    """The per-cell load of ``q`` over the cube's cells: ``Σ_b B_b |Q_bj|`` (docs/sums.md, Theorem 1).

    A release of ``q`` at budget α charges cube cell ``j`` α times this over ``q.sensitivity``; for a query
    without measures it is ``q`` itself (the charge reads ``|Q_j|``). A single term keeps product form:
    its load is ``|w|·(Σ_b B_b |f_0b|)·|f_1| ⊗ … ⊗ |f_N|``.
    """
    lay = q.layout
    if lay is None:
        return q
    if q.terms is not None and len(q.terms) == 1:
        t = q.terms[0]
        w = abs(t.weight) * float(lay.weights @ np.abs(t.factors[0]))
        return Query(lay.cells, terms=(Term(w, tuple(np.abs(f) for f in t.factors[1:])),))
    return query_from_vector(q.record_loads(), lay.cells)


def part(q: Query, block: int) -> Query | None:
    """The coefficients ``q`` puts on ``block``, as a query over the cube's cells (None: none)."""
    lay = q.layout
    if lay is None:
        return q if block == 0 else None
    if q.terms is not None:
        terms = tuple(
            Term(t.weight * t.factors[0][block], t.factors[1:]) for t in q.terms if t.factors[0][block]
        )
        return Query(lay.cells, terms=terms) if terms else None
    idx, val = q.sparse()
    n = lay.n_base
    lo, hi = np.searchsorted(idx, [block * n, (block + 1) * n])
    if lo == hi:
        return None
    return Query(lay.cells, indices=idx[lo:hi] - block * n, values=val[lo:hi])


def product_form_over(q: Query) -> Query:
    """A stored query over measures back in product form: each block's coefficients one weight on one box
    (a sum and a count over the same box become one term); ``q`` itself when a block is not of that form."""
    lay = q.layout
    if lay is None:
        return product_form(q)
    if q.terms is not None:
        return q
    terms = []
    for b in range(len(lay.blocks)):
        p = part(q, b)
        if p is None:
            continue
        pf = product_form(Query(lay.cells, indices=p.indices, values=p.values))
        if pf.terms is None:
            return q
        e = np.zeros(len(lay.blocks))
        e[b] = 1.0
        terms += [Term(t.weight, (e,) + t.factors) for t in pf.terms]
    return Query(lay.shape, terms=tuple(terms), text=q.text, layout=lay)


def counts_only(q: Query) -> Query | None:
    """``q`` as a query over the cube's cells when it reads the counts alone (None when it reads sums or
    value counts): what releases of counts alone — a partition release's cells — can estimate."""
    if q.layout is None:
        return q
    if any(part(q, b) is not None for b in range(1, len(q.layout.blocks))):
        return None
    return part(q, 0)


def value_vector(layout: Layout, cube: Cube) -> np.ndarray:
    """The vector a query over ``layout`` reads, from ``cube``: its counts, each measure's per-cell sums,
    each skipping measure's per-cell number of values (private: for the curator and the mechanism only)."""
    parts = []
    for b in layout.blocks:
        if b.kind == "count":
            parts.append(np.asarray(cube.flat, dtype=float))
        elif b.kind == "sum":
            parts.append(np.asarray(cube.measure(str(b.measure)).flat_sums, dtype=float))
        else:
            parts.append(np.asarray(cube.measure(str(b.measure)).flat_counts, dtype=float))
    return np.concatenate(parts)


def exact_answer(query: Query, cube: Cube) -> Fraction:
    """``θ = Q·x`` exactly — private; what a release's noise is applied to (the secure sampler's input).

    Every coefficient is a binary fraction ``M·2^E`` (a float) and every count an integer, so the sum is
    a binary fraction too: the counts are summed per distinct coefficient in int64 and the few sums are
    combined in exact integer arithmetic (no rounding anywhere: a float θ would carry a rounding error
    that depends on the data, and OpenDP's measurement must see θ itself).

    Examples
    --------
    >>> from dpdesk.engine.schema import Schema
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> s = Schema.from_dict({"attributes": [{"name": "a", "column": "a", "kind": "categorical",
    ...                                       "values": ["x", "y", "z"]}]})
    >>> cube = Cube(s, np.array([3, 10**17, 1]))
    >>> theta = exact_answer(query_from_vector([0.1, 1.0, 0.37], (3,)), cube)
    >>> theta == 3 * Fraction(0.1) + 10**17 + Fraction(0.37)
    True
    """
    if query.layout is not None:  # over the cube's measures: counts, and sums that are binary fractions
        if query.layout != Layout.of(cube.schema):
            raise DpdeskError("query reads measures this cube does not hold")
        idx, val = query.sparse()
        values = value_vector(query.layout, cube)[idx]
        whole = (values == np.floor(values)) & (np.abs(values) < 2.0**53)
        theta = _grouped(np.asarray(val, dtype=float)[whole], values[whole].astype(np.int64))
        rest = zip(np.asarray(val, dtype=float)[~whole], values[~whole])
        return theta + sum((Fraction(float(c)) * Fraction(float(v)) for c, v in rest), Fraction(0))
    if query.n_cells != cube.schema.n_cells:
        raise DpdeskError(f"query has {query.n_cells} coefficients, the cube has {cube.schema.n_cells} cells")
    idx, val = query.sparse()
    return _grouped(np.asarray(val, dtype=float), np.asarray(cube.flat[idx], dtype=np.int64))


def _grouped(coefficients: np.ndarray, counts: np.ndarray) -> Fraction:
    """``Σ c_i n_i`` exactly: the integer ``n_i`` summed per distinct coefficient in int64, then combined
    as binary fractions."""
    distinct, where = np.unique(coefficients, return_inverse=True)
    sums = np.zeros(distinct.size, dtype=np.int64)
    np.add.at(sums, where.reshape(-1), counts)
    return sum((Fraction(float(c)) * int(n) for c, n in zip(distinct, sums) if n), Fraction(0))
