"""Arithmetic on queries that never builds what it does not need: inner products, |Q| and Q².

Inner products of product-form queries factor over attributes (``⟨q, r⟩ = Π_d ⟨q_d, r_d⟩``, DESIGN §1),
so they cost ``Σ_d |dom_d|`` rather than ``n``. :func:`abs_dense` gives the per-cell ``|Q|`` of the privacy
accounting without caching it.
"""

from __future__ import annotations

import math
from functools import reduce

import numpy as np

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.query import Query, Term


def abs_dense(q: Query) -> np.ndarray:
    """``|Q_j|`` for every cell, as a new array that is not cached on the query.

    Per-cell accounting needs ``|Q|`` once per released row; for a single product term it is the
    outer product of the factors' absolute values, built here and dropped after use, so a long
    history over a large cube does not keep one dense vector per row alive. For a query over measures it
    is the per-record load ``Σ_b B_b |Q_bj|`` of every cube cell (``Query.record_loads``).
    """
    if q.layout is not None:  # over measures: what one record in each cube cell can move (docs/sums.md)
        return q.record_loads()
    if q.terms is not None and len(q.terms) == 1:
        t = q.terms[0]
        return np.asarray(
            (abs(t.weight) * reduce(np.multiply.outer, [np.abs(f) for f in t.factors])).reshape(-1)
        )
    return np.asarray(np.abs(q.dense()))


def squared(q: Query) -> Query:
    """The query whose coefficients are ``Q_j²`` (product form kept for a single product term).

    A Gaussian release charges cell ``j`` in proportion to ``Q_j²`` (ρ-zCDP), where a Laplace one charges
    ``|Q_j|``; the squared query carries that through the per-cell accounting unchanged.

    Examples
    --------
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> squared(query_from_vector([2, -1, 0], (3,))).dense().tolist()
    [4.0, 1.0, 0.0]
    """
    if q.terms is not None and len(q.terms) == 1:
        t = q.terms[0]
        return Query(q.shape, terms=(Term(t.weight * t.weight, tuple(f * f for f in t.factors)),))
    idx, val = q.sparse()
    return Query(q.shape, indices=idx, values=val * val)


def inner(q: Query, r: Query) -> float:
    """``⟨q, r⟩``; when both are product form of the same shape, ``Σ_{t,s} w_t w_s Π_d ⟨f_td, g_sd⟩``."""
    if q.n_cells != r.n_cells:
        raise QueryError(f"query has {r.n_cells} coefficients, the other query has {q.n_cells}")
    if q.terms is not None and r.terms is not None and q.shape == r.shape:
        total = 0.0
        for t in q.terms:
            for s in r.terms:
                total += (
                    t.weight * s.weight * math.prod(float(np.dot(f, g)) for f, g in zip(t.factors, s.factors))
                )
        return total
    small, big = (q, r) if q.support_size() <= r.support_size() else (r, q)
    idx, val = small.sparse()
    return float(np.dot(val, big.values_at(idx)))
