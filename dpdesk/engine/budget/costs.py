"""Per-cell privacy costs ``B_j = Σ_i (α_i/S_i)|H_ij|`` (paper Thm 5.4), accumulated in batches.

Adding a released row's ``(α/S)|Q|`` to a dense vector of ``n`` cells costs a pass over ``n`` numbers
per row — most of the time of replaying a long ledger over a large cube. A single-term product-form
query has ``|Q| = |w|·⊗_d |f_d|``, so ``k`` such rows add up to a sum of ``k`` outer products: with the
attributes split into a left and a right group, that sum is one matrix product
``Xₗᵀ X_r`` (``Xₗ``: ``k × Π left``, ``X_r``: ``k × Π right``). Rows are kept in that factored form
until the costs are read (or a batch is full); other rows are added densely right away.
"""

from __future__ import annotations

import math
from functools import reduce

import numpy as np

from dpdesk.engine.queries.algebra import abs_dense
from dpdesk.engine.queries.query import Query

__all__ = ["CellCosts"]

BATCH = 512  # factored rows kept before they are added (bounds the two k × ~√n matrices)


def _split(shape: tuple[int, ...]) -> int:
    """Number of leading attributes whose cell count is closest to ``√n`` (at least 1, not all)."""
    target = 0.5 * math.log(max(math.prod(shape), 1))
    best, best_gap, acc = 1, math.inf, 0.0
    for h in range(1, len(shape)):
        acc += math.log(shape[h - 1])
        if abs(acc - target) < best_gap:
            best, best_gap = h, abs(acc - target)
    return best


class CellCosts:
    """``B`` over a cube of ``shape``; :meth:`add` a row's ``(α/S, Q)``, read :attr:`values`.

    Examples
    --------
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> b = CellCosts((2, 2))
    >>> b.add(0.5, query_from_vector([1, -2, 0, 0], (2, 2)))
    >>> b.values.tolist()
    [0.5, 1.0, 0.0, 0.0]
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(int(k) for k in shape)
        self._dense = np.zeros(math.prod(self.shape))
        self._h = _split(self.shape) if len(self.shape) > 1 else 0
        self._pending: list[tuple[float, tuple[np.ndarray, ...]]] = []
        self._snapshot: np.ndarray | None = None  # a read-only copy of B, until B next changes

    def load(self, values: np.ndarray) -> None:
        """Set ``B`` to ``values`` (a stored copy read back)."""
        self._dense = np.array(values, dtype=float)
        self._pending, self._snapshot = [], None

    def add(self, scale: float, query: Query) -> None:
        """``B += scale·|Q|`` (``scale = α/S``)."""
        self._snapshot = None
        terms = query.terms
        if self._h and terms is not None and len(terms) == 1 and len(terms[0].factors) == len(self.shape):
            t = terms[0]
            self._pending.append((scale * abs(t.weight), tuple(np.abs(f) for f in t.factors)))
            if len(self._pending) >= BATCH:
                self._apply()
        else:
            self._dense += scale * abs_dense(query)

    def add_touched(self, scale: float, query: Query) -> float:
        """``B += scale·|Q|`` at once; returns the largest ``B`` among the cells ``Q`` touches (0 if none).

        Costs only grow, so the running maximum of these is the system cost after each row without a
        pass over the whole cube (a cost curve over thousands of rows of a 10⁶-cell cube). The values
        added are those :meth:`add` would add, rounded alike (a product term as left block × right block).
        """
        self._apply()
        self._snapshot = None
        terms = query.terms
        if not (
            self._h and terms is not None and len(terms) == 1 and len(terms[0].factors) == len(self.shape)
        ):
            a = scale * abs_dense(query)
            self._dense += a
            touched = a > 0
            return float(self._dense[touched].max()) if touched.any() else 0.0
        t, h = terms[0], self._h
        fs = [np.abs(f) for f in t.factors]
        nz = [np.flatnonzero(f) for f in fs]
        if any(i.size == 0 for i in nz):
            return 0.0
        left = (scale * abs(t.weight)) * reduce(np.multiply.outer, [f[i] for f, i in zip(fs[:h], nz[:h])])
        right = reduce(np.multiply.outer, [f[i] for f, i in zip(fs[h:], nz[h:])])
        box = np.ix_(*nz)
        cube = self._dense.reshape(self.shape)
        cube[box] += np.multiply.outer(left.reshape(-1), right.reshape(-1)).reshape([i.size for i in nz])
        return float(cube[box].max())

    def add_uniform(self, amount: float) -> None:
        """``B += amount`` on every cell (a release charged the same on every cell, e.g. a partition)."""
        self._snapshot = None
        self._dense += amount

    def _apply(self) -> None:
        if not self._pending:
            return
        h, k = self._h, len(self._pending)
        left, right = math.prod(self.shape[:h]), math.prod(self.shape[h:])
        Xl, Xr = np.empty((k, left)), np.empty((k, right))
        for i, (c, fs) in enumerate(self._pending):
            Xl[i] = c * reduce(np.multiply.outer, fs[:h]).reshape(-1)
            Xr[i] = reduce(np.multiply.outer, fs[h:]).reshape(-1)
        self._pending = []
        view = self._dense.reshape(left, right)
        view += Xl.T @ Xr

    @property
    def values(self) -> np.ndarray:
        """The dense ``B`` (the internal array: do not modify)."""
        self._apply()
        return self._dense

    def snapshot(self) -> np.ndarray:
        """A read-only copy of ``B``, the same object until ``B`` next changes: what previews are handed,
        so that what they learn of it (:func:`~dpdesk.engine.budget.peaks.peaks_of`) is learnt once."""
        if self._snapshot is None:
            out = self.values.copy()
            out.setflags(write=False)
            self._snapshot = out
        return self._snapshot
