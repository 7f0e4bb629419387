"""The seed's §5.1 query kinds on the IPUMS-like table, with their exact answers from 2-way marginals.

- 2-D range query: a random pair of attributes (each pair equally likely) and a random interval on
  each (two uniform endpoints, sorted) — one product-form term, ones on the other attributes;
- 2-D counting query: a random pair and a random 0/1 function on ``A_i × A_j`` (each entry a fair coin),
  a :class:`~dpdesk.engine.estimates.kernel.LocalQuery`.
"""

from __future__ import annotations

import itertools

import numpy as np

from dpdesk.engine.estimates.kernel import LocalQuery
from dpdesk.engine.queries.query import Query, Term

from .ipums_like import marginal

PAIRS = tuple(itertools.combinations(range(9), 2))


def range_queries(rng: np.random.Generator, m: int, sizes: tuple[int, ...]) -> list[Query]:
    out = []
    for _ in range(m):
        pairs = tuple(itertools.combinations(range(len(sizes)), 2))
        i, j = pairs[rng.integers(len(pairs))]
        factors = [np.ones(k) for k in sizes]
        for d in (i, j):
            lo, hi = np.sort(rng.integers(0, sizes[d], 2))
            f = np.zeros(sizes[d])
            f[lo : hi + 1] = 1.0
            factors[d] = f
        out.append(Query(tuple(sizes), terms=(Term(1.0, tuple(factors)),)))
    return out


def counting_queries(rng: np.random.Generator, m: int, sizes: tuple[int, ...]) -> list[LocalQuery]:
    out = []
    for _ in range(m):
        pairs = tuple(itertools.combinations(range(len(sizes)), 2))
        i, j = pairs[rng.integers(len(pairs))]
        table = (rng.random((sizes[i], sizes[j])) < 0.5).astype(float)
        if not table.any():
            table[0, 0] = 1.0
        out.append(LocalQuery(tuple(sizes), (i, j), table))
    return out


def true_answers(queries, margs: dict[tuple[int, int], np.ndarray]) -> np.ndarray:
    """Exact answers from precomputed 2-way marginals ``margs[(i, j)]`` (``i < j``)."""
    out = np.empty(len(queries))
    for n, q in enumerate(queries):
        if isinstance(q, LocalQuery):
            out[n] = float(np.sum(margs[q.axes] * q.table))
        else:
            f = q.terms[0].factors
            axes = tuple(d for d, v in enumerate(f) if not np.all(v == 1.0))
            if len(axes) == 1:  # an interval covering a whole attribute: pick any partner
                axes = (axes[0], (axes[0] + 1) % 9) if axes[0] < 8 else (0, 8)
                axes = tuple(sorted(axes))
            elif not axes:
                axes = (0, 1)
            i, j = axes
            out[n] = float(q.terms[0].weight * (f[i] @ margs[(i, j)] @ f[j]))
    return out


def all_pair_marginals(codes: np.ndarray, sizes: tuple[int, ...]) -> dict[tuple[int, int], np.ndarray]:
    return {p: marginal(codes, p, sizes) for p in PAIRS}
