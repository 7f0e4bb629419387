"""Released fresh answers and the best linear unbiased estimate (BLUE) they give of any new query.

The history is the list of rows ``(Q_i, α_i, ỹ_i, family_i)``. Whitening each row by its noise
standard deviation (``z_i = w_i Q_i`` with ``w_i = √2 / sd(N_i)``, which is ``α_i/S_i`` for Laplace
noise — DESIGN §1's ``W``) turns the problem into ordinary least squares with i.i.d. noise of
variance 2. For a target ``Q`` in the row space of ``H`` the BLUE is ``θ̂ = Σ_i A_i ỹ_i`` with
``A_i = λ_i w_i`` and ``λ = (Q Z⁺)ᵀ`` the minimum-norm combination of whitened rows that reproduces
``Q`` (paper Thm 3.1, with a pseudo-inverse for rank-deficient histories).

Both of DESIGN §1's forms are implemented on one structure. The rows are kept as ``Z = C·K``: ``K``
is a basis of the row space (orthonormal vectors of length n in the *primal* form, a subset of the
history rows in the *dual* form, which only ever needs inner products between queries) and ``C``
holds every row's coordinates in it. Then ``λ = C (CᵀC)⁻¹ μ`` where ``μ`` are the coordinates of
``Q``. Appending a row costs O(r·n) (primal) or O(r·cost of an inner product + r²) (dual) and updates
the Cholesky factors of ``K``'s Gram matrix and of ``CᵀC``; nothing is refactored from scratch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import numpy as np

from dpdesk.engine.costs import CellCosts
from dpdesk.engine.errors import HistoryError, QueryError
from dpdesk.engine.linalg import GrowingCholesky
from dpdesk.engine.noise import NOISE_FAMILIES, NoiseFamily
from dpdesk.engine.query import Query, query_from_json
from dpdesk.engine.query_algebra import inner

Form = Literal["auto", "primal", "dual"]

# A row (or target) whose squared residual outside the current row space is below this fraction of its
# squared norm counts as inside it. Integer queries are either exactly dependent (residual ~1e-15) or
# clearly independent, so the threshold is not delicate.
DEPENDENCE_TOL = 1e-9
# rows orthogonalised together when a primal factorisation is built from a stored history
PRIMAL_BLOCK = 128
DUAL_BLOCK = 128


def noise_variance(family: str, scale: float) -> float:
    """Variance of one noise draw of ``family`` with scale ``b``."""
    if family == "laplace":
        return 2.0 * scale * scale
    if family == "discrete_laplace":
        p = math.exp(-1.0 / scale)
        return 2.0 * p / (1.0 - p) ** 2
    raise HistoryError(f"noise family {family!r} must be one of {', '.join(NOISE_FAMILIES)}")


@dataclass(frozen=True)
class HistoryRow:
    """One released fresh answer: ``answer = Q·x + noise`` with noise of scale ``S/α`` (α-DP)."""

    query: Query
    alpha: float
    answer: float
    family: NoiseFamily = "laplace"

    def __post_init__(self) -> None:
        if not (isinstance(self.alpha, (int, float)) and math.isfinite(self.alpha) and self.alpha > 0):
            raise HistoryError(f"alpha ({self.alpha!r}) must be a positive finite number")
        if not (isinstance(self.answer, (int, float)) and math.isfinite(self.answer)):
            raise HistoryError(f"answer ({self.answer!r}) must be a finite number")
        if self.family not in NOISE_FAMILIES:
            raise HistoryError(f"family ({self.family!r}) must be one of {', '.join(NOISE_FAMILIES)}")

    @property
    def sensitivity(self) -> float:
        return self.query.sensitivity

    @property
    def scale(self) -> float:
        """Noise scale ``b = S/α``."""
        return self.sensitivity / self.alpha

    @property
    def variance(self) -> float:
        return noise_variance(self.family, self.scale)


@dataclass(frozen=True)
class Estimate:
    """What history says about a target query (DESIGN §1). Non-estimable is a normal result."""

    estimable: bool
    history_size: int
    form: str
    residual: float  # relative norm of the part of Q outside the row space of H
    estimate: float | None = None
    coefficients: np.ndarray | None = None  # A, one per history row
    noise_scales: np.ndarray | None = None  # b_i = S_i / α_i
    families: tuple[str, ...] = ()
    variance: float | None = None

    @property
    def std(self) -> float | None:
        return None if self.variance is None else math.sqrt(self.variance)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    a.setflags(write=False)
    return a


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
            for j in rest[~sparse]:
                out[j] = inner(q, self.rows[int(ids[j])])
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

    def _basis_lam(self, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class _PrimalSpace(_RowSpace):
    """Orthonormal basis vectors of length n (good when the cube is small)."""

    form = "primal"

    def __init__(self, n: int) -> None:
        super().__init__()
        self.U = _GrowArray(n)
        self._own: list[np.ndarray] = []  # coordinates of each basis row (length j+1)
        self._R: np.ndarray | None = None

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
        return self._R @ v

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

    def _basis_dots(self, q: Query) -> np.ndarray:
        """``⟨z_B, q⟩`` for the whitened basis rows."""
        return self.stack.dots(q, self._ids) * self.weights.view[self._ids]

    def add(self, z_query: Query, w: float) -> None:
        g = self._basis_dots(z_query) * w
        s = w * w * inner(z_query, z_query)
        l = self.gram.solve_lower(g, cached=False)
        d2 = s - float(l @ l)
        if d2 <= DEPENDENCE_TOL * s:
            # coordinates in the (non-orthogonal) basis rows
            self._record(self.gram.solve_upper(l, cached=False), None)
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


@dataclass
class History:
    """The released fresh answers of one cube, append-only, with incremental BLUE factorisations.

    Parameters
    ----------
    shape : tuple of int
        The cube's shape (``(n,)`` when queries are bare vectors).

    Examples
    --------
    >>> from dpdesk.engine.query import query_from_vector
    >>> h = History((2,))
    >>> h.append(HistoryRow(query_from_vector([1, 1], (2,)), alpha=0.5, answer=30.0))
    >>> h.estimate(query_from_vector([2, 2], (2,))).estimate
    60.0
    """

    shape: tuple[int, ...]
    rows: list[HistoryRow] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.shape = tuple(int(k) for k in self.shape)
        self.n_cells = int(np.prod(self.shape))
        initial, self.rows = list(self.rows), []
        self._stack = _ProductStack(self.shape)
        self._w = _GrowArray()
        self._answers = _GrowArray()
        self._scales = _GrowArray()
        self._variances = _GrowArray()
        self._costs = CellCosts(self.shape)
        self._spaces: dict[str, _RowSpace] = {}
        for row in initial:
            self.append(row)

    def __len__(self) -> int:
        return len(self.rows)

    def append(self, row: HistoryRow) -> None:
        """Add a released row; per-cell costs and the built factorisations are updated in place."""
        if row.query.n_cells != self.n_cells:
            raise HistoryError(
                f"history row has {row.query.n_cells} coefficients, the cube has {self.n_cells} cells"
            )
        w = math.sqrt(2.0 / row.variance)
        self.rows.append(row)
        self._stack.add(row.query)
        self._w.append(w)
        self._answers.append(row.answer)
        self._scales.append(row.scale)
        self._variances.append(row.variance)
        # paper Thm 5.4: cell j loses α_i |H_ij| / S_i
        self._costs.add(row.alpha / row.sensitivity, row.query)
        for space in self._spaces.values():
            self._feed(space, len(self.rows) - 1)

    def _feed(self, space: _RowSpace, i: int) -> None:
        row, w = self.rows[i], float(self._w.view[i])
        if isinstance(space, _PrimalSpace):
            space.add(w * row.query.dense())
        else:
            assert isinstance(space, _DualSpace)
            space.add(row.query, w)

    def _space(self, form: str) -> _RowSpace:
        if form not in self._spaces:
            space: _RowSpace = _PrimalSpace(self.n_cells) if form == "primal" else _DualSpace(self._stack, self._w)
            if isinstance(space, _PrimalSpace):
                # whole blocks of rows at a time: the basis sweeps become matrix products
                w = self._w.view
                for lo in range(0, len(self.rows), PRIMAL_BLOCK):
                    hi = min(lo + PRIMAL_BLOCK, len(self.rows))
                    space.add_block(np.stack([w[i] * self.rows[i].query.dense() for i in range(lo, hi)]))
            else:
                assert isinstance(space, _DualSpace)
                w = self._w.view
                for lo in range(0, len(self.rows), DUAL_BLOCK):
                    hi = min(lo + DUAL_BLOCK, len(self.rows))
                    space.add_block([(self.rows[i].query, float(w[i])) for i in range(lo, hi)])
            self._spaces[form] = space
        return self._spaces[form]

    def pick_form(self) -> str:
        """Primal while the cube is small next to the history, dual once n dominates (DESIGN §1)."""
        return "primal" if self.n_cells <= max(1024, len(self.rows)) else "dual"

    @property
    def cell_costs(self) -> np.ndarray:
        """Per-cell privacy loss ``B = (α/S)ᵀ|H|`` (paper Thm 5.4), read-only copy."""
        return _readonly(self._costs.values.copy())

    @property
    def system_cost(self) -> float:
        """``ᾱ = max_j B_j``: the privacy guarantee of everything released so far."""
        return float(self._costs.values.max()) if len(self.rows) else 0.0

    def estimate(self, query: Query, form: Form = "auto") -> Estimate:
        """The BLUE of ``θ = Q·x`` from history, or a non-estimable result (paper Thm 3.1)."""
        if query.n_cells != self.n_cells:
            raise QueryError(f"query has {query.n_cells} coefficients, the cube has {self.n_cells} cells")
        if form not in ("auto", "primal", "dual"):
            raise ValueError(f"form ({form!r}) must be one of 'auto', 'primal', 'dual'")
        chosen = self.pick_form() if form == "auto" else form
        m = len(self.rows)
        if m == 0:
            return Estimate(estimable=False, history_size=0, form=chosen, residual=1.0)
        space = self._space(chosen)
        mu, residual = space.coordinates(query)
        if residual > DEPENDENCE_TOL:
            return Estimate(estimable=False, history_size=m, form=chosen, residual=math.sqrt(residual))
        lam = space.lam(mu)
        w = self._w.view
        coef = lam * w
        scales = self._scales.view.copy()
        variance = float((coef * coef) @ self._variances.view)
        return Estimate(
            estimable=True,
            history_size=m,
            form=chosen,
            residual=math.sqrt(residual),
            estimate=float(coef @ self._answers.view),
            coefficients=_readonly(coef),
            noise_scales=_readonly(scales),
            families=tuple(r.family for r in self.rows),
            variance=variance,
        )

    # -- the DESIGN §6 history format ------------------------------------------------------------
    @classmethod
    def from_json(cls, obj: Any, shape: Sequence[int] | None = None) -> "History":
        """Read the DESIGN §6 history object (already decoded from JSON)."""
        if not isinstance(obj, dict):
            raise HistoryError("history: must be a JSON object with 'cells' and 'rows'")
        cells = obj.get("cells")
        if isinstance(cells, bool) or not isinstance(cells, int) or cells <= 0:
            raise HistoryError(f"history.cells: must be a positive integer, got {cells!r}")
        shape = tuple(shape) if shape is not None else (cells,)
        if int(np.prod(shape)) != cells:
            raise HistoryError(f"history.cells ({cells}) does not match the schema's {int(np.prod(shape))} cells")
        rows = obj.get("rows", [])
        if not isinstance(rows, list):
            raise HistoryError("history.rows: must be a list")
        h = cls(shape)
        for i, r in enumerate(rows):
            where = f"history.rows[{i}]"
            if not isinstance(r, dict):
                raise HistoryError(f"{where}: must be an object with query, alpha, answer")
            for key in ("query", "alpha", "answer"):
                if key not in r:
                    raise HistoryError(f"{where}: missing '{key}'")
            try:
                q = query_from_json(r["query"], cells, shape)
            except QueryError as exc:
                raise HistoryError(f"{where}.query: {exc}") from None
            alpha, answer = r["alpha"], r["answer"]
            if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0 or not math.isfinite(alpha):
                raise HistoryError(f"{where}.alpha: must be a positive number, got {alpha!r}")
            if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
                raise HistoryError(f"{where}.answer: must be a finite number, got {answer!r}")
            family = r.get("family", "laplace")
            if family not in NOISE_FAMILIES:
                raise HistoryError(f"{where}.family: must be one of {', '.join(NOISE_FAMILIES)}, got {family!r}")
            h.append(HistoryRow(q, float(alpha), float(answer), family))
        return h

    def to_json(self, total_budget: float | None = None, schema: Any = None) -> dict[str, Any]:
        out: dict[str, Any] = {"cells": self.n_cells}
        if total_budget is not None:
            out["total_budget"] = total_budget
        if schema is not None:
            out["schema"] = schema.to_dict()
        out["rows"] = [
            {"query": r.query.to_json(), "alpha": r.alpha, "answer": r.answer, "family": r.family} for r in self.rows
        ]
        return out
