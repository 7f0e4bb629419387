"""Zero-concentrated accounting: per-cell ρ, its conversion to (ε, δ), and the hard stop on that figure.

A record in cell ``j`` is touched by each release with some per-cell charge; under ρ-zCDP (Bun–Steinke
2016) the charges of one record *add in ρ*, so the per-cell totals are

    ρ_j = Σ_releases ρ_{r,j},   ρ_{r,j} = (α_r |Q_{r,j}| / S_r)² / 2

for a Gaussian fresh count (noise ``σ = S/α``: ``Q_j²/(2σ²)``, :mod:`~dpdesk.engine.mechanisms.gaussian`)
and ``ρ_{r,j} = ε_{r,j}²/2`` for any pure ε-DP release charging the cell ``ε_{r,j}`` (Bun–Steinke Prop.
1.4; a Laplace fresh count charges ``ε_{r,j} = α|Q_j|/S``, so the two formulas are the same). A release
whose charge has several terms is converted cell by cell *after* adding its terms: its per-cell ε is one
pure guarantee. The system cost is the largest cell's ``ρ`` converted to ε at the project's δ:

* **tight** (what dpdesk uses; Canonne–Kamath–Steinke 2020, Cor. 13, the conversion OpenDP's
  ``make_zCDP_to_approxDP`` implements): ``ρ``-zCDP implies ``(ε, δ)``-DP for

      ε = min_{a>1}  a ρ + log(1 − 1/a) + (log(1/δ) − log a)/(a − 1),

  whose derivative in ``a`` is ``ρ − (log(1/δ) − log a)/(a − 1)²``: one root, found by bisection. Any
  ``a > 1`` gives a valid ε, so a root found to rounding still states a true guarantee;
* **simple** (Bun–Steinke Prop. 1.3): ``ε = ρ + 2√(ρ log(1/δ))``, never smaller than the tight one.

The inverse, :func:`rho_for`, is the largest per-cell ρ whose tight conversion stays within a total
(ε, δ); the hard stop (:func:`zcdp_preview`) refuses a release that would take any cell's converted figure
above the total. Everything here reads public quantities only.

Why a hard stop on adaptively chosen charges is sound: each release's ρ is chosen after seeing earlier
releases, so the guarantee is that of a *privacy filter*. Halting a record's cell when its ρ would pass
the budget is Feldman & Zrnic's individual Rényi filter (2021) at every order at once (a charge ρ is
``a·ρ`` at order ``a`` for every ``a``), so each record's loss is ρ-zCDP and converts as above. A per-cell
figure taking the better of the pure-ε and the zCDP reading (tempting where cells hold few answers) is
*not* used: stopping on the smaller of two accountings is neither filter, and no argument here covers
it — which is why the accounting mode is chosen once, when the project is made.

Examples
--------
>>> round(epsilon_simple(0.005, 1e-6), 6)
0.530652
>>> round(epsilon_tight(0.005, 1e-6), 6)          # OpenDP's make_zCDP_to_approxDP says the same
0.429941
>>> rho = rho_for(1.0, 1e-6)
>>> epsilon_tight(rho, 1e-6) <= 1.0 < epsilon_tight(rho * (1 + 1e-9), 1e-6)
True
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.budget.costs import CellCosts
from dpdesk.engine.errors import BudgetError
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.mechanisms.registry import noise_family
from dpdesk.engine.queries.algebra import squared
from dpdesk.engine.queries.query import query_from_vector

__all__ = [
    "CONVERSIONS",
    "ZcdpPreview",
    "cell_rho",
    "delta_tight",
    "epsilon",
    "epsilon_simple",
    "epsilon_tight",
    "history_rho",
    "rho_charge",
    "rho_for",
    "rho_of_pure",
    "zcdp_preview",
]

CONVERSIONS = {
    "tight": "Canonne–Kamath–Steinke 2020, Cor. 13 (as OpenDP's make_zCDP_to_approxDP)",
    "simple": "Bun–Steinke 2016, Prop. 1.3: ε = ρ + 2√(ρ ln(1/δ))",
}


def _check_delta(delta: float) -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise BudgetError(f"delta ({delta!r}) must be strictly between 0 and 1")
    return float(delta)


def _check_rho(rho: float) -> float:
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.floating)) or not math.isfinite(rho):
        raise BudgetError(f"rho ({rho!r}) must be a finite number ≥ 0")
    if rho < 0:
        raise BudgetError(f"rho ({rho!r}) must be a finite number ≥ 0")
    return float(rho)


def rho_of_pure(eps: float | np.ndarray) -> float | np.ndarray:
    """``ε²/2``: the ρ of an ε-DP release (Bun–Steinke Prop. 1.4), elementwise."""
    return np.square(eps) / 2.0 if isinstance(eps, np.ndarray) else float(eps) ** 2 / 2.0


def epsilon_simple(rho: float, delta: float) -> float:
    """``ρ + 2√(ρ ln(1/δ))`` (Bun–Steinke Prop. 1.3)."""
    rho, delta = _check_rho(rho), _check_delta(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def _eps_at(a: float, rho: float, log_inv_delta: float) -> float:
    """``a ρ + log(1 − 1/a) + (log(1/δ) − log a)/(a − 1)``: a valid ε for any order ``a > 1``."""
    return a * rho + math.log1p(-1.0 / a) + (log_inv_delta - math.log(a)) / (a - 1.0)


def _bisect_root(f: Callable[[float], float], lo: float, hi: float) -> float:
    """A root of the increasing ``f`` between ``lo`` (``f < 0``) and ``hi`` (``f ≥ 0``), to adjacent floats."""
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            return hi
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid


def _best_order(rho: float, log_inv_delta: float) -> float:
    """The order ``a`` minimising :func:`_eps_at`: the root of ``ρ(a − 1)² + log a − log(1/δ)``."""

    def g(a: float) -> float:
        return rho * (a - 1.0) ** 2 + math.log(a) - log_inv_delta

    hi = 2.0
    while g(hi) < 0:
        hi = 1.0 + 2.0 * (hi - 1.0)
    return _bisect_root(g, 1.0, hi)


def epsilon_tight(rho: float, delta: float) -> float:
    """The ε of ``ρ``-zCDP at ``δ`` by CKS20 Cor. 13 (module notes); 0 for ``ρ = 0``."""
    rho, delta = _check_rho(rho), _check_delta(delta)
    if rho == 0:
        return 0.0
    L = math.log(1.0 / delta)
    return max(0.0, _eps_at(_best_order(rho, L), rho, L))


def delta_tight(rho: float, eps: float) -> float:
    """The δ of ``ρ``-zCDP at ``ε`` (CKS20 Cor. 13): ``min_a exp((a−1)(aρ−ε))/(a−1)·(1−1/a)^a``.

    ``log δ(a)`` has derivative ``(2a − 1)ρ − ε + log(1 − 1/a)`` (increasing): its root is the minimum.
    """
    rho = _check_rho(rho)
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise BudgetError(f"eps ({eps!r}) must be a finite number ≥ 0")
    if rho == 0:
        return 0.0

    def slope(a: float) -> float:
        return (2.0 * a - 1.0) * rho - eps + math.log1p(-1.0 / a)

    hi = max(2.0, (1.0 + eps / rho) / 2.0 + 1.0)
    while slope(hi) < 0:
        hi = 1.0 + 2.0 * (hi - 1.0)
    a = _bisect_root(slope, 1.0, hi)
    log_d = (a - 1.0) * (a * rho - eps) - math.log(a - 1.0) + a * math.log1p(-1.0 / a)
    return min(1.0, math.exp(log_d))


def epsilon(rho: float, delta: float, conversion: str = "tight") -> float:
    """:func:`epsilon_tight` or :func:`epsilon_simple` by name (``conversion`` in :data:`CONVERSIONS`)."""
    if conversion == "tight":
        return epsilon_tight(rho, delta)
    if conversion == "simple":
        return epsilon_simple(rho, delta)
    raise BudgetError(f"conversion ({conversion!r}) must be one of {', '.join(CONVERSIONS)}")


@functools.lru_cache(maxsize=64)
def rho_for(eps: float, delta: float, conversion: str = "tight") -> float:
    """The largest ρ whose conversion at ``δ`` is at most ``eps`` (the per-cell budget of a total (ε, δ)).

    The simple conversion inverts in closed form, ``ρ = (√(ln(1/δ) + ε) − √ln(1/δ))²``; the tight one by
    bisection on ρ (its ε grows with ρ), ending on a ρ whose ε is within ``eps``. A project asks it for
    the same total at every preview: the answers are kept.
    """
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        raise BudgetError(f"total epsilon ({eps!r}) must be a positive finite number")
    delta = _check_delta(delta)
    L = math.log(1.0 / delta)
    simple = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
    if conversion == "simple":
        while simple > 0 and epsilon_simple(simple, delta) > eps:  # rounding of the closed form
            simple = math.nextafter(simple, 0.0)
        return simple
    if conversion != "tight":
        raise BudgetError(f"conversion ({conversion!r}) must be one of {', '.join(CONVERSIONS)}")
    lo, hi = simple, max(2.0 * simple, 1e-300)  # tight ≤ simple: ρ at least the simple inverse
    if epsilon_tight(lo, delta) > eps:  # (only by rounding)
        lo = 0.0
    while epsilon_tight(hi, delta) <= eps:
        lo, hi = hi, 2.0 * hi
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            return lo
        if epsilon_tight(mid, delta) <= eps:
            lo = mid
        else:
            hi = mid


# -- per-cell ρ ----------------------------------------------------------------------------------


def rho_charge(charge: Charge, n_cells: int) -> Charge:
    """``charge`` in ρ: as it is for a ρ charge; a pure one converted per cell, ``ρ_j = ε_j²/2``.

    A one-term charge on a query stays one term (``s²/2`` on the squared coefficients), so the per-cell
    totals keep their factored form; a uniform term becomes ``s²/2`` everywhere; several terms are added
    first (their sum is the release's one pure guarantee per cell) and converted densely.
    """
    if charge.measure == "rho":
        return charge
    if not charge.terms:
        return Charge(delta=charge.delta, measure="rho")
    if len(charge.terms) == 1:
        t = charge.terms[0]
        q = None if t.query is None else squared(t.query)
        return Charge((ChargeTerm(t.scale * t.scale / 2.0, q),), charge.delta, "rho")
    dense = charge.dense(n_cells) ** 2 / 2.0
    if not np.any(dense):
        return Charge(delta=charge.delta, measure="rho")
    shape = next((t.query.shape for t in charge.terms if t.query is not None), (n_cells,))
    return Charge((ChargeTerm(1.0, query_from_vector(dense, shape)),), charge.delta, "rho")


def cell_rho(charges: Iterable[Charge], shape: tuple[int, ...]) -> np.ndarray:
    """Per-cell ``ρ_j`` of a sequence of releases' charges, each converted by :func:`rho_charge`."""
    n = math.prod(shape)
    costs = CellCosts(shape)
    for charge in charges:
        for t in rho_charge(charge, n).terms:
            if t.query is None:
                costs.add_uniform(t.scale)
            else:
                costs.add(t.scale, t.query)
    out = costs.values.copy()
    out.setflags(write=False)
    return out


def history_rho(history: Any) -> np.ndarray:
    """Per-cell ``ρ_j`` of a :class:`~dpdesk.engine.inference.history.History`'s rows (each row one
    release, Laplace or Gaussian alike: ``(α|Q_j|/S)²/2``). (Typed loosely: inference sits above budget.)"""
    return cell_rho(
        (noise_family(r.family).charge_for(r.query, r.alpha) for r in history.rows), history.cells
    )


# -- the hard stop -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZcdpPreview:
    """Per-cell ρ now and after a release, and the system cost: the largest cell's ρ converted to ε."""

    total: float  # the project's total ε
    delta: float  # the project's δ
    conversion: str
    rho_budget: float  # the largest per-cell ρ the total allows (:func:`rho_for`)
    rho: float  # largest per-cell ρ now
    system_cost: float  # its ε at δ
    rho_after: float | None = None
    system_cost_after: float | None = None
    limiting_cell: int | None = None
    cell_rho_after: np.ndarray | None = None

    @property
    def remaining(self) -> float:
        return self.total - self.system_cost

    @property
    def remaining_after(self) -> float | None:
        return None if self.system_cost_after is None else self.total - self.system_cost_after

    @property
    def fits(self) -> bool:
        """The hard stop: the converted figure after the release stays within the total ε."""
        return self.system_cost_after is not None and self.system_cost_after <= self.total


def zcdp_preview(
    cell_rho_now: np.ndarray,
    total: float,
    delta: float,
    charge: Charge | None = None,
    conversion: str = "tight",
) -> ZcdpPreview:
    """System cost in ε (the largest ``ρ_j`` converted at ``δ``) now and after ``charge`` (any measure)."""
    if not (isinstance(total, (int, float)) and math.isfinite(total) and total > 0):
        raise BudgetError(f"total epsilon ({total!r}) must be a positive finite number")
    now = np.asarray(cell_rho_now, dtype=float)
    r_now = float(now.max()) if now.size else 0.0
    base = ZcdpPreview(
        total=float(total),
        delta=_check_delta(delta),
        conversion=conversion,
        rho_budget=rho_for(total, delta, conversion),
        rho=r_now,
        system_cost=epsilon(r_now, delta, conversion),
    )
    if charge is None:
        return base
    after = now + rho_charge(charge, now.size).dense(now.size)
    after.setflags(write=False)
    j = int(np.argmax(after)) if after.size else None
    r_after = float(after[j]) if j is not None else 0.0
    return dataclasses.replace(
        base,
        rho_after=r_after,
        system_cost_after=epsilon(r_after, delta, conversion),
        limiting_cell=j,
        cell_rho_after=after,
    )
