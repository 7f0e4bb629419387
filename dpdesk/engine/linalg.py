"""Small incremental linear-algebra pieces the history engine is built from.

A growable lower-triangular Cholesky factor, its rank-one update, and triangular solves on the filled
part. They let the history append one row in O(r²) instead of refactoring in O(r³) (DESIGN §1).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular


class GrowingCholesky:
    """Lower-triangular ``L`` with ``L Lᵀ = M`` for a symmetric positive-definite ``M`` that grows.

    ``extend(l, d)`` appends a row ``[lᵀ, d]`` (the new last row of ``L``); ``rank_one_update(x)``
    replaces ``M`` by ``M + x xᵀ``. Storage doubles as needed, so ``r`` appends cost O(r²) each.
    """

    def __init__(self, capacity: int = 64) -> None:
        # unused rows hold a unit diagonal, so the whole store is a valid triangular matrix whose
        # leading block is L: solving with the store and zero-padded right-hand sides needs no copy
        self._L = np.eye(capacity)
        self.size = 0
        self._solver: np.ndarray | None = None  # contiguous copy for LAPACK, refreshed after changes
        self.identity = True  # M is the identity (only unit rows appended, never updated)

    @property
    def L(self) -> np.ndarray:
        return self._L[: self.size, : self.size]

    def _contiguous(self) -> np.ndarray:
        # LAPACK needs a contiguous matrix; a slice of the over-allocated store would be copied on
        # every solve, so keep one copy until the factor changes
        if self._solver is None or self._solver.shape[0] != self.size:
            self._solver = np.ascontiguousarray(self.L)
        return self._solver

    def _reserve(self, size: int) -> None:
        cap = self._L.shape[0]
        if size <= cap:
            return
        new = np.eye(max(size, 2 * cap))
        new[: self.size, : self.size] = self.L
        self._L = new

    def extend(self, row: np.ndarray, diag: float) -> None:
        r = self.size
        self._reserve(r + 1)
        self._L[r, :r] = row
        self._L[r, r] = diag
        self.size = r + 1
        self._solver = None
        if diag != 1.0 or np.any(row):
            self.identity = False

    def extend_identity(self) -> None:
        """Append a unit row/column to ``M`` (uncoupled to the existing part)."""
        self.extend(np.zeros(self.size), 1.0)

    def rank_one_update(self, x: np.ndarray) -> None:
        """``M ← M + x xᵀ`` by the classic O(r²) Givens-style update (vectorised per column)."""
        L = self.L
        x = np.array(x, dtype=float)
        n = self.size
        self._solver = None
        if np.any(x):
            self.identity = False
        for k in range(n):
            xk = x[k]
            if xk == 0.0:
                continue
            lkk = L[k, k]
            r = np.hypot(lkk, xk)
            c = r / lkk
            s = xk / lkk
            L[k, k] = r
            if k + 1 < n:
                col = L[k + 1 :, k]
                col += s * x[k + 1 :]
                col /= c
                x[k + 1 :] = c * x[k + 1 :] - s * col

    def _solve(self, b: np.ndarray, trans: str, cached: bool) -> np.ndarray:
        if self.size == 0:
            return np.zeros(0)
        if self.identity:
            return np.array(b, dtype=float)
        if cached:  # repeated solves with the same factor (assessing many requests)
            return solve_triangular(self._contiguous(), b, lower=True, trans=trans, check_finite=False)
        # one solve right after a change (appending rows): use the whole store, no O(r²) copy
        padded = np.zeros(self._L.shape[0])
        padded[: self.size] = b
        return solve_triangular(self._L, padded, lower=True, trans=trans, check_finite=False)[: self.size]

    def solve_lower(self, b: np.ndarray, cached: bool = True) -> np.ndarray:
        """``L⁻¹ b``."""
        return self._solve(b, "N", cached)

    def solve_upper(self, b: np.ndarray, cached: bool = True) -> np.ndarray:
        """``L⁻ᵀ b``."""
        return self._solve(b, "T", cached)

    def solve(self, b: np.ndarray) -> np.ndarray:
        """``M⁻¹ b``."""
        return self.solve_upper(self.solve_lower(b))
