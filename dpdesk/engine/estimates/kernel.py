"""Inner products between queries over huge domains, weighted by a product prior, never as n-vectors.

dpdesk normalises the inner product of two queries by a product distribution ``p0`` over the cells
(the Chen–Zhou–Bhowmick seed, Eq. 18): ``⟨q, r⟩ = Σ_t p0(t) q_t r_t`` with ``p0 = p0_1 ⊗ … ⊗ p0_N`` and
every ``p0_d`` summing to 1. With the uniform prior this is the dot product divided by the number of
cells (seed §3.2), so the universal query ``u`` (all ones) has norm 1 and a 0/1 query's squared norm
is the prior mass of its support. The scale matters: the shrinkage trade-off τ of
:mod:`dpdesk.engine.estimates.shrinkage` is measured against this norm (the seed's claim that
rescaling the kernel leaves the eigenvalues unchanged is false: they scale with it, and τ with them).

Queries come in three forms, compiled into *stacks* of terms that one matrix product handles:

- product form (:class:`~dpdesk.engine.queries.query.Query` terms ``w · f_1 ⊗ … ⊗ f_N``): the inner
  product factors over attributes (seed Eq. 12), ``Π_d Σ_θ p0_d(θ) f_d(θ) g_d(θ)``;
- local form (:class:`LocalQuery`: a coefficient table over a few attributes, ones elsewhere; e.g. a
  random 0/1 function on ``A_i × A_j``, seed Eq. 13): tables are first summed out with ``p0`` over the
  attributes the other query does not share (seed Eq. 15);
- sparse form (explicit cells): the other query is evaluated at those cells.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np
import scipy.sparse as sp

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.query import Query, Term

__all__ = ["LocalQuery", "QueryStack", "check_prior", "gram", "uniform_prior", "universal"]

# Elements of one temporary block (float64): bounds memory of the blocked products below.
_BLOCK = 1 << 23


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class LocalQuery:
    """A query that depends on a few attributes only: ``q_t = table[t[axes]]``.

    Parameters
    ----------
    shape : tuple of int
        The cube's shape (all attributes).
    axes : tuple of int
        The attributes the query depends on, increasing.
    table : ndarray
        Coefficients over those attributes, of shape ``tuple(shape[a] for a in axes)``.

    Examples
    --------
    >>> q = LocalQuery((2, 3, 4), (0, 2), np.arange(8.0).reshape(2, 4))
    >>> q.sensitivity
    7.0
    """

    shape: tuple[int, ...]
    axes: tuple[int, ...]
    table: np.ndarray

    def __post_init__(self) -> None:
        shape = tuple(int(s) for s in self.shape)
        axes = tuple(int(a) for a in self.axes)
        if list(axes) != sorted(set(axes)) or not axes or axes[0] < 0 or axes[-1] >= len(shape):
            raise QueryError(
                f"local query: axes {axes} must be increasing attribute positions in 0..{len(shape) - 1}"
            )
        table = np.asarray(self.table, dtype=np.float64)
        want = tuple(shape[a] for a in axes)
        if table.shape != want:
            raise QueryError(f"local query: table has shape {table.shape}, attributes {axes} need {want}")
        if not np.all(np.isfinite(table)):
            raise QueryError("local query: table has a NaN or infinite coefficient")
        if not np.any(table):
            raise QueryError("local query: all coefficients are zero")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "table", _readonly(table))

    @property
    def n_cells(self) -> int:
        return int(math.prod(self.shape))

    @property
    def sensitivity(self) -> float:
        return float(np.max(np.abs(self.table)))

    def answer(self, counts: np.ndarray) -> float:
        """The true answer on a cube's counts (private; tests and benchmarks only)."""
        others = tuple(d for d in range(len(self.shape)) if d not in self.axes)
        return float(np.sum(np.asarray(counts).reshape(self.shape).sum(axis=others) * self.table))

    def values_at_codes(self, codes: np.ndarray) -> np.ndarray:
        """Coefficients at cells given by per-attribute codes (``codes[:, d]``)."""
        sub = np.ravel_multi_index(tuple(codes[:, a] for a in self.axes), self.table.shape)
        return self.table.reshape(-1)[sub]


AnyQuery = Query | LocalQuery


def uniform_prior(shape: Sequence[int]) -> tuple[np.ndarray, ...]:
    """The uninformative prior: every attribute uniform over its labels."""
    return tuple(_readonly(np.full(int(k), 1.0 / int(k))) for k in shape)


def check_prior(prior: Sequence[np.ndarray] | None, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Validate a product prior (one probability vector per attribute), or make the uniform one."""
    if prior is None:
        return uniform_prior(shape)
    if len(prior) != len(shape):
        raise QueryError(f"prior has {len(prior)} attribute vectors, the cube has {len(shape)} attributes")
    out = []
    for d, (p, k) in enumerate(zip(prior, shape)):
        p = np.asarray(p, dtype=np.float64)
        if p.shape != (k,) or not np.all(np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
            raise QueryError(f"prior for attribute {d}: must be {k} non-negative numbers summing to 1")
        out.append(_readonly(p))
    return tuple(out)


class QueryStack:
    """Many queries compiled into stacks of terms, ready for :func:`gram`.

    ``owner`` arrays map every term to its query's position; the stacks are immutable once built.
    """

    def __init__(self, queries: Sequence[AnyQuery], shape: tuple[int, ...]) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.m = len(queries)
        nd = len(self.shape)
        p_owner: list[int] = []
        p_w: list[float] = []
        p_f: list[list[np.ndarray]] = [[] for _ in range(nd)]
        local: dict[tuple[int, ...], tuple[list[int], list[np.ndarray]]] = {}
        s_owner: list[np.ndarray] = []
        s_idx: list[np.ndarray] = []
        s_val: list[np.ndarray] = []
        for i, q in enumerate(queries):
            if tuple(q.shape) != self.shape:
                raise QueryError(f"query {i} has shape {tuple(q.shape)}, the cube has shape {self.shape}")
            if isinstance(q, LocalQuery):
                owners, tables = local.setdefault(q.axes, ([], []))
                owners.append(i)
                tables.append(q.table.reshape(-1))
            elif q.terms is not None:
                for t in q.terms:
                    p_owner.append(i)
                    p_w.append(t.weight)
                    for d in range(nd):
                        p_f[d].append(t.factors[d])
            else:
                idx, val = q.sparse()
                s_owner.append(np.full(idx.size, i, dtype=np.int64))
                s_idx.append(idx)
                s_val.append(val)
        self.p_owner = np.asarray(p_owner, dtype=np.int64)
        self.p_weight = np.asarray(p_w, dtype=np.float64)
        self.p_factors = [np.stack(f) if f else np.zeros((0, k)) for f, k in zip(p_f, self.shape)]
        self.local = {ax: (np.asarray(o, dtype=np.int64), np.stack(t)) for ax, (o, t) in local.items()}
        if s_idx:
            self.s_owner = np.concatenate(s_owner)
            self.s_idx = np.concatenate(s_idx)
            self.s_val = np.concatenate(s_val)
        else:
            self.s_owner = np.zeros(0, dtype=np.int64)
            self.s_idx = np.zeros(0, dtype=np.int64)
            self.s_val = np.zeros(0)

    def subset(self, keep: np.ndarray) -> QueryStack:
        """The stack of the queries at positions ``keep`` (renumbered 0..len(keep)-1)."""
        keep = np.asarray(keep, dtype=np.int64)
        new = np.full(self.m, -1, dtype=np.int64)
        new[keep] = np.arange(keep.size)
        out = QueryStack.__new__(QueryStack)
        out.shape, out.m = self.shape, int(keep.size)
        sel = new[self.p_owner] >= 0
        out.p_owner, out.p_weight = new[self.p_owner[sel]], self.p_weight[sel]
        out.p_factors = [f[sel] for f in self.p_factors]
        out.local = {}
        for ax, (o, t) in self.local.items():
            s = new[o] >= 0
            if np.any(s):
                out.local[ax] = (new[o[s]], t[s])
        s = new[self.s_owner] >= 0 if self.s_owner.size else np.zeros(0, dtype=bool)
        out.s_owner, out.s_idx, out.s_val = new[self.s_owner[s]], self.s_idx[s], self.s_val[s]
        return out


def _owner_matrix(owner: np.ndarray, m: int) -> sp.csr_matrix:
    return sp.csr_matrix((np.ones(owner.size), (owner, np.arange(owner.size))), shape=(m, owner.size))


def _collapse(owner: np.ndarray, terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``terms`` summed per owner: ``(distinct owners, their rows)`` (as given when owners are distinct)."""
    u, inv = np.unique(owner, return_inverse=True)
    if u.size == owner.size:
        return owner, terms
    merge = sp.csr_matrix((np.ones(owner.size), (inv, np.arange(owner.size))), shape=(u.size, owner.size))
    return u, np.asarray(merge @ terms)


def _aggregate(out: np.ndarray, terms: np.ndarray, oa: np.ndarray, ob: np.ndarray) -> None:
    """``out[oa[i], ob[j]] += terms[i, j]`` for all term pairs.

    Only the block of the owners involved is touched: ``gram`` calls this once per pair of local-query
    groups (up to (N choose 2)² pairs), so adding a full ``m × m`` array each time made the inner
    products of counting-query histories quadratic in the number of groups times ``m²``.
    """
    if terms.size == 0:
        return
    ua, t = _collapse(oa, terms)
    ub, t = _collapse(ob, t.T)
    out[np.ix_(ua, ub)] += t.T


def _kron_rows(mats: list[np.ndarray]) -> np.ndarray:
    """Row-wise Kronecker product: row i is ``mats[0][i] ⊗ mats[1][i] ⊗ …`` (C order)."""
    out = mats[0]
    for m in mats[1:]:
        out = (out[:, :, None] * m[:, None, :]).reshape(out.shape[0], -1)
    return out


def _sum_out(
    tables: np.ndarray,
    axes: tuple[int, ...],
    keep: tuple[int, ...],
    shape: tuple[int, ...],
    prior: Sequence[np.ndarray],
) -> np.ndarray:
    """Contract each table over ``axes \\ keep`` with the prior: returns ``k × Π |A_keep|``."""
    k = tables.shape[0]
    t = tables.reshape((k,) + tuple(shape[a] for a in axes))
    for pos in range(len(axes) - 1, -1, -1):
        if axes[pos] not in keep:
            t = np.tensordot(t, prior[axes[pos]], axes=([pos + 1], [0]))
    return t.reshape(k, -1)


def _prod_local(
    stack: QueryStack, axes: tuple[int, ...], tables: np.ndarray, prior: Sequence[np.ndarray]
) -> np.ndarray:
    """Product terms (rows) against local tables on ``axes`` (columns): ``kp × kl``."""
    nd = len(stack.shape)
    scal = stack.p_weight.copy()
    for d in range(nd):
        if d not in axes:
            scal *= stack.p_factors[d] @ prior[d]
    kp = scal.size
    width = tables.shape[1]
    out = np.empty((kp, tables.shape[0]))
    step = max(1, _BLOCK // max(width, 1))
    for s in range(0, kp, step):
        sl = slice(s, s + step)
        kr = _kron_rows([stack.p_factors[a][sl] * prior[a] for a in axes])
        out[sl] = (kr @ tables.T) * scal[sl, None]
    return out


def _prod_prod(a: QueryStack, b: QueryStack, prior: Sequence[np.ndarray]) -> np.ndarray:
    ka, kb = a.p_weight.size, b.p_weight.size
    out = np.empty((ka, kb))
    step = max(1, _BLOCK // max(kb, 1))
    for s in range(0, ka, step):
        sl = slice(s, s + step)
        blk = np.outer(a.p_weight[sl], b.p_weight)
        for d in range(len(a.shape)):
            blk *= (a.p_factors[d][sl] * prior[d]) @ b.p_factors[d].T
        out[sl] = blk
    return out


def _local_local(
    ax_a: tuple[int, ...],
    ta: np.ndarray,
    ax_b: tuple[int, ...],
    tb: np.ndarray,
    shape: tuple[int, ...],
    prior: Sequence[np.ndarray],
) -> np.ndarray:
    shared = tuple(x for x in ax_a if x in ax_b)
    ma = ta if ax_a == shared else _sum_out(ta, ax_a, shared, shape, prior)
    mb = tb if ax_b == shared else _sum_out(tb, ax_b, shared, shape, prior)
    if shared:
        w = reduce(np.multiply.outer, [prior[x] for x in shared]).reshape(-1)
        return np.asarray((ma * w) @ mb.T)
    return np.asarray(ma @ mb.T)


def _evaluate_at(stack: QueryStack, coords: tuple[np.ndarray, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every term of ``stack`` evaluated at the given cells: list of (owner, k × npoints values)."""
    out = []
    if stack.p_weight.size:
        v = stack.p_weight[:, None] * np.ones((1, coords[0].size))
        for d, c in enumerate(coords):
            v = v * stack.p_factors[d][:, c]
        out.append((stack.p_owner, v))
    for ax, (o, t) in stack.local.items():
        sub = np.ravel_multi_index(tuple(coords[a] for a in ax), tuple(stack.shape[a] for a in ax))
        out.append((o, t[:, sub]))
    return out


def _dense_sparse(dense_side: QueryStack, sparse_side: QueryStack, prior: Sequence[np.ndarray]) -> np.ndarray:
    """Product and local terms of one stack against the sparse rows of the other: ``m_dense × m_sparse``."""
    out = np.zeros((dense_side.m, sparse_side.m))
    if not sparse_side.s_idx.size:
        return out
    coords = np.unravel_index(sparse_side.s_idx, sparse_side.shape)
    p0 = reduce(np.multiply, [prior[d][c] for d, c in enumerate(coords)])
    weights = sp.csr_matrix(
        (sparse_side.s_val * p0, (np.arange(p0.size), sparse_side.s_owner)), shape=(p0.size, sparse_side.m)
    )
    for owner, vals in _evaluate_at(dense_side, coords):
        out += _owner_matrix(owner, dense_side.m) @ np.asarray((weights.T @ vals.T).T)
    return out


def _sparse_sparse(out: np.ndarray, a: QueryStack, b: QueryStack, prior: Sequence[np.ndarray]) -> None:
    cells, inv = np.unique(np.concatenate([a.s_idx, b.s_idx]), return_inverse=True)
    coords = np.unravel_index(cells, a.shape)
    p0 = reduce(np.multiply, [prior[d][c] for d, c in enumerate(coords)])
    na = a.s_idx.size
    ma = sp.csr_matrix((a.s_val, (a.s_owner, inv[:na])), shape=(a.m, cells.size))
    mb = sp.csr_matrix((b.s_val, (b.s_owner, inv[na:])), shape=(b.m, cells.size))
    out += np.asarray((ma.multiply(p0[None, :]) @ mb.T).todense())


def gram(a: QueryStack, b: QueryStack, prior: Sequence[np.ndarray]) -> np.ndarray:
    """``G[i, j] = ⟨a_i, b_j⟩`` under the product prior (module docstring), as an ``a.m × b.m`` array."""
    if a.shape != b.shape:
        raise QueryError(f"queries of shape {a.shape} and {b.shape} cannot be compared")
    prior = check_prior(prior, a.shape)
    out = np.zeros((a.m, b.m))
    if a.p_weight.size and b.p_weight.size:
        _aggregate(out, _prod_prod(a, b, prior), a.p_owner, b.p_owner)
    for ax, (o, t) in b.local.items():
        if a.p_weight.size:
            _aggregate(out, _prod_local(a, ax, t, prior), a.p_owner, o)
    for ax, (o, t) in a.local.items():
        if b.p_weight.size:
            _aggregate(out, _prod_local(b, ax, t, prior).T, o, b.p_owner)
        for bx, (ob, tb) in b.local.items():
            _aggregate(out, _local_local(ax, t, bx, tb, a.shape, prior), o, ob)
    out += _dense_sparse(a, b, prior)
    out += _dense_sparse(b, a, prior).T
    if a.s_idx.size and b.s_idx.size:
        _sparse_sparse(out, a, b, prior)
    return out


def universal(shape: tuple[int, ...]) -> Query:
    """The universal query ``u`` (all ones): its answer is the table size (seed §3.1)."""
    return Query(tuple(shape), terms=(Term(1.0, tuple(np.ones(k) for k in shape)),))
