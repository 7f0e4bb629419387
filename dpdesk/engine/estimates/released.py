"""The released answers that zero-cost estimates post-process, with the noise moments they need.

:class:`Released` is what both seed methods read: each released row's query, noisy answer, noise
variance and fourth moment (the cross-validation's noise floor depends on it). Nothing in it comes
from the table: it is built from the ledger's history or, in benchmarks, from simulated releases.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.errors import HistoryError
from dpdesk.engine.estimates.kernel import AnyQuery
from dpdesk.engine.mechanisms.registry import noise_family

__all__ = ["Released"]


def _ro(a: Any) -> np.ndarray:
    out: np.ndarray = np.array(a, dtype=np.float64, copy=True).reshape(-1)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class Released:
    """Released rows: ``answers[i] = queries[i]·x + e_i`` with independent zero-mean noise.

    Attributes
    ----------
    shape : tuple of int
        The cube's shape.
    queries : tuple
        :class:`~dpdesk.engine.queries.query.Query` or :class:`~dpdesk.engine.estimates.kernel.LocalQuery`.
    answers, variances, fourth_moments : ndarray
        Per row: the noisy answer, ``E[e²]`` and ``E[e⁴]`` (read-only).
    """

    shape: tuple[int, ...]
    queries: tuple[AnyQuery, ...]
    answers: np.ndarray
    variances: np.ndarray
    fourth_moments: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        object.__setattr__(self, "queries", tuple(self.queries))
        m = len(self.queries)
        for name in ("answers", "variances", "fourth_moments"):
            arr = _ro(getattr(self, name))
            if arr.size != m:
                raise HistoryError(f"released rows: {name} has {arr.size} entries for {m} queries")
            if not np.all(np.isfinite(arr)):
                raise HistoryError(f"released rows: {name} has a NaN or infinite entry")
            object.__setattr__(self, name, arr)
        if m and np.any(self.variances <= 0):
            raise HistoryError("released rows: every noise variance must be positive")

    def __len__(self) -> int:
        return len(self.queries)

    @classmethod
    def laplace(
        cls, shape: Sequence[int], queries: Sequence[AnyQuery], answers: Any, scales: Any
    ) -> Released:
        """Rows released with continuous Laplace noise of the given scales ``b`` (variance ``2b²``)."""
        b = np.broadcast_to(np.asarray(scales, dtype=np.float64), (len(queries),))
        return cls(tuple(shape), tuple(queries), answers, 2.0 * b * b, 24.0 * b**4)

    @classmethod
    def from_history(cls, history: Any) -> Released:
        """The fresh answers of an engine :class:`~dpdesk.engine.inference.history.History`."""
        rows = list(history.rows)
        return cls(
            tuple(history.shape),
            tuple(r.query for r in rows),
            np.array([r.answer for r in rows], dtype=float),
            np.array([r.variance for r in rows], dtype=float),
            np.array([noise_family(r.family).fourth_moment(r.scale) for r in rows], dtype=float),
        )

    def subset(self, keep: np.ndarray) -> Released:
        keep = np.asarray(keep, dtype=np.int64)
        return Released(
            self.shape,
            tuple(self.queries[i] for i in keep),
            self.answers[keep],
            self.variances[keep],
            self.fourth_moments[keep],
        )
