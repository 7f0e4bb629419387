"""Laplace and discrete Laplace noise: the mechanisms behind a fresh count.

A fresh answer to a query of sensitivity ``S`` released with budget ``α`` adds noise of scale
``b = S/α``: continuous Laplace (density ``exp(-|z|/b)/(2b)``) or, for integer-coefficient queries,
discrete Laplace on the integers (mass ∝ ``exp(-|k|/b)``). Both are α-DP for sensitivity ``S`` (the
privacy map ``α = S/b``) and charge cell ``j`` ``α|Q_j|/S`` (paper Thm 5.4). Each object owns its
variance, tail, characteristic function, the α that meets an accuracy requirement alone (paper
Thm 5.3, corrected), and its sampler binding: the OpenDP constructor that draws it securely and a
seeded numpy draw for simulations over public quantities.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.mechanisms.base import Contribution, NoisyRow, check_requirement
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.queries.measured import footprint
from dpdesk.engine.queries.query import Query, product_form, query_from_json

__all__ = ["DISCRETE_LAPLACE", "LAPLACE", "DiscreteLaplace", "Laplace", "NoiseMechanism"]


def _check_alpha_inputs(sensitivity: float, eps: float, delta: float) -> None:
    check_requirement(eps, delta)
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise BudgetError(f"sensitivity ({sensitivity!r}) must be positive")


class NoiseMechanism:
    """Additive noise of scale ``S/α`` on a linear query: the part every noise family shares.

    ``measure`` names what its privacy map charges: ``"epsilon"`` (pure ε-DP, the Laplace families) or
    ``"rho"`` (ρ-zCDP, the Gaussian ones in :mod:`~dpdesk.engine.mechanisms.gaussian`).
    """

    kind = "fresh"
    name: str
    label: str
    lattice: bool  # True when the noise lives on the integers
    zero: Any  # the value the OpenDP measurement is applied to (the caller adds the true answer)
    measure = "epsilon"  # the measure of its charge (see engine/mechanisms/charge.py)
    gaussian = False  # True for Gaussian tails (the posterior's kernels treat them in closed form)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} mechanism {self.name!r}>"

    # -- the privacy map ---------------------------------------------------------------------
    @staticmethod
    def scale(sensitivity: float, alpha: float) -> float:
        """Noise scale ``b = S/α`` that makes a query of sensitivity ``S`` α-DP."""
        return sensitivity / alpha

    @staticmethod
    def privacy_loss(sensitivity: float, scale: float) -> float:
        """``α = S/b``: the budget noise of scale ``b`` spends on a query of sensitivity ``S``."""
        return sensitivity / scale

    @staticmethod
    def charge_for(query: Query, alpha: float) -> Charge:
        """A fresh answer's per-cell charge ``α|Q_j|/S`` (paper Thm 5.4); over measures ``α·Σ_b B_b|Q_bj|/S``,
        what one record in cell ``j`` can move the answer (docs/sums.md, Theorem 1)."""
        return Charge((ChargeTerm(alpha / query.sensitivity, footprint(query)),))

    def opendp_loss(self, meas: Any, sensitivity: float) -> float:
        """The ``α`` OpenDP's own privacy map states for ``meas`` at ``sensitivity`` (``meas.map(S)``)."""
        return float(meas.map(int(sensitivity) if self.lattice else float(sensitivity)))

    def contribution(self, payload: Mapping[str, Any], shape: tuple[int, ...]) -> Contribution:
        """A recorded fresh count: ``query``, ``alpha`` and the raw noisy ``answer`` (sensitivity re-derived)."""
        q = product_form(
            query_from_json(payload["query"], math.prod(shape), shape)
        )  # factored work in History
        alpha, answer = float(payload["alpha"]), float(payload["answer"])
        if not (math.isfinite(alpha) and alpha > 0):
            raise DpdeskError(f"alpha ({payload['alpha']!r}) must be a positive finite number")
        released = payload.get("values") or (payload.get("released", answer),)
        return Contribution(
            self.charge_for(q, alpha),
            (NoisyRow(q, alpha, answer, self.name),),
            tuple(float(v) for v in released),
        )

    # -- the accuracy model ------------------------------------------------------------------
    def variance(self, scale: float) -> float:
        raise NotImplementedError

    def fourth_moment(self, scale: float) -> float:
        """``E[N⁴]``: the spread of a squared error (cross-validation's noise floor)."""
        raise NotImplementedError

    def tail(self, scale: float, eps: float) -> float:
        """``Pr(|N| > ε)`` for one draw of scale ``b``."""
        raise NotImplementedError

    def log_cf(self, t: np.ndarray, scale: float) -> np.ndarray:
        """``log E[exp(itN)]`` (real: the noise is symmetric)."""
        raise NotImplementedError

    def cost_words(self, alpha: float, digits: int = 4) -> str:
        """What a fresh answer at ``alpha`` costs where ``|Q_j| = S``, in its measure: ``ε = 0.3``."""
        return f"ε = {alpha:.{digits}g}"

    def alpha_for(self, sensitivity: float, eps: float, delta: float) -> float:
        """Smallest α whose fresh answer alone is within ±ε with probability ≥ 1−δ."""
        raise NotImplementedError

    def applies_to(self, query: Query) -> bool:
        """Whether this noise can answer ``query`` (discrete noise needs integer coefficients)."""
        return True

    # -- the sampler binding -----------------------------------------------------------------
    def measurement(self, dp: Any, scale: float, size: int | None = None) -> Any:
        """The OpenDP measurement drawing this noise (``size`` draws at once when given)."""
        raise NotImplementedError

    def draw_seeded(self, rng: np.random.Generator, scale: float, size: int | None = None) -> Any:
        """Draws from a seeded numpy generator: simulations over public quantities, never releases."""
        raise NotImplementedError


class Laplace(NoiseMechanism):
    """Continuous Laplace noise; OpenDP samples it on a fine grid with exact arithmetic (no low-bit leak)."""

    name = "laplace"
    label = "Laplace"
    lattice = False
    zero = 0.0

    def variance(self, scale: float) -> float:
        return 2.0 * scale * scale

    def fourth_moment(self, scale: float) -> float:
        return 24.0 * scale**4

    def tail(self, scale: float, eps: float) -> float:
        return math.exp(-eps / scale)

    def log_cf(self, t: np.ndarray, scale: float) -> np.ndarray:
        return -np.log1p((scale * np.asarray(t, dtype=float)) ** 2)

    def alpha_for(self, sensitivity: float, eps: float, delta: float) -> float:
        """``α = S·ln(1/δ)/ε`` (paper Thm 5.3 with its stray factor removed, DESIGN §1).

        Examples
        --------
        >>> round(LAPLACE.alpha_for(1.0, 10.0, 0.05), 6)
        0.299573
        """
        _check_alpha_inputs(sensitivity, eps, delta)
        return sensitivity * math.log(1.0 / delta) / eps

    def measurement(self, dp: Any, scale: float, size: int | None = None) -> Any:
        atom = dp.atom_domain(T=float, nan=False)
        if size is None:
            return dp.m.make_laplace(atom, dp.absolute_distance(T=float), scale=scale)
        return dp.m.make_laplace(dp.vector_domain(atom, size=size), dp.l1_distance(T=float), scale=scale)

    def draw_seeded(self, rng: np.random.Generator, scale: float, size: int | None = None) -> Any:
        return rng.laplace(0.0, scale, size)


class DiscreteLaplace(NoiseMechanism):
    """Exact discrete Laplace noise on the integers, for queries with integer coefficients."""

    name = "discrete_laplace"
    label = "discrete Laplace"
    lattice = True
    zero = 0

    def variance(self, scale: float) -> float:
        p = math.exp(-1.0 / scale)
        return 2.0 * p / (1.0 - p) ** 2

    def fourth_moment(self, scale: float) -> float:
        # Σ_k k⁴ P(k) for the two-sided geometric law P(k) ∝ p^|k|
        p = math.exp(-1.0 / scale)
        return 2.0 * p * (1.0 + 10.0 * p + p * p) / (1.0 - p) ** 4

    def tail(self, scale: float, eps: float) -> float:
        return self._tail(1.0 / scale, eps)

    @staticmethod
    def _tail(rate: float, eps: float) -> float:
        # Pr(|K| > ε) = 2p^{⌊ε⌋+1}/(1+p), p = e^{-rate}; rate = α/S is kept as given so α searches are exact
        p = math.exp(-rate)
        return 2.0 * p ** (math.floor(eps) + 1) / (1.0 + p)

    def log_cf(self, t: np.ndarray, scale: float) -> np.ndarray:
        p, q = math.exp(-1.0 / scale), -math.expm1(-1.0 / scale)
        return 2 * math.log(q) - np.log(q * q + 4 * p * np.sin(0.5 * np.asarray(t, dtype=float)) ** 2)

    def applies_to(self, query: Query) -> bool:
        return query.is_integer

    def alpha_for(self, sensitivity: float, eps: float, delta: float) -> float:
        """The smallest α with ``2p^{⌊ε⌋+1}/(1+p) ≤ δ``, ``p = e^{-α/S}`` (exact for integer noise)."""
        _check_alpha_inputs(sensitivity, eps, delta)

        def tail(a: float) -> float:
            return self._tail(a / sensitivity, eps)

        # the tail falls as α grows; bracket between a tiny α and twice the continuous answer
        hi = 2.0 * sensitivity * math.log(1.0 / delta) / eps + 1e-12
        while tail(hi) > delta:
            hi *= 2.0
        lo = hi
        while tail(lo) <= delta and lo > 1e-300:
            lo /= 2.0
        # bisection down to adjacent floats: tail(lo) > δ ≥ tail(hi), so hi is the smallest α that meets δ
        # (≈ 60–100 evaluations of a closed form: microseconds, and no scipy.optimize to import)
        while True:
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                return hi
            if tail(mid) > delta:
                lo = mid
            else:
                hi = mid

    def measurement(self, dp: Any, scale: float, size: int | None = None) -> Any:
        atom = dp.atom_domain(T="i64")
        if size is None:
            return dp.m.make_laplace(atom, dp.absolute_distance(T="i64"), scale=scale)
        return dp.m.make_laplace(dp.vector_domain(atom, size=size), dp.l1_distance(T="i64"), scale=scale)

    def draw_seeded(self, rng: np.random.Generator, scale: float, size: int | None = None) -> Any:
        # the difference of two geometric counts with p = 1 − e^{−1/b} is discrete Laplace
        p = -np.expm1(-1.0 / scale)
        return rng.geometric(p, size) - rng.geometric(p, size)


LAPLACE = Laplace()
DISCRETE_LAPLACE = DiscreteLaplace()
