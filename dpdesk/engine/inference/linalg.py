"""Small incremental linear-algebra pieces the history engine is built from.

A growable lower-triangular Cholesky factor with rank-one updates and coupled extensions, and
triangular solves on the filled part. They let the history append one row in O(r²) instead of
refactoring in O(r³) (DESIGN §1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def solve_triangular(*args: Any, **kwargs: Any) -> Any:
    """SciPy's ``solve_triangular``, imported on first use: ``scipy.linalg`` costs a fresh process a
    few tenths of a second of imports, which a command that solves nothing (a fresh answer on an
    empty history, ``dpdesk answer`` of a first request) should not pay."""
    from scipy.linalg import solve_triangular as solve

    return solve(*args, **kwargs)


# A queued change costs one O(r) Python sweep of ~r column steps (≈10 µs each); refactoring costs one
# LAPACK Cholesky of r³/3 flops (≈5 GFlop/s here). Refactor when k·r·1e-5 s > r³/1.5e10 s.
_REFACTOR_RATIO = 1.5e5
# rows appended after the contiguous copy of L was made that are solved as a block beside it before
# a new copy is made: at least this many, or an eighth of the copy (so copies cost O(r) per row)
_BLOCK_ROWS = 64


def factor_consistent(L: np.ndarray, diag_squares: np.ndarray) -> bool:
    """Whether the rows of a lower-triangular ``L`` have the squared norms ``diag(L Lᵀ)`` must have (the
    basis rows' own squared norms), a positive finite diagonal and nothing above it — O(r²) reads."""
    if L.ndim != 2 or L.shape[0] != L.shape[1] or L.shape[0] != diag_squares.shape[0]:
        return False
    d = np.diagonal(L)
    if not (np.all(np.isfinite(d)) and np.all(d > 0)):
        return False
    if L.shape[0] > 1 and np.any(L[0, 1:]):  # the first row (a cheap sample of the upper part)
        return False
    norms = np.einsum("ij,ij->i", L, L)
    return bool(np.allclose(norms, diag_squares, rtol=1e-8, atol=0.0))


class GrowingCholesky:
    """Lower-triangular ``L`` with ``L Lᵀ = M`` for a symmetric positive-definite ``M`` that grows.

    ``extend(l, d)`` appends a row ``[lᵀ, d]`` to ``L`` right away. ``rank_one_update(x)``
    (``M ← M + x xᵀ``) and ``extend_coupled(c, e)`` (``M ← [[M + c cᵀ, e c], [e cᵀ, e²]]``) update
    the dense ``M`` kept beside ``L`` in O(r²) and queue the change; the queue is applied when ``L``
    is next used — replayed change by change when it is short, or by refactoring ``M`` once when
    that is cheaper (rebuilding a long history).
    """

    def __init__(self, capacity: int = 64, *, queued: bool = True) -> None:
        # unused rows hold a unit diagonal, so the whole store is a valid triangular matrix whose
        # leading block is L: solving with the store and zero-padded right-hand sides needs no copy
        self._L = np.eye(capacity)
        # M is kept only for factors that take queued changes (a factor that only grows needs none)
        self._M = np.zeros((capacity, capacity)) if queued else None
        # M's rank-one terms not yet added: M = M_stored + Σ x̃ x̃ᵀ (x̃ zero-padded). Adding them one by
        # one is an O(r²) memory sweep per term; stacked, they are added by one matrix product.
        self._terms: list[np.ndarray] = []
        self._ops: list[tuple[np.ndarray, float | None]] = []  # (x, None) update; (c, e) extension
        self._current = 0  # rows of L that are up to date
        self.size = 0
        # a contiguous copy of L's leading rows for LAPACK (a slice of the over-allocated store is not
        # contiguous); rows appended since are solved as a block beside it, see _solve
        self._solver: np.ndarray | None = None
        self.identity = True  # M is the identity (only unit rows appended, never updated)
        # while M is the identity the stores are not kept up to date: L = M = I of ``size`` is written into
        # them (``_unfold``) only when something else happens. A history of independent rows keeps an
        # identity factor of thousands of rows; materialising it costs O(r²) memory and O(r²) per row.
        self._lazy = True

    @classmethod
    def identity_of(cls, size: int, *, queued: bool = True) -> GrowingCholesky:
        """The factor of the ``size × size`` identity (nothing of that size is allocated until it changes)."""
        c = cls(capacity=1, queued=queued)
        c.size = c._current = int(size)
        return c

    def consistent_with(self, diag_squares: np.ndarray | None = None) -> bool:
        """Whether ``L`` agrees with what it factors (:func:`factor_consistent`; O(r²) reads, no solve).

        ``diag_squares``: the squared norms of the rows factored (``diag(L Lᵀ)``); by default ``diag(M)``
        of a factor that keeps ``M``, and a factor that keeps none is then taken as it is. An identity
        factor always agrees. Queued changes are applied first (a factor read back from storage has none).
        """
        if self.identity or not self.size:
            return True
        L = self.L  # with queued changes applied (none on a factor read back from storage)
        if diag_squares is None:
            if self._M is None:
                return True
            self._apply_terms()
            diag_squares = np.diagonal(self._M[: self.size, : self.size])
        return factor_consistent(L, np.asarray(diag_squares, dtype=float))

    def _unfold(self) -> None:
        """Write the identity factor into the stores (before the first change that is not a unit row)."""
        if not self._lazy:
            return
        self._lazy = False
        n = self.size
        cap = max(self._L.shape[0], n)
        if cap > self._L.shape[0]:
            self._L = np.eye(cap)
            if self._M is not None:
                self._M = np.zeros((cap, cap))
        else:
            self._L[:n, :n] = np.eye(n)
        if self._M is not None:
            self._M[:n, :n] = np.eye(n)

    @property
    def L(self) -> np.ndarray:
        self._unfold()
        self._flush()
        return self._L[: self.size, : self.size]

    def _reserve(self, size: int) -> None:
        self._unfold()
        cap = self._L.shape[0]
        if size <= cap:
            return
        cap = max(size, 2 * cap)
        L = np.eye(cap)
        L[: self._current, : self._current] = self._L[: self._current, : self._current]
        self._L = L
        if self._M is not None:
            M = np.zeros((cap, cap))
            M[: self.size, : self.size] = self._M[: self.size, : self.size]
            self._M = M

    def extend(self, row: np.ndarray, diag: float) -> None:
        """Append ``[rowᵀ, diag]`` as the new last row of ``L``."""
        if self._lazy and diag == 1.0 and not np.any(row):
            self.size = self._current = self.size + 1  # still the identity
            return
        self._flush()
        r = self.size
        self._reserve(r + 1)
        if self._M is not None:
            if r:
                coupling = self._L[:r, :r] @ row
                self._M[r, :r] = coupling
                self._M[:r, r] = coupling
            self._M[r, r] = float(row @ row) + diag * diag
        self._L[r, :r] = row
        self._L[r, r] = diag
        self.size = self._current = r + 1  # rows above are unchanged: the copy in _solver stays valid
        if diag != 1.0 or np.any(row):
            self.identity = False

    def extend_identity(self) -> None:
        """Append a unit row/column to ``M`` (uncoupled to the existing part)."""
        self.extend(np.zeros(self.size), 1.0)

    def extend_coupled(self, c: np.ndarray, e: float) -> None:
        """``M ← [[M + c cᵀ, e c], [e cᵀ, e²]]`` (queued): a new zero row/column, then ``+ x xᵀ`` with
        ``x = [c, e]``."""
        if self._M is None:
            raise ValueError("this factor was created with queued=False")
        c = np.array(c, dtype=float)
        r = self.size
        if self._lazy and e == 1.0 and not np.any(c):
            self.size = self._current = r + 1  # still the identity
            self._solver = None
            return
        self._reserve(r + 1)
        if np.any(c) or e != 1.0:
            self.identity = False
        self._add_term(np.append(c, e))
        self.size = r + 1
        self._ops.append((c, float(e)))
        self._solver = None

    def rank_one_update(self, x: np.ndarray) -> None:
        """``M ← M + x xᵀ`` (queued)."""
        if self._M is None:
            raise ValueError("this factor was created with queued=False")
        x = np.array(x, dtype=float)
        if not np.any(x):
            return
        self._unfold()
        self._add_term(x)
        self._ops.append((x, None))
        self._solver = None
        self.identity = False

    def _add_term(self, x: np.ndarray) -> None:
        self._terms.append(x)
        if len(self._terms) >= 256:  # bound the memory the stacked terms take
            self._apply_terms()

    def _apply_terms(self) -> None:
        """``M += Xᵀ X`` for the stacked pending terms (one BLAS-3 product instead of k sweeps)."""
        if not self._terms:
            return
        self._unfold()
        assert self._M is not None
        n = max(len(x) for x in self._terms)
        X = np.zeros((len(self._terms), n))
        for k, x in enumerate(self._terms):
            X[k, : len(x)] = x
        self._terms = []
        self._M[:n, :n] += X.T @ X

    def _flush(self) -> None:
        if not self._ops:
            return
        ops, self._ops = self._ops, []
        n = self.size
        # a handful of changes (one released answer) is always applied as an update, never a refactor
        if len(ops) > max(8.0, n * n / _REFACTOR_RATIO):
            self._apply_terms()
            assert self._M is not None
            self._L[:n, :n] = np.linalg.cholesky(self._M[:n, :n])
        else:
            cur = self._current
            for v, e in ops:
                if np.any(v):
                    self._sweep(v, cur)
                if e is not None:
                    l = (
                        solve_triangular(self._L[:cur, :cur], e * v, lower=True, check_finite=False)
                        if cur
                        else np.zeros(0)
                    )
                    self._L[cur, :cur] = l
                    self._L[cur, cur] = math.sqrt(max(e * e - float(l @ l), 1e-300))
                    cur += 1
        self._current = n
        self._solver = None

    def _sweep(self, x: np.ndarray, n: int) -> None:
        """The classic O(r²) Givens-style rank-one update of the leading ``n`` rows of ``L``."""
        L = self._L[:n, :n]
        x = x.copy()
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

    def _solve(self, b: np.ndarray, trans: str) -> np.ndarray:
        if self.size == 0:
            return np.zeros(0)
        if self.identity:
            return np.array(b, dtype=float)
        self._flush()
        n, S = self.size, self._solver
        if S is None or n - S.shape[0] > max(_BLOCK_ROWS, S.shape[0] // 8):
            S = self._solver = np.ascontiguousarray(self._L[:n, :n])
        b = np.asarray(b, dtype=float)
        r0 = S.shape[0]
        if r0 == n:
            return np.asarray(solve_triangular(S, b, lower=True, trans=trans, check_finite=False))
        # L = [[S, 0], [L21, L22]] with S the copy of the leading rows: the rows appended since are a
        # block solved beside it (copying r² numbers after every appended row — assess, release, assess,
        # … — cost more than the solves themselves on a history of thousands of rows)
        L21, L22 = self._L[r0:n, :r0], self._L[r0:n, r0:n]
        if trans == "N":
            x0 = solve_triangular(S, b[:r0], lower=True, check_finite=False)
            x1 = solve_triangular(L22, b[r0:] - L21 @ x0, lower=True, check_finite=False)
        else:
            x1 = solve_triangular(L22, b[r0:], lower=True, trans="T", check_finite=False)
            x0 = solve_triangular(S, b[:r0] - L21.T @ x1, lower=True, trans="T", check_finite=False)
        return np.concatenate([x0, x1])

    def solve_lower(self, b: np.ndarray) -> np.ndarray:
        """``L⁻¹ b``."""
        return self._solve(b, "N")

    def solve_upper(self, b: np.ndarray) -> np.ndarray:
        """``L⁻ᵀ b``."""
        return self._solve(b, "T")

    def solve(self, b: np.ndarray) -> np.ndarray:
        """``M⁻¹ b``."""
        return self.solve_upper(self.solve_lower(b))
