"""Arithmetic on queries that never builds what it does not need: inner products and |Q|.

Inner products of product-form queries factor over attributes (``⟨q, r⟩ = Π_d ⟨q_d, r_d⟩``, DESIGN §1),
so they cost ``Σ_d |dom_d|`` rather than ``n``; :func:`inner_many` stacks many rows into one matrix per
attribute. :func:`abs_dense` gives the per-cell ``|Q|`` of the privacy accounting without caching it.
"""

from __future__ import annotations

import math
from functools import reduce
from typing import Sequence

import numpy as np

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.query import Query, Term

def abs_dense(q: Query) -> np.ndarray:
    """``|Q_j|`` for every cell, as a new array that is not cached on the query.

    Per-cell accounting needs ``|Q|`` once per released row; for a single product term it is the
    outer product of the factors' absolute values, built here and dropped after use, so a long
    history over a large cube does not keep one dense vector per row alive.
    """
    if q.terms is not None and len(q.terms) == 1:
        t = q.terms[0]
        return (abs(t.weight) * reduce(np.multiply.outer, [np.abs(f) for f in t.factors])).reshape(-1)
    return np.abs(q.dense())


def inner(q: Query, r: Query) -> float:
    """``⟨q, r⟩``; when both are product form of the same shape, ``Σ_{t,s} w_t w_s Π_d ⟨f_td, g_sd⟩``."""
    if q.n_cells != r.n_cells:
        raise QueryError(f"query has {r.n_cells} coefficients, the other query has {q.n_cells}")
    if q.terms is not None and r.terms is not None and q.shape == r.shape:
        total = 0.0
        for t in q.terms:
            for s in r.terms:
                total += t.weight * s.weight * math.prod(float(np.dot(f, g)) for f, g in zip(t.factors, s.factors))
        return total
    small, big = (q, r) if q.support_size() <= r.support_size() else (r, q)
    idx, val = small.sparse()
    return float(np.dot(val, big.values_at(idx)))


# Cap on the elements of one temporary block in inner_many, to bound memory on large supports.
_BLOCK_ELEMENTS = 1 << 22


def inner_many(q: Query, rows: Sequence[Query]) -> np.ndarray:
    """``[⟨q, r⟩ for r in rows]``, vectorised.

    Product-form rows of ``q``'s shape are stacked into one factor matrix per attribute, so the whole
    batch costs a few matrix products over the short per-attribute axes; sparse rows are gathered into
    one index array evaluated against ``q`` at once.
    """
    m = len(rows)
    out = np.zeros(m)
    if m == 0:
        return out
    prod_owner: list[int] = []
    prod_terms: list[Term] = []
    sparse_owner: list[np.ndarray] = []
    sparse_idx: list[np.ndarray] = []
    sparse_val: list[np.ndarray] = []
    for i, r in enumerate(rows):
        if r.n_cells != q.n_cells:
            raise QueryError(f"query {i} has {r.n_cells} coefficients, the target query has {q.n_cells}")
        if r.terms is not None and r.shape == q.shape and (q.terms is not None or r.support_size() > q.support_size()):
            prod_owner.extend([i] * len(r.terms))
            prod_terms.extend(r.terms)
        else:
            idx, val = r.sparse()
            sparse_owner.append(np.full(idx.size, i, dtype=np.int64))
            sparse_idx.append(idx)
            sparse_val.append(val)
    if prod_terms:
        owner = np.asarray(prod_owner, dtype=np.int64)
        weights = np.array([t.weight for t in prod_terms])
        mats = [np.stack([t.factors[d] for t in prod_terms]) for d in range(len(q.shape))]
        if q.terms is not None:
            acc = np.zeros(len(prod_terms))
            for t in q.terms:
                prod = np.full(len(prod_terms), t.weight)
                for mat, f in zip(mats, t.factors):
                    prod *= mat @ f
                acc += prod
        else:
            acc = _stacked_against_sparse(mats, q)
        out += np.bincount(owner, weights=weights * acc, minlength=m)
    if sparse_idx:
        total = sum(i.size for i in sparse_idx)
        if q.terms is None or len(q.terms) > 1 or total * 8 >= q.n_cells:
            # Gathering from the dense target beats evaluating it at many indices.
            qd = q.dense()
            for owner, idx, val in zip(sparse_owner, sparse_idx, sparse_val):
                if idx.size:
                    out[owner[0]] += float(np.dot(val, qd[idx]))
        else:
            idx = np.concatenate(sparse_idx)
            weights = np.concatenate(sparse_val) * q.values_at(idx)
            out += np.bincount(np.concatenate(sparse_owner), weights=weights, minlength=m)
    return out


def _stacked_against_sparse(mats: list[np.ndarray], q: Query) -> np.ndarray:
    """``Σ_j q_j Π_d M_d[:, j_d]`` for each stacked term (row of the ``M_d``), in memory-bounded blocks."""
    idx, val = q.sparse()
    coords = np.unravel_index(idx, q.shape)
    k = mats[0].shape[0]
    # Transposed (cells × terms) so each gather copies contiguous rows.
    mats_t = [np.ascontiguousarray(mat.T) for mat in mats]
    acc = np.zeros(k)
    step = max(1, _BLOCK_ELEMENTS // max(k, 1))
    for start in range(0, idx.size, step):
        sl = slice(start, start + step)
        block = mats_t[0][coords[0][sl]]
        for mat_t, c in zip(mats_t[1:], coords[1:]):
            block *= mat_t[c[sl]]
        acc += val[sl] @ block
    return acc


# -------------------------------------------------------------------- constructors


