"""Private max and argmax: report-noisy-max over the candidate labels, drawn by OpenDP.

:class:`ReportNoisyMax` answers a :class:`~dpdesk.engine.selection.query.SelectionQuery` by adding
independent exponential noise of scale ``s`` to every candidate's utility (sensitivity ``Δ = 1``) and
releasing the label with the largest noisy utility — OpenDP's ``make_noisy_max`` under the max
divergence, whose privacy map is ``Δ/s`` for monotonic utilities (argmax) and ``2Δ/s`` otherwise (max)
(McKenna–Sheldon's permute-and-flip, Ding et al.'s equivalence). So ``s = Δ/α`` or ``2Δ/α``.

It owns what every release kind owns:

- the per-cell charge: ``α`` on the cells of the query's box, 0 elsewhere (records outside the box
  cannot change any utility) — paper Thm 5.4;
- an accuracy model from public inputs: with ``k`` candidates the released candidate's utility is
  within ``s·ln(k/δ)`` of the best with probability ``≥ 1−δ`` (each worse candidate must beat the best
  one's noise by that much: a union bound over ``k`` exponential tails), and the α meeting a target;
- the exact output distribution for given (private) utilities,
  ``Pr(i) = w_i ∫₀¹ Π_{j≠i}(1 − w_j x) dx`` with ``w_j = e^{(u_j − max u)/s}`` — a polynomial in ``x``
  integrated exactly by Gauss–Legendre. It is for the curator's eyes only (and for tests); only the
  one draw is released.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.mechanisms.base import Contribution
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.schema import Schema
from dpdesk.engine.selection.query import SelectionQuery
from dpdesk.engine.vocabulary import confidence_text

__all__ = [
    "REPORT_NOISY_MAX",
    "ReportNoisyMax",
    "SelectionMechanism",
    "SelectionRelease",
    "box_query",
    "noisy_max_probabilities",
]

SENSITIVITY = 1.0


def noisy_max_probabilities(utilities: np.ndarray, scale: float) -> np.ndarray:
    """Exact ``Pr(argmax_i u_i + E_i = j)`` for i.i.d. ``E_i ~ Exponential(scale)``.

    Examples
    --------
    >>> p = noisy_max_probabilities(np.array([0.0, 1.0, 2.0]), 1.0)
    >>> round(float(p[2]), 6) == round(1 - (math.exp(-2) + math.exp(-1)) / 2 + math.exp(-3) / 3, 6)
    True
    """
    u = np.asarray(utilities, dtype=float)
    if u.ndim != 1 or u.size == 0 or not np.all(np.isfinite(u)):
        raise DpdeskError("utilities must be a non-empty vector of finite numbers")
    if not (math.isfinite(scale) and scale > 0):
        raise DpdeskError(f"scale ({scale}) must be positive")
    w = np.exp((u - u.max()) / scale)
    k = u.size
    x, wt = np.polynomial.legendre.leggauss(k // 2 + 2)  # exact for degree ≤ 2·nodes − 1 ≥ k − 1
    x, wt = (x + 1) / 2, wt / 2
    # log Π_j (1 − w_j x) at every node, then divide out each j's own factor
    logs = np.log1p(-np.outer(x, w))  # nodes × k; x < 1 so every factor is positive
    total = logs.sum(axis=1, keepdims=True)
    p = w * (wt[:, None] * np.exp(total - logs)).sum(axis=0)
    return np.asarray(p / p.sum())  # the exact masses already sum to 1; this only removes rounding


@dataclass(frozen=True)
class SelectionRelease:
    """A released max/argmax: the chosen label (the only thing that leaves), its budget and sampler."""

    query: SelectionQuery
    alpha: float
    index: int
    label: str
    sampler: str
    scale: float

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query.text,
            "kind": self.query.kind,
            "attribute": self.query.attribute,
            "alpha": self.alpha,
            "scale": self.scale,
            "index": self.index,
            "label": self.label,
            "sampler": self.sampler,
            "mechanism": "report_noisy_max_exponential",
        }


@dataclass(frozen=True)
class ReportNoisyMax:
    """Report-noisy-max with exponential noise for ``query`` at budget ``alpha`` (α-DP per box cell)."""

    query: SelectionQuery
    alpha: float

    def __post_init__(self) -> None:
        a = self.alpha
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not math.isfinite(a) or a <= 0:
            raise BudgetError(f"epsilon ({a!r}) must be a positive finite number")

    name = "report_noisy_max_exponential"

    @property
    def scale(self) -> float:
        """Exponential noise scale: ``Δ/α`` (monotonic utilities) or ``2Δ/α``."""
        return (1.0 if self.query.monotonic else 2.0) * SENSITIVITY / self.alpha

    def cell_charges(self, schema: Schema) -> np.ndarray:
        """``α`` on every cell of the box, 0 elsewhere (flat, C order)."""
        return np.where(self.query.box(schema).reshape(-1), self.alpha, 0.0)

    def shortfall(self, schema: Schema, delta: float) -> float:
        """Public: with probability ≥ 1−δ the released candidate's utility is within this of the best."""
        if not 0 < delta < 1:
            raise BudgetError(f"delta ({delta!r}) must be strictly between 0 and 1")
        k = len(self.query.candidates(schema))
        return self.scale * math.log(k / delta)

    def accuracy_text(self, schema: Schema, delta: float) -> str:
        t = self.shortfall(schema, delta)
        at = f"at {confidence_text(delta)} confidence"
        if self.query.kind == "argmax":
            return f"the released label's count is within {t:.4g} of the largest count, {at}"
        return f"at most {math.floor(t)} records of the box lie above the released value, {at}"

    @classmethod
    def for_accuracy(
        cls, query: SelectionQuery, schema: Schema, shortfall: float, delta: float
    ) -> ReportNoisyMax:
        """The cheapest mechanism whose :meth:`shortfall` at ``δ`` is ``shortfall``."""
        if (
            isinstance(shortfall, bool)
            or not isinstance(shortfall, (int, float))
            or not math.isfinite(shortfall)
            or shortfall <= 0
        ):
            raise BudgetError(f"accuracy ({shortfall!r}) must be a positive finite number")
        if not 0 < delta < 1:
            raise BudgetError(f"delta ({delta!r}) must be strictly between 0 and 1")
        k = len(query.candidates(schema))
        c = 1.0 if query.monotonic else 2.0
        return cls(query, c * SENSITIVITY * math.log(k / delta) / shortfall)

    def probabilities(self, counts: np.ndarray, schema: Schema) -> np.ndarray:
        """Private: the exact probability of releasing each candidate (curator's eyes only)."""
        return noisy_max_probabilities(self.query.utilities(counts, schema), self.scale)

    def release(
        self, counts: np.ndarray, schema: Schema, sampler: Any, *, allow_insecure: bool = False
    ) -> SelectionRelease:
        """Draw the one released label (not recorded here: the caller records it before showing it)."""
        if not getattr(sampler, "secure", False) and not allow_insecure:
            raise BudgetError(
                f"sampler {getattr(sampler, 'name', sampler)!r} is not secure; releases need the vetted sampler"
            )
        u = self.query.utilities(counts, schema)
        i = int(sampler.noisy_max(u, self.scale, monotonic=self.query.monotonic))
        labels = self.query.candidates(schema)
        return SelectionRelease(
            self.query, float(self.alpha), i, labels[i], getattr(sampler, "name", str(sampler)), self.scale
        )


# -- the release path: the registered mechanism (privacy map of a recorded entry) and the plan value ----


def box_query(shape: tuple[int, ...], box: Any) -> Query:
    """The 0/1 query of the box recorded as, per attribute, a list of label indices or None (all)."""
    if not isinstance(box, (list, tuple)) or len(box) != len(shape):
        raise DpdeskError(f"selection release: 'box' must give one entry per attribute ({len(shape)})")
    factors = []
    for d, (sel, k) in enumerate(zip(box, shape)):
        f = np.ones(k) if sel is None else np.zeros(k)
        if sel is not None:
            idx = np.asarray(sel, dtype=np.int64)
            if idx.ndim != 1 or idx.size == 0 or idx.min() < 0 or idx.max() >= k:
                raise DpdeskError(f"selection release: box[{d}] must list label indices below {k}")
            f[idx] = 1.0
        factors.append(f)
    return Query(shape, terms=(Term(1.0, tuple(factors)),))


@dataclass(frozen=True)
class SelectionMechanism:
    """The registered mechanism of private max/argmax releases (report-noisy-max, exponential noise)."""

    name: str = "report_noisy_max"
    kind: str = "selection"
    label: str = "report-noisy-max (OpenDP, exponential noise)"

    @staticmethod
    def alpha_of(kind: str, scale: float) -> float:
        """OpenDP's privacy map of report-noisy-max at ``scale`` on sensitivity-1 utilities."""
        return (1.0 if kind == "argmax" else 2.0) * SENSITIVITY / scale

    def contribution(self, payload: Mapping[str, Any], shape: tuple[int, ...]) -> Contribution:
        """α (re-derived from the kind and the noise scale) on every cell of the recorded box; no history rows."""
        kind, scale = payload.get("kind"), payload.get("scale")
        if kind not in ("max", "argmax"):
            raise DpdeskError(f"selection release: kind ({kind!r}) must be 'max' or 'argmax'")
        if (
            isinstance(scale, bool)
            or not isinstance(scale, (int, float))
            or not math.isfinite(scale)
            or scale <= 0
        ):
            raise DpdeskError(f"selection release: scale ({scale!r}) must be a positive finite number")
        q = box_query(tuple(shape), payload.get("box"))
        values = tuple(float(v) for v in payload.get("values", ()))
        return Contribution(Charge((ChargeTerm(self.alpha_of(kind, float(scale)), q),)), (), values)


REPORT_NOISY_MAX = SelectionMechanism()
