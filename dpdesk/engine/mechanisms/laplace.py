"""Laplace and discrete Laplace noise: the mechanisms behind a fresh count.

A fresh answer to a query of sensitivity ``S`` released with budget ``α`` adds noise of scale
``b = S/α``: continuous Laplace (density ``exp(-|z|/b)/(2b)``) or, for integer-coefficient queries,
discrete Laplace on the integers (mass ∝ ``exp(-|k|/b)``). Both are α-DP for sensitivity ``S`` (the
privacy map ``α = S/b``) and charge cell ``j`` ``α|Q_j|/S`` (paper Thm 5.4). Each object owns its
variance, tail, characteristic function, the α that meets an accuracy requirement alone (paper
Thm 5.3, corrected), and its sampler binding: how its true value goes onto the lattice the noise lives on
(:meth:`NoiseMechanism.on_lattice`, what OpenDP's measurement is applied to by the secure sampler) and a
seeded numpy draw for simulations over public quantities.

A Laplace release is not ``θ + N`` in binary64 (that leaks θ's low bits, Mironov 2012): θ is rounded
onto the lattice ``G·Z``, ``G = 2^g ≤ b·2⁻⁵²``, and OpenDP's exact discrete Laplace is added to the lattice
index (:mod:`dpdesk.engine.mechanisms.secure_noise`). The accuracy model below stays the continuous
Laplace of scale ``b``: what is released differs from it by the lattice, the rounding of θ onto it and a
scale larger by at most ``1 + 2⁻⁵²/α``, which moves any interval's probability by less than
``2⁻⁵¹(1 + 1/α)`` — under 10⁻⁹ for α ≥ 10⁻⁶, below every posterior method's error bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.mechanisms.base import Contribution, NoisyRow, check_requirement
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.queries.measured import footprint
from dpdesk.engine.queries.query import Query, product_form, query_from_json

__all__ = ["DISCRETE_LAPLACE", "LAPLACE", "DiscreteLaplace", "Laplace", "Lattice", "NoiseMechanism"]

LATTICE_BITS = 52  # a Laplace release's lattice step G is at most b·2^-52 (b its scale)
MAX_STEPS = 1 << 60  # ... and at least S·2^-60, so one record moves the lattice index by less than 2^60


def smallest_alpha(tail: Callable[[float], float], delta: float, start: float) -> float:
    """The smallest α with ``tail(α) ≤ δ``, for a tail that falls as α grows, to adjacent floats.

    ``start`` is a guess near the answer: the bracket doubles up from it until the tail meets δ and halves
    down until it does not, then bisects (≈ 60–100 evaluations of a closed form: microseconds, and no
    scipy.optimize to import). ``tail(lo) > δ ≥ tail(hi)`` throughout, so ``hi`` is the answer.
    """
    hi = start
    while tail(hi) > delta:
        hi *= 2.0
    lo = hi
    while tail(lo) <= delta and lo > 1e-300:
        lo /= 2.0
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            return hi
        if tail(mid) > delta:
            lo = mid
        else:
            hi = mid


@dataclass(frozen=True)
class Lattice:
    """A true value on the lattice ``2^exponent·Z`` its noise lives on, as the secure sampler needs it.

    OpenDP's exact discrete Laplace of ``scale`` (in lattice steps) is applied to ``index``; one record
    moves ``index`` by at most ``steps``, so the release is ``steps/scale``-DP: at most ``alpha``.
    """

    index: int
    scale: float
    steps: int
    alpha: float | None  # the α the release is charged (None: no sensitivity given, nothing to check)
    exponent: int

    def value_of(self, index: int) -> float:
        """The float nearest ``index·2^exponent`` (a post-processing of the noisy index)."""
        if self.exponent >= 0:
            return float(index << self.exponent)
        return float(Fraction(index, 1 << -self.exponent))


def _scale_up(exact: Fraction) -> float:
    """The smallest float not below ``exact`` (a noise scale may only grow when it is rounded)."""
    out = float(exact)
    return out if Fraction(out) >= exact else math.nextafter(out, math.inf)


def fine_lattice(value: Fraction, scale: float, sensitivity: float | None) -> Lattice:
    """A real θ on a fine lattice, for continuous noise of ``scale`` (Laplace ``b``, Gaussian ``σ``).

    θ is rounded to the nearest point of ``G·Z`` (ties to even), ``G = 2^g`` the largest power of two not
    above ``scale·2⁻⁵²`` (raised, for α = S/scale above 2⁸, so that one record moves the index by less
    than 2⁶⁰). One record moves θ by at most S and the rounding by at most one step, so the index moves
    by at most ``Δ = ⌊S/G⌋ + 1``; the family's integer noise of ``s = Δ·scale/S`` steps (rounded up) on
    it then costs exactly what noise of ``scale`` on θ is charged (``Δ/s = S/scale``).

    Examples
    --------
    >>> lat = fine_lattice(Fraction(37, 100), 1.0, 0.37)
    >>> lat.exponent, lat.index == round(Fraction(37, 100) * 2**52), lat.steps == int(0.37 * 2**52) + 1
    (-52, True, True)
    >>> abs(lat.value_of(lat.index) - 0.37) <= 2**-53  # θ on the lattice, half a step away at most
    True
    """
    if sensitivity is None or not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"a release of continuous noise needs its query's sensitivity, got {sensitivity!r}")
    s_exact, b_exact = Fraction(sensitivity), Fraction(scale)
    g = math.frexp(scale)[1] - 1 - LATTICE_BITS  # 2^(e-1) ≤ scale < 2^e
    while s_exact / Fraction(2) ** g >= MAX_STEPS:
        g += 1
    step = Fraction(2) ** g
    steps = math.floor(s_exact / step) + 1
    return Lattice(
        index=round(value / step),
        scale=_scale_up(steps * b_exact / s_exact),
        steps=steps,
        alpha=sensitivity / scale,
        exponent=g,
    )


def integer_lattice(value: Fraction, scale: float, sensitivity: float | None) -> Lattice:
    """An integer θ as it is (an integer query on counts), for integer noise of ``scale``."""
    if value.denominator != 1:
        raise ValueError(f"integer noise needs an integer true value, got {value}")
    steps = 1 if sensitivity is None else math.ceil(sensitivity)
    alpha = None if sensitivity is None else sensitivity / scale
    return Lattice(index=int(value), scale=scale, steps=steps, alpha=alpha, exponent=0)


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

    def opendp_loss(self, meas: Any, steps: int) -> float:
        """The ``α`` OpenDP's own privacy map states for ``meas`` (:meth:`lattice_measurement`) when one
        record moves its input by ``steps`` (``meas.map(steps)``)."""
        return float(meas.map(int(steps)))

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
    def on_lattice(self, value: Fraction, scale: float, sensitivity: float | None) -> Lattice:
        """The exact true ``value`` on this noise's lattice, for noise of ``scale`` on a query of
        ``sensitivity`` (the secure sampler applies :meth:`lattice_measurement` to its index)."""
        raise NotImplementedError

    def lattice_measurement(self, dp: Any, scale: float, size: int | None = None) -> Any:
        """OpenDP's integer measurement of this noise at ``scale`` steps (``size`` values at once when given):
        for the Laplace families its exact discrete Laplace over ``atom_domain(T="i64")``."""
        atom = dp.atom_domain(T="i64")
        if size is None:
            return dp.m.make_laplace(atom, dp.absolute_distance(T="i64"), scale=scale)
        return dp.m.make_laplace(dp.vector_domain(atom, size=size), dp.l1_distance(T="i64"), scale=scale)

    def draw_seeded(self, rng: np.random.Generator, scale: float, size: int | None = None) -> Any:
        """Draws from a seeded numpy generator: simulations over public quantities, never releases."""
        raise NotImplementedError


class Laplace(NoiseMechanism):
    """Continuous Laplace noise; OpenDP samples it on a fine grid with exact arithmetic (no low-bit leak)."""

    name = "laplace"
    label = "Laplace"
    lattice = False

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

    def on_lattice(self, value: Fraction, scale: float, sensitivity: float | None) -> Lattice:
        return fine_lattice(value, scale, sensitivity)

    def draw_seeded(self, rng: np.random.Generator, scale: float, size: int | None = None) -> Any:
        return rng.laplace(0.0, scale, size)


class DiscreteLaplace(NoiseMechanism):
    """Exact discrete Laplace noise on the integers, for queries with integer coefficients."""

    name = "discrete_laplace"
    label = "discrete Laplace"
    lattice = True

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

        # the tail falls as α grows; bracket from twice the continuous answer
        return smallest_alpha(tail, delta, 2.0 * sensitivity * math.log(1.0 / delta) / eps + 1e-12)

    def on_lattice(self, value: Fraction, scale: float, sensitivity: float | None) -> Lattice:
        return integer_lattice(value, scale, sensitivity)

    def draw_seeded(self, rng: np.random.Generator, scale: float, size: int | None = None) -> Any:
        # the difference of two geometric counts with p = 1 − e^{−1/b} is discrete Laplace
        p = -np.expm1(-1.0 / scale)
        return rng.geometric(p, size) - rng.geometric(p, size)


LAPLACE = Laplace()
DISCRETE_LAPLACE = DiscreteLaplace()
