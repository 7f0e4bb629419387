"""The largest per-cell costs in order, so that a budget preview reads only the cells it touches.

A fresh answer to ``Q`` changes the costs of the cells ``Q`` touches; every other cell keeps its cost.
So the system cost after it is the larger of (a) the touched cells' costs plus their charge and (b) the
largest cost among the cells it does *not* touch. :class:`Peaks` keeps the most expensive few thousand
cells in order (found by one partial sort of the vector, when first asked) and answers (b) with the
first of them the request does not touch; a request touching them all makes the list grow. A cost
vector handed to many previews (:meth:`~dpdesk.engine.budget.costs.CellCosts.snapshot`, read-only and
unchanged until the next release) is summarised once: :func:`peaks_of` keeps the summary of the latest
few such vectors.

Ties are broken as ``np.argmax`` over the dense vector breaks them — the lowest cell index among equal
values — so the preview names the same limiting cell either way.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

__all__ = ["Peaks", "peaks_of"]

_FIRST = 4096  # cells kept in order at first
_KEEP = 4  # summaries kept (the history's costs, the ledger view's, a batch plan's, ...)
_cache: list[tuple[weakref.ref[np.ndarray], Peaks]] = []
_lock = threading.Lock()


class Peaks:
    """The top of one cost vector (never modified while this is used): its maximum and its ``k`` most
    expensive cells in preview order — cost descending, then cell index ascending — ``k`` growing
    eightfold whenever a request touches all of them."""

    def __init__(self, costs: np.ndarray) -> None:
        self.costs = costs
        self.max = float(costs.max()) if costs.size else 0.0
        self._top = np.empty(0, dtype=np.int64)  # cells in preview order
        self._k = 0  # how many were asked for
        self._complete = False  # True when _top holds every cell
        self._lock = threading.Lock()

    def _grow(self, at_least: int) -> None:
        """Make ``_top`` the first ``k ≥ at_least`` cells in preview order (every cell tied with the
        last one kept, so the order is exact), or all cells."""
        n = self.costs.size
        k = self._k = min(n, max(at_least, _FIRST))
        if k >= n:
            order = np.lexsort((np.arange(n), -self.costs))
            self._top, self._complete = order.astype(np.int64), True
            return
        part = np.argpartition(-self.costs, k - 1)[:k]
        edge = float(self.costs[part].min())
        cells = np.flatnonzero(self.costs >= edge)  # the ties at the edge too (ascending)
        if cells.size > 4 * k:  # a huge tie at the edge: keep the cells above it
            cells = np.flatnonzero(self.costs > edge)
        vals = self.costs[cells]
        self._top = cells[np.lexsort((cells, -vals))]

    def largest_outside(self, touched: np.ndarray) -> tuple[float, int] | None:
        """``(value, cell)``: the largest cost among the cells not in ``touched`` (sorted unique flat
        indices), at the lowest such cell index; None when ``touched`` is every cell."""
        n = self.costs.size
        if touched.size >= n:
            return None
        with self._lock:
            while True:
                for part in (self._top[:256], self._top[256:]):  # most requests miss one of the first
                    if part.size:
                        pos = np.searchsorted(touched, part)
                        hit = (pos < touched.size) & (touched[np.minimum(pos, touched.size - 1)] == part)
                        free = np.flatnonzero(~hit)
                        if free.size:
                            j = int(part[free[0]])
                            return float(self.costs[j]), j
                if self._complete:
                    return None
                self._grow(max(8 * self._k, touched.size + 1))


def peaks_of(costs: np.ndarray) -> Peaks:
    """The :class:`Peaks` of ``costs``, kept while ``costs`` lives when it is a read-only array that owns
    its data (nothing can change it); for any other array a fresh one."""
    if costs.flags.writeable or costs.base is not None:
        return Peaks(costs)
    with _lock:
        for ref, peaks in _cache:
            if ref() is costs:
                return peaks
        peaks = Peaks(costs)
        _cache[:] = [(r, p) for r, p in _cache if r() is not None][-(_KEEP - 1) :] + [
            (weakref.ref(costs), peaks)
        ]
        return peaks
