"""Gaussian and discrete Gaussian noise: fresh counts priced in zero-concentrated DP (ρ-zCDP).

A fresh answer to a query of sensitivity ``S`` with Gaussian noise of standard deviation ``σ`` is
``ρ``-zCDP with ``ρ = S²/(2σ²)`` (Bun–Steinke 2016, Prop. 1.6); the discrete Gaussian ``N_Z(0, σ²)`` on an
integer query is too, exactly (Canonne–Kamath–Steinke 2020, Thm 4). Like the Laplace families these
objects are parametrised by ``α = S/σ`` — the noise's scale is ``S/α`` for every family, so the
history, the BLUE, fusion and the searches for the smallest sufficient ``α`` read them unchanged — and
their privacy map says what ``α`` costs in their own measure: ``ρ = α²/2`` for the whole query, and
per cell (a record in cell ``j`` moves the answer by ``|Q_j|``)

    ρ_j = (α |Q_j| / S)² / 2 = Q_j² / (2σ²),

a :class:`~dpdesk.engine.mechanisms.charge.Charge` with ``measure="rho"`` whose term is ``(α/S)²/2``
times the squared coefficients. Such a charge has no pure-ε reading: only a project accounted in zCDP
(:mod:`dpdesk.engine.budget.zcdp`) can take it. A release is OpenDP's exact discrete Gaussian
(``make_gaussian`` over ``atom_domain(T="i64")``) applied by the secure sampler to the true value: the
integer θ for the discrete one; for the continuous one θ's index on the lattice ``G·Z``, ``G ≤ σ·2⁻⁵²``,
with ``Δ = ⌊S/G⌋ + 1`` steps of sensitivity and ``Δ·σ/S`` steps of σ, exactly this ``ρ`` (as for Laplace:
:func:`~dpdesk.engine.mechanisms.laplace.fine_lattice`, never ``θ + N`` in floats); the measurement's
own map ``meas.map(Δ)`` is this ``ρ``.

The accuracy model is the Thm 5.3 analogue for Gaussian tails: alone, a fresh answer is within ``±ε``
with probability ``1 − δ`` when ``σ = ε / z_{1−δ/2}``; for the discrete Gaussian, the exact lattice tail
``Pr(|K| > ⌊ε⌋) ≤ δ`` (:mod:`~dpdesk.engine.mechanisms.discrete_gaussian`), which allows a larger σ than
the continuous formula.
"""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist
from typing import Any

import numpy as np

from dpdesk.engine.errors import BudgetError
from dpdesk.engine.mechanisms import discrete_gaussian as dg
from dpdesk.engine.mechanisms.base import check_requirement
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.mechanisms.laplace import (
    Lattice,
    NoiseMechanism,
    fine_lattice,
    integer_lattice,
    smallest_alpha,
)
from dpdesk.engine.queries.algebra import squared
from dpdesk.engine.queries.measured import footprint
from dpdesk.engine.queries.query import Query

__all__ = ["DISCRETE_GAUSSIAN", "GAUSSIAN", "DiscreteGaussian", "Gaussian", "GaussianNoise"]


def _check(sensitivity: float, eps: float, delta: float) -> None:
    check_requirement(eps, delta)
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise BudgetError(f"sensitivity ({sensitivity!r}) must be positive")


class GaussianNoise(NoiseMechanism):
    """What both Gaussian families share: the zCDP privacy map of ``α = S/σ``."""

    measure = "rho"
    gaussian = True

    @staticmethod
    def rho(alpha: float) -> float:
        """``ρ = α²/2``: what a fresh answer at ``α = S/σ`` costs the cells where ``|Q_j| = S``."""
        return alpha * alpha / 2.0

    def cost_words(self, alpha: float, digits: int = 4) -> str:
        """``ρ = α²/2``: the cost in ρ where ``|Q_j| = S``."""
        return f"ρ = {self.rho(alpha):.{digits}g}"

    @staticmethod
    def alpha_of_rho(rho: float) -> float:
        """The inverse of :meth:`rho`: ``α = √(2ρ)``."""
        return math.sqrt(2.0 * rho)

    @staticmethod
    def charge_for(query: Query, alpha: float) -> Charge:
        """Per cell ``ρ_j = (α|Q_j|/S)²/2``: one term ``(α/S)²/2`` on the squared coefficients.

        Examples
        --------
        >>> from dpdesk.engine.queries.query import query_from_vector
        >>> q = query_from_vector([2, -1, 0], (3,))
        >>> GAUSSIAN.charge_for(q, 1.0).dense(3).tolist()      # σ = S/α = 2: ρ_j = Q_j²/8
        [0.5, 0.125, 0.0]
        """
        s = alpha / query.sensitivity
        return Charge((ChargeTerm(s * s / 2.0, squared(footprint(query))),), measure="rho")

    def opendp_loss(self, meas: Any, steps: int) -> float:
        """The ``α`` OpenDP's own map states for ``meas`` when one record moves its input by ``steps``:
        ``√(2·meas.map(steps))``."""
        return self.alpha_of_rho(float(meas.map(int(steps))))

    def lattice_measurement(self, dp: Any, scale: float, size: int | None = None) -> Any:
        """OpenDP's exact discrete Gaussian (``make_gaussian`` over ``atom_domain(T="i64")``) at ``scale``
        steps; ``size`` values at once under the l2 distance."""
        atom = dp.atom_domain(T="i64")
        if size is None:
            return dp.m.make_gaussian(atom, dp.absolute_distance(T="i64"), scale=scale)
        return dp.m.make_gaussian(dp.vector_domain(atom, size=size), dp.l2_distance(T="i64"), scale=scale)


class Gaussian(GaussianNoise):
    """Continuous Gaussian noise (OpenDP's discrete Gaussian on a fine lattice under θ: no low-bit leak)."""

    name = "gaussian"
    label = "Gaussian"
    lattice = False

    def variance(self, scale: float) -> float:
        return scale * scale

    def fourth_moment(self, scale: float) -> float:
        return 3.0 * scale**4

    def tail(self, scale: float, eps: float) -> float:
        return math.erfc(eps / (scale * math.sqrt(2.0)))

    def log_cf(self, t: np.ndarray, scale: float) -> np.ndarray:
        return -0.5 * (scale * np.asarray(t, dtype=float)) ** 2

    def alpha_for(self, sensitivity: float, eps: float, delta: float) -> float:
        """``α = S·z_{1−δ/2}/ε``: ``σ = ε/z_{1−δ/2}`` puts ``1 − δ`` of the noise within ``±ε``.

        Examples
        --------
        >>> round(GAUSSIAN.alpha_for(1.0, 10.0, 0.05), 6)      # z_0.975 = 1.959964
        0.195996
        """
        _check(sensitivity, eps, delta)
        return sensitivity * -NormalDist().inv_cdf(delta / 2.0) / eps

    def on_lattice(self, value: Fraction, scale: float, sensitivity: float | None) -> Lattice:
        return fine_lattice(value, scale, sensitivity)

    def draw_seeded(self, rng: np.random.Generator, scale: float, size: int | None = None) -> Any:
        return rng.normal(0.0, scale, size)


class DiscreteGaussian(GaussianNoise):
    """Exact discrete Gaussian noise on the integers (OpenDP), for queries with integer coefficients."""

    name = "discrete_gaussian"
    label = "discrete Gaussian"
    lattice = True

    def variance(self, scale: float) -> float:
        return dg.variance(scale)

    def fourth_moment(self, scale: float) -> float:
        return dg.fourth_moment(scale)

    def tail(self, scale: float, eps: float) -> float:
        return dg.tail(scale, eps)

    def log_cf(self, t: np.ndarray, scale: float) -> np.ndarray:
        return dg.log_cf(t, scale)

    def applies_to(self, query: Query) -> bool:
        return query.is_integer

    def alpha_for(self, sensitivity: float, eps: float, delta: float) -> float:
        """The smallest ``α`` with ``Pr(|K| > ⌊ε⌋) ≤ δ`` at ``σ = S/α`` (the exact lattice tail).

        The tail grows with ``σ`` (the laws are ordered by likelihood ratio in ``|k|``), so bisection on
        ``α`` finds the boundary to adjacent floats.
        """
        _check(sensitivity, eps, delta)

        def tail(a: float) -> float:
            return dg.tail(sensitivity / a, eps)

        # the continuous answer is close: bracket around it
        return smallest_alpha(tail, delta, 2.0 * GAUSSIAN.alpha_for(sensitivity, eps, delta) + 1e-12)

    def on_lattice(self, value: Fraction, scale: float, sensitivity: float | None) -> Lattice:
        return integer_lattice(value, scale, sensitivity)

    def draw_seeded(self, rng: np.random.Generator, scale: float, size: int | None = None) -> Any:
        return dg.draw(rng, scale, size)


GAUSSIAN = Gaussian()
DISCRETE_GAUSSIAN = DiscreteGaussian()
