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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from dpdesk.engine.budget.costs import CellCosts
from dpdesk.engine.errors import DpdeskError, HistoryError, QueryError
from dpdesk.engine.inference.rowspace import (
    DEPENDENCE_TOL,
    _DualSpace,
    _GrowArray,
    _PrimalSpace,
    _ProductStack,
    _RowSpace,
)
from dpdesk.engine.mechanisms.registry import noise_family
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.queries.measured import counts_only, footprint, lift
from dpdesk.engine.queries.query import Query, query_from_json

Form = Literal["auto", "primal", "dual"]

# rows taken together when a factorisation is built from a stored history (see engine/inference/rowspace.py)
PRIMAL_BLOCK = 128
DUAL_BLOCK = 128


def _family(family: str, where: str) -> str:
    try:
        return noise_family(family).name
    except DpdeskError as exc:
        raise HistoryError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class HistoryRow:
    """One released fresh answer: ``answer = Q·x + noise`` with noise of scale ``S/α`` (α-DP)."""

    query: Query
    alpha: float
    answer: float
    family: str = "laplace"  # a registered noise family's name

    def __post_init__(self) -> None:
        if not (isinstance(self.alpha, (int, float)) and math.isfinite(self.alpha) and self.alpha > 0):
            raise HistoryError(f"alpha ({self.alpha!r}) must be a positive finite number")
        if not (isinstance(self.answer, (int, float)) and math.isfinite(self.answer)):
            raise HistoryError(f"answer ({self.answer!r}) must be a finite number")
        _family(self.family, "history row")

    @property
    def sensitivity(self) -> float:
        return self.query.sensitivity

    @property
    def scale(self) -> float:
        """Noise scale ``b = S/α``."""
        return self.sensitivity / self.alpha

    @property
    def variance(self) -> float:
        return noise_family(self.family).variance(self.scale)


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


@dataclass
class History:
    """The released fresh answers of one cube, append-only, with incremental BLUE factorisations.

    Parameters
    ----------
    shape : tuple of int
        The cube's shape (``(n,)`` when queries are bare vectors); over measures, ``layout.shape``.
    layout : Layout, optional
        A history over a cube's measures (docs/sums.md): its rows and targets are queries over the one
        vector of counts and sums; a count (a query over the cube's cells) is read on the count block.
        Taken from the rows when one of them reads measures. Per-cell costs stay per cube cell.

    Examples
    --------
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> h = History((2,))
    >>> h.append(HistoryRow(query_from_vector([1, 1], (2,)), alpha=0.5, answer=30.0))
    >>> round(h.estimate(query_from_vector([2, 2], (2,))).estimate, 9)  # twice the answer, to rounding
    60.0
    """

    shape: tuple[int, ...]
    rows: list[HistoryRow] = field(default_factory=list)
    layout: Layout | None = None

    def __post_init__(self) -> None:
        initial = list(self.rows)
        if self.layout is None:
            self.layout = next((r.query.layout for r in initial if r.query.layout is not None), None)
        self.shape = tuple(int(k) for k in self.shape)
        if self.layout is not None and self.shape not in (self.layout.shape, self.layout.cells):
            raise HistoryError(f"history: shape {self.shape} is not its measures' layout {self.layout.shape}")
        if self.layout is not None:
            self.shape = self.layout.shape
        self.n_cells = int(np.prod(self.shape))
        self.rows = []
        self._stack = _ProductStack(self.shape)
        self._w = _GrowArray()
        self._answers = _GrowArray()
        self._scales = _GrowArray()
        self._variances = _GrowArray()
        self._families: list[str] = []  # each row's noise family (without touching the rows themselves)
        self._costs = CellCosts(self.shape if self.layout is None else self.layout.cells)
        self._spaces: dict[str, _RowSpace] = {}
        for row in initial:
            self.append(row)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def spaces(self) -> tuple[str, ...]:
        """The forms (``"primal"``, ``"dual"``) whose factorisation is built, sorted: what a stored copy
        of this History must hold to spare the next reader the build."""
        return tuple(sorted(self._spaces))

    def factors_consistent(self) -> bool:
        """Whether every factorisation built so far agrees with the rows it factors: each Cholesky factor's
        rows have the squared norms of what it factors, a positive diagonal, nothing above it; the primal
        basis is unit length. O(r²) reads and no solve — the check a History read back from storage
        (``snapshot.history_from_arrays``) gets before it is trusted."""
        return all(space.factors_consistent() for space in self._spaces.values())

    @property
    def cells(self) -> tuple[int, ...]:
        """The cube's shape (``shape`` without the block axis of a history over measures)."""
        return self.shape if self.layout is None else self.layout.cells

    def counts(self) -> History:
        """This history's rows that read counts alone, over the cube's cells: what a consumer modelling
        counts only (the zero-cost estimates, the synthetic table) reads. ``self`` when it holds counts only."""
        if self.layout is None:
            return self
        rows = []
        for r in self.rows:
            q = counts_only(r.query)
            if q is not None:
                rows.append(HistoryRow(q, r.alpha, r.answer, r.family))
        return History(self.layout.cells, rows)

    def copy(self) -> History:
        """A new history holding the same rows (its own factorisations)."""
        return History(self.shape, rows=list(self.rows), layout=self.layout)

    def lifted(self, query: Query) -> Query:
        """``query`` over this history's vector: a count read on the count block of a history over
        measures; a query over measures refused by a history of counts."""
        if self.layout is not None:
            return lift(query, self.layout)
        if query.layout is not None:
            raise QueryError("query reads a cube's measures; this history holds counts only")
        return query

    def append(self, row: HistoryRow) -> None:
        """Add a released row; per-cell costs and the built factorisations are updated in place."""
        if row.query.layout != self.layout:
            try:
                row = HistoryRow(self.lifted(row.query), row.alpha, row.answer, row.family)
            except QueryError as exc:
                raise HistoryError(f"history row: {exc}") from None
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
        self._families.append(row.family)
        # paper Thm 5.4: cell j loses α_i |H_ij| / S_i (pure ε rows; a Gaussian row's ρ is accounted in
        # engine/budget/zcdp.py, never here)
        if noise_family(row.family).measure == "epsilon":
            self._costs.add(row.alpha / row.sensitivity, footprint(row.query))
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
            space: _RowSpace = (
                _PrimalSpace(self.n_cells) if form == "primal" else _DualSpace(self._stack, self._w)
            )
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

    def _pure(self) -> None:
        """Refuse a pure-ε reading of a history holding rows priced in ρ (Gaussian noise)."""
        zcdp = sorted(f for f in set(self._families) if noise_family(f).measure != "epsilon")
        if zcdp:
            raise HistoryError(
                f"history: its {', '.join(zcdp)} rows are priced in ρ (zCDP) and have no pure-ε cost; "
                "read its per-cell ρ with engine.budget.zcdp.history_rho"
            )

    @property
    def cell_costs(self) -> np.ndarray:
        """Per-cell privacy loss ``B = (α/S)ᵀ|H|`` (paper Thm 5.4) (pure ε rows only): a read-only copy,
        the same object until the next row is appended."""
        self._pure()
        return self._costs.snapshot()

    @property
    def system_cost(self) -> float:
        """``ᾱ = max_j B_j``: the privacy guarantee of everything released so far."""
        self._pure()
        return float(self._costs.values.max()) if len(self.rows) else 0.0

    def estimate(self, query: Query, form: Form = "auto") -> Estimate:
        """The BLUE of ``θ = Q·x`` from history, or a non-estimable result (paper Thm 3.1)."""
        query = self.lifted(query)
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
            families=tuple(self._families),
            variance=variance,
        )

    # -- the DESIGN §6 history format ------------------------------------------------------------
    @classmethod
    def from_json(cls, obj: Any, shape: Sequence[int] | None = None) -> History:
        """Read the DESIGN §6 history object (already decoded from JSON)."""
        if not isinstance(obj, dict):
            raise HistoryError("history: must be a JSON object with 'cells' and 'rows'")
        cells = obj.get("cells")
        if isinstance(cells, bool) or not isinstance(cells, int) or cells <= 0:
            raise HistoryError(f"history.cells: must be a positive integer, got {cells!r}")
        shape = tuple(shape) if shape is not None else (cells,)
        if int(np.prod(shape)) != cells:
            raise HistoryError(
                f"history.cells ({cells}) does not match the schema's {int(np.prod(shape))} cells"
            )
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
            if (
                isinstance(alpha, bool)
                or not isinstance(alpha, (int, float))
                or not alpha > 0
                or not math.isfinite(alpha)
            ):
                raise HistoryError(f"{where}.alpha: must be a positive number, got {alpha!r}")
            if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
                raise HistoryError(f"{where}.answer: must be a finite number, got {answer!r}")
            family = _family(r.get("family", "laplace"), f"{where}.family")
            h.append(HistoryRow(q, float(alpha), float(answer), family))
        return h

    def to_json(self, total_budget: float | None = None, schema: Any = None) -> dict[str, Any]:
        out: dict[str, Any] = {"cells": self.n_cells}
        if total_budget is not None:
            out["total_budget"] = total_budget
        if schema is not None:
            out["schema"] = schema.to_dict()
        out["rows"] = [
            {"query": r.query.to_json(), "alpha": r.alpha, "answer": r.answer, "family": r.family}
            for r in self.rows
        ]
        return out
