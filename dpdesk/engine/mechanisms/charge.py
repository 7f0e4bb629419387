"""What one release costs each cell: the per-cell charge of paper Thm 5.4, for any release kind.

A release charges cell ``j`` the privacy loss ``Σ_t s_t·|Q_t,j|`` — a sum of terms, each a scale
``s_t`` times the absolute coefficients of a query (a fresh count at budget α: one term, ``α/S`` times
``|Q|``) or the same amount on every cell (``query=None``: a one-shot partition release, where every
record falls in exactly one cell of each released partition). ``delta`` is the release's δ for
mechanisms charged in ``(α, δ)``; pure mechanisms leave it 0. Zero-cost post-processing has no terms.
``measure`` says what the terms are: ``"epsilon"`` (pure ε-DP per cell, every mechanism but the Gaussian
families) or ``"rho"`` (ρ-zCDP per cell: the Gaussian families, :mod:`~dpdesk.engine.mechanisms.gaussian`).
A charge is added to per-cell totals only in its own measure or through the conversion of
:mod:`dpdesk.engine.budget.zcdp` (pure ε → ρ per cell, ``ρ = ε²/2``); a ρ charge has no pure-ε reading.

A charge is what the ledger records per release and what verify re-derives from the mechanism's
privacy map; :meth:`Charge.to_json` writes a term's query by reference (the name of a payload member
holding it) when the entry already carries that query, so a count's query is stored once.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.queries.algebra import abs_dense
from dpdesk.engine.queries.measured import footprint
from dpdesk.engine.queries.query import Query, query_from_json

__all__ = ["MEASURES", "Charge", "ChargeTerm", "same_charge"]

MEASURES = ("epsilon", "rho")  # pure ε-DP, ρ-zCDP


@dataclass(frozen=True, eq=False)
class ChargeTerm:
    """``scale·|query|`` on the cells, or ``scale`` on every cell when ``query`` is None (a query over
    measures is held as its per-cell load, :func:`~dpdesk.engine.queries.measured.footprint`)."""

    scale: float
    query: Query | None = None

    def __post_init__(self) -> None:
        s = self.scale
        if isinstance(s, bool) or not isinstance(s, (int, float, np.number)) or not math.isfinite(s) or s < 0:
            raise DpdeskError(f"charge scale ({s!r}) must be a finite number ≥ 0")
        object.__setattr__(self, "scale", float(s))
        if self.query is not None and self.query.layout is not None:  # charged per cube cell
            object.__setattr__(self, "query", footprint(self.query))

    def dense(self, n_cells: int) -> np.ndarray:
        if self.query is None:
            return np.full(n_cells, self.scale)
        return self.scale * abs_dense(self.query)

    def largest(self) -> float:
        """``max_j`` of :meth:`dense`, from the query's factors or nonzero coefficients alone.

        Each step of :meth:`dense` (multiply nonnegative numbers, in the same order) is monotone, so the
        rounded product of the factors' largest absolute values is exactly the dense vector's maximum.
        """
        q = self.query
        if q is None:
            return self.scale
        if q.terms is not None and len(q.terms) == 1:
            t = q.terms[0]
            return float(
                self.scale * (abs(t.weight) * reduce(operator.mul, [np.max(np.abs(f)) for f in t.factors]))
            )
        # sparse form: its coefficients; several product terms: the dense vector built at construction
        return self.scale * float(np.max(np.abs(q.sparse()[1] if q.terms is None else q.dense())))

    def at(self, cell: int) -> float:
        if self.query is None:
            return self.scale
        return self.scale * abs(float(self.query.values_at(np.array([cell]))[0]))

    def same_as(self, other: ChargeTerm, rel_tol: float) -> bool:
        """Equal scales (within ``rel_tol``) on the same cells with the same coefficients."""
        if not math.isclose(self.scale, other.scale, rel_tol=rel_tol, abs_tol=0.0):
            return False
        if self.query is None or other.query is None:
            return self.query is None and other.query is None
        return self.query == other.query


@dataclass(frozen=True, eq=False)
class Charge:
    """The per-cell privacy charge of one release (and its δ).

    Examples
    --------
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> q = query_from_vector([2, -1, 0], (3,))
    >>> Charge((ChargeTerm(0.5 / q.sensitivity, q),)).dense(3).tolist()   # α = 0.5, S = 2
    [0.5, 0.25, 0.0]
    >>> Charge().free
    True
    """

    terms: tuple[ChargeTerm, ...] = ()
    delta: float = 0.0
    measure: str = "epsilon"  # "epsilon" (pure ε per cell) or "rho" (ρ-zCDP per cell)

    def __post_init__(self) -> None:
        d = self.delta
        if isinstance(d, bool) or not isinstance(d, (int, float, np.number)) or not 0.0 <= d < 1.0:
            raise DpdeskError(f"charge delta ({d!r}) must be in [0, 1)")
        if self.measure not in MEASURES:
            raise DpdeskError(f"charge measure ({self.measure!r}) must be one of {', '.join(MEASURES)}")
        object.__setattr__(self, "terms", tuple(self.terms))
        object.__setattr__(self, "delta", float(d))

    @property
    def free(self) -> bool:
        """True for a release that costs nothing (post-processing of earlier releases)."""
        return self.delta == 0.0 and all(t.scale == 0.0 for t in self.terms)

    def dense(self, n_cells: int) -> np.ndarray:
        """The charge of every cell (a new array of length ``n_cells``)."""
        out = np.zeros(n_cells)
        for t in self.terms:
            out += t.dense(n_cells)
        return out

    def largest(self, n_cells: int) -> float:
        """``dense(n_cells).max()`` (0 when there are no cells or no terms), without the dense vector
        when at most one term has a query: adding the terms in :meth:`dense`'s order is monotone in that
        query's per-cell value, so the cell where it is largest pays the most. Several queried terms
        (never a release's charge today) fall back to the dense vector."""
        if not n_cells or not self.terms:
            return 0.0
        queried = [t for t in self.terms if t.query is not None]
        if len(queried) > 1:
            return float(self.dense(n_cells).max())
        out = 0.0
        for t in self.terms:
            out += t.largest()
        return float(out)

    def at(self, cell: int) -> float:
        """The charge of one cell (without building the dense vector)."""
        return float(sum(t.at(cell) for t in self.terms))

    def same_as(self, other: Charge, rel_tol: float = 1e-9) -> bool:
        """Term by term the same charge (scales within ``rel_tol``, identical queries) and the same δ."""
        return (
            len(self.terms) == len(other.terms)
            and self.measure == other.measure
            and math.isclose(self.delta, other.delta, rel_tol=rel_tol, abs_tol=0.0)
            and all(a.same_as(b, rel_tol) for a, b in zip(self.terms, other.terms))
        )

    # -- the ledger's form --------------------------------------------------------------------
    def to_json(self, payload: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``{"terms": [{"scale": s, "query": Q}], "delta": δ}``; ``query`` is ``"all"`` for every cell,
        or the name of a member of ``payload`` (the entry's plain JSON) that holds the same query;
        ``"measure": "rho"`` is added for a ρ-zCDP charge (a pure one writes no measure, as always)."""
        terms = []
        for t in self.terms:
            if t.query is None:
                ref: Any = "all"
            else:
                q = t.query.to_json()
                ref = next((k for k, v in (payload or {}).items() if isinstance(v, dict) and v == q), q)
            terms.append({"scale": t.scale, "query": ref})
        out: dict[str, Any] = {"terms": terms, "delta": self.delta}
        if self.measure != "epsilon":
            out["measure"] = self.measure
        return out

    @classmethod
    def from_json(cls, obj: Any, payload: Mapping[str, Any], n_cells: int, shape: Sequence[int]) -> Charge:
        """Read :meth:`to_json`'s form (plain JSON); a query given by name is that member of ``payload``."""
        if not isinstance(obj, Mapping) or not isinstance(obj.get("terms"), (list, tuple)):
            raise DpdeskError("charge: must be an object with a list of terms")
        terms = []
        for i, t in enumerate(obj["terms"]):
            if not isinstance(t, Mapping) or "scale" not in t or "query" not in t:
                raise DpdeskError(f"charge.terms[{i}]: must be an object with scale and query")
            ref = t["query"]
            if ref == "all":
                q = None
            else:
                if isinstance(ref, str):
                    if ref not in payload:
                        raise DpdeskError(
                            f"charge.terms[{i}].query: names {ref!r}, which the entry does not hold"
                        )
                    ref = payload[ref]
                q = query_from_json(ref, n_cells, shape)
            terms.append(ChargeTerm(t["scale"], q))
        return cls(tuple(terms), obj.get("delta", 0.0), obj.get("measure", "epsilon"))


def same_charge(a: Charge, b: Charge, n_cells: int, rel_tol: float = 1e-9) -> bool:
    """The same per-cell charge: term by term, or else cell by cell (within ``rel_tol``), the same δ and
    the same measure."""
    if a.same_as(b, rel_tol):
        return True
    if a.measure != b.measure:
        return False
    return math.isclose(a.delta, b.delta, rel_tol=rel_tol, abs_tol=0.0) and bool(
        np.allclose(a.dense(n_cells), b.dense(n_cells), rtol=rel_tol, atol=1e-15)
    )
