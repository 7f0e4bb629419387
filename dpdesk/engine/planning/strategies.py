"""Candidate measurement strategies for a batch of requests (the matrix mechanism's search space).

A strategy is a set of linear queries to measure with *relative* budgets: measuring every row ``i`` at
``t·w_i`` charges cell ``j`` ``t · P_j`` with the profile ``P = Σ_i w_i |S_ij| / S_i`` (paper Thm 5.4).
The weights are normalised so that ``max_j P_j = 1``: ``t`` is then the strategy's increase of the
system cost on an empty ledger, and the planner only has to choose ``t``.

The families follow the matrix mechanism literature (Li et al.; McKenna et al.'s HDMM, whose product
strategies are Kronecker products of per-attribute matrices; Ektelo's plans):

* ``requests`` — the requests' own queries, with budgets in proportion to what each needs alone
  (Thm 5.3) or uniform per row: answers to overlapping requests then reinforce each other;
* ``identity`` — every cell the batch touches, once;
* ``marginals`` — for each set of attributes some request varies over, that marginal (only its rows
  that meet the batch's cells);
* ``hierarchical`` — the Kronecker product of per-attribute binary range trees (Hay et al.) over the
  span the batch touches on ordered attributes, the identity on the touched values of unordered ones,
  and the total on attributes no request varies over.

Every strategy is built from the requests' queries and the public schema only — never from data.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.queries.query import Query, Term

__all__ = ["ROW_LIMIT", "Strategy", "candidate_strategies", "kronecker_axes", "product_rows", "workload_axes"]

# more rows than this make a strategy's history too slow to factor for an interactive plan
ROW_LIMIT = 1500
# the dense view of a request is only taken on cubes up to this many cells
DENSE_LIMIT = 2_000_000


@dataclass(frozen=True)
class Strategy:
    """Rows to measure and their relative budgets, normalised so the largest per-cell charge is 1."""

    name: str
    rows: tuple[Query, ...]
    weights: np.ndarray  # relative α of each row (read-only)
    profile: np.ndarray  # per-cell charge at t = 1 (read-only); max 1

    @classmethod
    def build(cls, name: str, rows: Sequence[Query], weights: Sequence[float] | np.ndarray) -> Strategy:
        w = np.asarray(weights, dtype=float)
        if not rows:
            raise ValueError("a strategy needs at least one row")
        n = rows[0].n_cells
        prof = np.zeros(n)
        for q, wi in zip(rows, w):
            idx, vals = q.sparse()
            prof[idx] += wi * np.abs(vals) / q.sensitivity
        top = float(prof.max())
        w, prof = w / top, prof / top
        w.setflags(write=False)
        prof.setflags(write=False)
        return cls(name, tuple(rows), w, prof)

    def __len__(self) -> int:
        return len(self.rows)


def workload_axes(queries: Sequence[Query]) -> tuple[np.ndarray, list[frozenset[int]], list[set[int]]]:
    """The cells the batch touches, each request's varying axes, and per axis the positions touched.

    An axis *varies* in a query when the query is not constant along it (a count that filters on the
    attribute); positions touched on an axis are those where some request has a nonzero coefficient.
    """
    shape = queries[0].shape
    support = np.zeros(queries[0].n_cells, dtype=bool)
    varying: list[frozenset[int]] = []
    touched: list[set[int]] = [set() for _ in shape]
    for q in queries:
        idx, _ = q.sparse()
        support[idx] = True
        coords = np.unravel_index(idx, shape)
        for d, c in enumerate(coords):
            touched[d].update(int(v) for v in np.unique(c))
        if q.n_cells <= DENSE_LIMIT:
            cube = q.dense().reshape(shape)
            axes = frozenset(d for d in range(len(shape)) if shape[d] > 1 and np.ptp(cube, axis=d).max() > 0)
        else:  # too big to look at densely: assume it filters on every axis
            axes = frozenset(d for d in range(len(shape)) if shape[d] > 1)
        varying.append(axes)
    return np.flatnonzero(support), varying, touched


def _indicator(size: int, positions: Sequence[int]) -> np.ndarray:
    v = np.zeros(size)
    v[list(positions)] = 1.0
    return v


def _ranges(lo: int, hi: int) -> list[tuple[int, int]]:
    """The nodes of a binary range tree over positions ``lo..hi−1`` (root first)."""
    out, level = [], [(lo, hi)]
    while level:
        out += level
        level = [half for a, b in level if b - a > 1 for half in ((a, (a + b) // 2), ((a + b) // 2, b))]
    return out


def kronecker_axes(
    shape: tuple[int, ...], vary: frozenset[int], ordered: Sequence[bool], touched: Sequence[Collection[int]]
) -> list[list[np.ndarray]]:
    """Per axis, the factors of a Kronecker strategy: a binary range tree over the span of the positions
    ``touched`` on an ordered axis, their set and each of them on an unordered one, and the axis's total
    where no query varies it (``vary``)."""
    per_axis = []
    for d in range(len(shape)):
        if d not in vary:
            per_axis.append([np.ones(shape[d])])
        elif ordered[d]:
            lo, hi = min(touched[d]), max(touched[d]) + 1
            per_axis.append([_indicator(shape[d], range(a, b)) for a, b in _ranges(lo, hi)])
        else:
            pos = sorted(touched[d])
            per_axis.append([_indicator(shape[d], pos)] + [_indicator(shape[d], [p]) for p in pos])
    return per_axis


def product_rows(shape: tuple[int, ...], per_axis: Sequence[Sequence[np.ndarray]]) -> list[Query]:
    """The rows of the Kronecker product of the per-axis factors, one product-form query each."""
    rows = []
    for factors in itertools.product(*per_axis):
        rows.append(Query(shape, terms=(Term(1.0, tuple(factors)),)))
    return rows


def candidate_strategies(
    queries: Sequence[Query],
    weights_alone: Sequence[float],
    *,
    ordered: Sequence[bool] | None = None,
    row_limit: int = ROW_LIMIT,
) -> list[Strategy]:
    """The candidate strategies for the requests ``queries`` (each needing ``weights_alone`` α alone).

    ``ordered[d]`` says whether axis ``d``'s positions are ordered (numeric bins: ranges make sense);
    default: every axis. Strategies with more than ``row_limit`` rows are left out.
    """
    if not queries:
        return []
    shape = queries[0].shape
    ordered = tuple(ordered) if ordered is not None else (True,) * len(shape)
    out: list[Strategy] = []
    distinct: dict[Query, float] = {}
    for q, a in zip(queries, weights_alone):
        distinct[q] = max(distinct.get(q, 0.0), float(a))
    qs = list(distinct)
    if len(qs) <= row_limit:
        out.append(Strategy.build("requests", qs, [distinct[q] for q in qs]))
        out.append(Strategy.build("requests (even)", qs, [q.sensitivity for q in qs]))
    support, varying, touched = workload_axes(qs)
    if 0 < support.size <= row_limit:
        n = qs[0].n_cells
        ident = [Query(shape, indices=np.array([j], dtype=np.int64), values=np.ones(1)) for j in support]
        if n > 0:
            out.append(Strategy.build("identity", ident, np.ones(len(ident))))
    in_support = np.zeros(qs[0].n_cells, dtype=bool)
    in_support[support] = True
    # marginals over each distinct set of varying axes, only rows meeting the batch's cells
    marg_rows: list[Query] = []
    marg_weights: list[float] = []
    subsets = sorted({v for v in varying}, key=lambda s: (len(s), sorted(s)))
    if subsets and sum(math.prod(len(touched[d]) for d in s) for s in subsets) <= row_limit:
        for s in subsets:
            per_axis = [
                [_indicator(shape[d], [p]) for p in sorted(touched[d])] if d in s else [np.ones(shape[d])]
                for d in range(len(shape))
            ]
            for r in product_rows(shape, per_axis):
                if in_support[r.sparse()[0]].any():
                    marg_rows.append(r)
                    marg_weights.append(1.0)
        if marg_rows:
            out.append(Strategy.build("marginals", marg_rows, marg_weights))
    # Kronecker product of per-axis range trees (ordered) / identities (unordered) / totals (constant)
    any_vary = frozenset().union(*varying) if varying else frozenset()
    per_axis = kronecker_axes(shape, any_vary, ordered, touched)
    if math.prod(len(p) for p in per_axis) <= row_limit and any(len(p) > 1 for p in per_axis):
        rows = [r for r in product_rows(shape, per_axis) if in_support[r.sparse()[0]].any()]
        if rows:
            out.append(Strategy.build("hierarchical", rows, np.ones(len(rows))))
    return out
