"""The row space of a history's whitened rows, in the primal and the dual form (DESIGN §1).

:class:`History` keeps its rows as ``Z = C·K``: ``K`` a basis of the row space, ``C`` every row's
coordinates in it. :class:`_PrimalSpace` keeps ``K`` as orthonormal vectors of length n (small cubes);
:class:`_DualSpace` keeps a subset of the history rows and needs only inner products between queries,
which :class:`_ProductStack` evaluates in factored form. Both take rows one at a time (an answer just
released) or a block at a time (a stored history rebuilt), with the O(r·n) or O(r²) work per row done
as matrix products.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpdesk.engine.inference.linalg import GrowingCholesky
from dpdesk.engine.queries.algebra import inner
from dpdesk.engine.queries.query import Query

# A row (or target) whose squared residual outside the current row space is below this fraction of its
# squared norm counts as inside it. Integer queries are either exactly dependent (residual ~1e-15) or
# clearly independent, so the threshold is not delicate.
DEPENDENCE_TOL = 1e-9


class _GrowArray:
    """A 1-D or 2-D float array that grows along axis 0 with amortised O(1) appends."""

    def __init__(self, width: int | None = None) -> None:
        shape = (16,) if width is None else (16, width)
        self._a = np.zeros(shape)
        self.n = 0

    def append(self, value: Any) -> None:
        if self.n == self._a.shape[0]:
            new = np.zeros((2 * self.n,) + self._a.shape[1:])
            new[: self.n] = self._a[: self.n]
            self._a = new
        self._a[self.n] = value
        self.n += 1

    @property
    def view(self) -> np.ndarray:
        return self._a[: self.n]


class _ProductStack:
    """Inner products of one query with many rows, vectorised over single-term product-form rows.

    Rows are registered once; ``dots(q, ids)`` returns ``⟨q, row_j⟩`` for the selected row ids. For a
    product-form ``q`` the single-term rows cost ``Σ_d |dom_d|`` each (per-attribute matrix products),
    never a length-n vector (DESIGN §1: inner products factor over attributes).
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.rows: list[Query] = []
        self._factors = [_GrowArray(k) for k in shape]
        self._weights = _GrowArray()
        self._single = _GrowArray()
        # sparse-form rows, concatenated: row id, flat cell index, coefficient
        self._sp_row: list[np.ndarray] = []
        self._sp_idx: list[np.ndarray] = []
        self._sp_val: list[np.ndarray] = []
        self._sp_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._sparse_rows = np.zeros(0, dtype=bool)

    def add(self, q: Query) -> None:
        self.rows.append(q)
        terms = q.terms
        if terms is not None and len(terms) == 1 and len(terms[0].factors) == len(self.shape):
            t = terms[0]
            for d, f in enumerate(t.factors):
                self._factors[d].append(f)
            self._weights.append(t.weight)
            self._single.append(1.0)
        else:
            for d, k in enumerate(self.shape):
                self._factors[d].append(np.zeros(k))
            self._weights.append(0.0)
            self._single.append(0.0)
        is_sparse = q.terms is None
        if is_sparse:
            idx, val = q.sparse()
            self._sp_row.append(np.full(len(idx), len(self.rows) - 1, dtype=np.int64))
            self._sp_idx.append(np.asarray(idx, dtype=np.int64))
            self._sp_val.append(np.asarray(val, dtype=float))
            self._sp_cache = None
        self._sparse_rows = np.append(self._sparse_rows, is_sparse)

    def _sparse_dots(self, q: Query) -> np.ndarray:
        """``⟨q, row⟩`` for every row (zero for rows not in sparse form), in O(total nnz)."""
        if self._sp_cache is None:
            self._sp_cache = (
                np.concatenate(self._sp_row),
                np.concatenate(self._sp_idx),
                np.concatenate(self._sp_val),
            )
        rows, idx, val = self._sp_cache
        return np.bincount(rows, weights=val * q.values_at(idx), minlength=len(self.rows))

    def squared_norms(self, ids: np.ndarray) -> np.ndarray:
        """``‖row_j‖²`` of the selected rows: w² Π_d |f_d|² for a one-term row, its own inner product else."""
        norms: np.ndarray = self._weights.view[ids] ** 2
        for f in self._factors:
            norms = norms * np.einsum("ij,ij->i", f.view[ids], f.view[ids])
        for k in np.flatnonzero(self._single.view[ids] == 0):  # the others, one by one
            norms[k] = self.dots(self.rows[int(ids[k])], ids[k : k + 1])[0]
        return norms

    def dots(self, q: Query, ids: np.ndarray) -> np.ndarray:
        out = np.zeros(len(ids))
        if len(ids) == 0:
            return out
        single = self._single.view[ids] > 0
        if q.terms is not None and all(len(t.factors) == len(self.shape) for t in q.terms):
            sel = ids[single]
            if len(sel):
                acc = np.zeros(len(sel))
                for t in q.terms:
                    prod = self._weights.view[sel] * t.weight
                    for d, f in enumerate(t.factors):
                        prod = prod * (self._factors[d].view[sel] @ f)
                    acc += prod
                out[single] = acc
            rest = np.flatnonzero(~single)
        else:
            rest = np.arange(len(ids))
        if len(rest):
            sparse = self._sparse_rows[ids[rest]]
            if sparse.any():
                out[rest[sparse]] = self._sparse_dots(q)[ids[rest[sparse]]]
            others = rest[~sparse]
            if q.terms is None and len(others):
                # a sparse target (e.g. a sum of boxes) against one-term rows: the rows' factors gathered
                # at its cells, many rows at a time, instead of one inner product (and query) per row
                one = others[self._single.view[ids[others]] > 0]
                out[one] = self._gathered_dots(q, ids[one])
                others = others[self._single.view[ids[others]] == 0]
            for j in others:
                out[j] = inner(q, self.rows[int(ids[j])])
        return out

    def _gathered_dots(self, q: Query, ids: np.ndarray) -> np.ndarray:
        """``⟨q, row⟩`` for single-term rows ``ids`` and a sparse ``q``: Σ_c q_c · w Π_d f_d[c_d]."""
        idx, val = q.sparse()
        coords = np.unravel_index(idx, self.shape)
        out = np.empty(len(ids))
        step = max(1, (1 << 21) // max(1, len(idx)))  # about 16 MB of gathered factors at a time
        for lo in range(0, len(ids), step):
            sel = ids[lo : lo + step]
            prod = self._factors[0].view[sel][:, coords[0]]
            for d in range(1, len(self.shape)):
                prod *= self._factors[d].view[sel][:, coords[d]]
            out[lo : lo + step] = self._weights.view[sel] * (prod @ val)
        return out


class _RowSpace:
    """``Z = C·K`` bookkeeping shared by both forms: coordinates of rows and Cholesky of ``CᵀC``."""

    form = "?"

    def __init__(self) -> None:
        self.coords_chol = GrowingCholesky()  # Cholesky of CᵀC (r × r)
        self.basis_rows: list[int] = []  # history row index that introduced each basis vector
        self.dependent: dict[int, np.ndarray] = {}  # row index → its coordinates (length at the time)
        self.size = 0  # rows seen
        self._dep_cache: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def rank(self) -> int:
        return len(self.basis_rows)

    def _record(self, coords: np.ndarray, new_norm: float | None) -> None:
        """Register a row with coordinates ``coords`` in the current basis, plus ``new_norm`` on a new one."""
        row = self.size
        self.size += 1
        if new_norm is None:
            self.dependent[row] = coords
            self.coords_chol.rank_one_update(coords)
            return
        # CᵀC grows to [[M + c cᵀ, e c], [e cᵀ, e²]]
        self.coords_chol.extend_coupled(coords, new_norm)
        self.basis_rows.append(row)

    def lam(self, mu: np.ndarray) -> np.ndarray:
        """Minimum-norm ``λ`` with ``Cᵀλ = μ``: ``λ = C (CᵀC)⁻¹ μ``."""
        v = self.coords_chol.solve(mu)
        lam = np.zeros(self.size)
        lam[self.basis_rows] = self._basis_lam(v)
        if self.dependent:
            if self._dep_cache is None or self._dep_cache[0].shape[0] != len(self.dependent):
                rows = np.fromiter(self.dependent.keys(), dtype=np.int64, count=len(self.dependent))
                width = max(len(c) for c in self.dependent.values())
                D = np.zeros((len(rows), width))
                for k, c in enumerate(self.dependent.values()):
                    D[k, : len(c)] = c
                self._dep_cache = (D, rows)
            D, rows = self._dep_cache
            lam[rows] = D @ v[: D.shape[1]]
        return lam

    def factors_consistent(self) -> bool:
        """Whether the stored factorisations agree with the rows they factor (O(r²) reads, no solve)."""
        return self.coords_chol.consistent_with()

    def _basis_lam(self, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def coordinates(self, q: Query) -> tuple[np.ndarray, float]:
        """``μ`` (``q``'s coordinates in the basis) and the relative squared residual of ``q`` off the rows."""
        raise NotImplementedError


class _PrimalSpace(_RowSpace):
    """Orthonormal basis vectors of length n (good when the cube is small)."""

    form = "primal"

    def __init__(self, n: int) -> None:
        super().__init__()
        self.U = _GrowArray(n)
        self._own: list[np.ndarray] = []  # coordinates of each basis row (length j+1)
        self._R: np.ndarray | None = None

    def factors_consistent(self) -> bool:
        U = self.U
        return super().factors_consistent() and (
            not U.n or bool(np.allclose(np.einsum("ij,ij->i", U.view, U.view), 1.0, rtol=1e-8))
        )

    def add(self, z: np.ndarray) -> None:
        U = self.U.view
        p = U @ z
        self._finish(z, z - U.T @ p, p, U.shape[0], 0)

    def add_block(self, Z: np.ndarray) -> None:
        """Add the rows of ``Z`` in order, as :meth:`add` would, with the basis sweeps done as matrix
        products: each row is projected on the basis it starts from twice, for the whole block at once
        (classical Gram-Schmidt twice), then on the vectors earlier rows of the block added."""
        U = self.U.view
        if U.shape[0]:
            P = Z @ U.T
            E = Z - P @ U
            P2 = E @ U.T
            E -= P2 @ U
            P += P2
        else:
            P, E = np.zeros((Z.shape[0], 0)), Z.copy()
        start = U.shape[0]
        for i in range(Z.shape[0]):
            self._finish(Z[i], E[i], P[i], start, start)

    def _finish(self, z: np.ndarray, e: np.ndarray, p: np.ndarray, start: int, again: int) -> None:
        """Orthogonalise ``e`` (``z`` minus its projection ``p`` on basis vectors ``< start``) against
        basis vectors ``start..``, then record ``z`` as dependent or as a new basis vector. On
        cancellation the projection is repeated on vectors ``again..`` (the ones projected on once)."""
        Unew = self.U.view[start:]
        if Unew.shape[0]:
            q = Unew @ e
            e = e - Unew.T @ q
            p = np.concatenate([p, q])
        zz = float(z @ z)
        enorm = float(np.linalg.norm(e))
        if enorm * enorm > DEPENDENCE_TOL * zz and enorm < 0.7 * math.sqrt(zz):
            # cancellation: a second Gram-Schmidt pass keeps U orthonormal ("twice is enough")
            U = self.U.view[again:]
            p2 = U @ e
            e = e - U.T @ p2
            p = p.copy()
            p[again:] += p2
            enorm = float(np.linalg.norm(e))
        if enorm * enorm <= DEPENDENCE_TOL * zz:
            self._record(p, None)
            return
        self.U.append(e / enorm)
        self._own.append(np.append(p, enorm))
        self._record(p, enorm)

    def _basis_lam(self, v: np.ndarray) -> np.ndarray:
        # basis row j has coordinates _own[j] (length j+1): a lower-triangular matrix times v
        r = len(self._own)
        if self._R is None or self._R.shape[0] != r:
            R = np.zeros((r, r))
            for j, c in enumerate(self._own):
                R[j, : j + 1] = c
            self._R = R
        return np.asarray(self._R @ v)

    def coordinates(self, q: Query) -> tuple[np.ndarray, float]:
        qd = q.dense()
        mu = self.U.view @ qd
        qq = float(qd @ qd)
        return mu, max(qq - float(mu @ mu), 0.0) / qq


class _DualSpace(_RowSpace):
    """A subset of history rows as the basis; only inner products between queries are needed."""

    form = "dual"

    def __init__(self, stack: _ProductStack, weights: _GrowArray) -> None:
        super().__init__()
        self.stack = stack
        self.weights = weights
        self.gram = GrowingCholesky(queued=False)  # Cholesky of the basis rows' Gram matrix (only grows)
        self._ids = np.zeros(0, dtype=np.int64)

    def factors_consistent(self) -> bool:
        ids = self._ids  # the basis rows the Gram factor covers, whitened by their weights
        return super().factors_consistent() and self.gram.consistent_with(
            self.stack.squared_norms(ids) * self.weights.view[ids] ** 2
        )

    def _basis_dots(self, q: Query) -> np.ndarray:
        """``⟨z_B, q⟩`` for the whitened basis rows."""
        return np.asarray(self.stack.dots(q, self._ids) * self.weights.view[self._ids])

    def add(self, z_query: Query, w: float) -> None:
        g = self._basis_dots(z_query) * w
        s = w * w * inner(z_query, z_query)
        l = self.gram.solve_lower(g)
        d2 = s - float(l @ l)
        if d2 <= DEPENDENCE_TOL * s:
            # coordinates in the (non-orthogonal) basis rows
            self._record(self.gram.solve_upper(l), None)
            return
        # New basis row: its coordinates are the unit vector on itself (basis rows are rows of Z).
        self.gram.extend(l, math.sqrt(d2))
        self._ids = np.append(self._ids, self.size)
        self._record(np.zeros(self.rank), 1.0)

    def add_block(self, rows: Sequence[tuple[Query, float]]) -> None:
        """Add whitened rows ``(query, w)`` in order, as :meth:`add` would, with the O(r²) work per row
        done as matrix products: one triangular solve for the whole block against the Gram factor it
        starts from, and one for the coordinates of all of its dependent rows."""
        from scipy.linalg import solve_triangular

        r0, first = self.rank, self.size
        G = np.stack([self._basis_dots(q) * w for q, w in rows]) if r0 else np.zeros((len(rows), 0))
        L0 = self.gram.L.copy()
        Lg = solve_triangular(L0, G.T, lower=True, check_finite=False) if r0 else np.zeros((0, len(rows)))
        new: list[int] = []  # rows of this block that became basis vectors (history row indices)
        decided: list[tuple[bool, np.ndarray]] = []  # (dependent, l) per row
        for i, (q, w) in enumerate(rows):
            l = Lg[:, i]
            if new:
                # [[L0, 0], [L21, L22]]: the part for this block's basis rows is L22⁻¹ (g_new − L21 l)
                L = self.gram.L
                g_new = self.stack.dots(q, np.asarray(new)) * self.weights.view[new] * w
                l_new = solve_triangular(L[r0:, r0:], g_new - L[r0:, :r0] @ l, lower=True, check_finite=False)
                l = np.concatenate([l, l_new])
            s = w * w * inner(q, q)
            d2 = s - float(l @ l)
            if d2 <= DEPENDENCE_TOL * s:
                decided.append((True, l))
                continue
            self.gram.extend(l, math.sqrt(d2))
            new.append(first + i)
            self._ids = np.append(self._ids, first + i)
            decided.append((False, l))
        # coordinates of the dependent rows: L_tᵀ c = l with L_t the factor when the row came; with the
        # block-end factor and l zero-padded, the back substitution gives c and then zeros
        deps = [k for k, (dep, _) in enumerate(decided) if dep]
        coords: dict[int, np.ndarray] = {}
        if deps:
            L = self.gram.L
            rhs = np.zeros((L.shape[0], len(deps)))
            for j, k in enumerate(deps):
                rhs[: len(decided[k][1]), j] = decided[k][1]
            sol = solve_triangular(L, rhs, lower=True, trans="T", check_finite=False)
            coords = {k: sol[: len(decided[k][1]), j] for j, k in enumerate(deps)}
        for k, (dep, _) in enumerate(decided):
            self._record(coords[k], None) if dep else self._record(np.zeros(self.rank), 1.0)

    def _basis_lam(self, v: np.ndarray) -> np.ndarray:
        return v  # each basis row is its own basis vector

    def coordinates(self, q: Query) -> tuple[np.ndarray, float]:
        b = self._basis_dots(q)
        t = self.gram.solve_lower(b)
        qq = inner(q, q)
        return self.gram.solve_upper(t), max(qq - float(t @ t), 0.0) / qq
