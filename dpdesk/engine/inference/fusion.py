"""Fusion-aware budgets: a fresh answer released together with what history already says (DESIGN §2).

Paper Thm 5.3 prices a fresh answer as if history did not exist. When history gives an unbiased BLUE
``θ̂_H = A·y`` of ``θ = Q·x`` with variance ``V_H``, and the new noisy answer ``ỹ = θ + N_new`` has
variance ``V_new(α)``, the BLUE over history *plus* the new row is the inverse-variance combination

    ``θ̂_F = t·ỹ + (1 − t)·θ̂_H``,  ``t = V_H / (V_H + V_new)``

(any unbiased linear estimator is ``c·ỹ + L·y`` with ``L·y`` unbiased for ``(1 − c)θ``; the noises are
independent, so the best ``L·y`` is ``(1 − c)θ̂_H`` and the best ``c`` is ``t``). Under a flat prior the
posterior of ``θ`` is ``θ̂_F − [(1 − t)·A·N_H + t·N_new]``, so the mass of ``[θ̂_F − ε, θ̂_F + ε]`` is a
function of ``α`` and of public quantities only (history's ``A``, scales and families, the request).
:func:`plan_fusion` finds the smallest ``α`` whose fused posterior puts ``1 − δ`` on ``±ε``. It never
returns more than Thm 5.3's ``α``: when fusing does not reach ``1 − δ`` at that ``α`` (possible for
large ``δ``, where the blur of history's noise outweighs the shrinkage), the plan is a plain fresh
answer and no fusion.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.inference.fusedmass import FusedMass, fused_mass
from dpdesk.engine.inference.history import Estimate
from dpdesk.engine.inference.posterior import Posterior, posterior
from dpdesk.engine.inference.roots import brentq, erfinv
from dpdesk.engine.mechanisms.base import meets
from dpdesk.engine.mechanisms.noise import NoiseFamily
from dpdesk.engine.mechanisms.registry import noise_family

__all__ = ["FusionPlan", "fuse", "fused_confidence", "fused_posterior", "fusion_weight", "plan_fusion"]


@dataclass(frozen=True)
class FusionPlan:
    """The budget a fresh answer needs once it is fused with history.

    Attributes
    ----------
    alpha : float
        Budget to charge (``≤ fresh_alpha``).
    fresh_alpha : float
        Thm 5.3's budget for the request's noise family (what a fresh answer alone would cost).
    weight : float or None
        ``t``, the weight of the new answer in the released value; None when no fusion applies.
    confidence : float or None
        Fused posterior mass on ``±ε`` at ``alpha`` (None without fusion).
    """

    alpha: float
    fresh_alpha: float
    weight: float | None
    confidence: float | None

    @property
    def fused(self) -> bool:
        return self.weight is not None

    @property
    def saving(self) -> float:
        """Budget saved relative to Thm 5.3 (0 without fusion)."""
        return self.fresh_alpha - self.alpha


def fusion_weight(history_variance: float, new_variance: float) -> float:
    """``t = V_H / (V_H + V_new)``: the inverse-variance weight of the new answer."""
    return history_variance / (history_variance + new_variance)


def fuse(history_estimate: float, new_answer: float, weight: float) -> float:
    """The fused BLUE ``t·ỹ + (1 − t)·θ̂_H``."""
    return weight * new_answer + (1.0 - weight) * history_estimate


def _parts(
    estimate: Estimate, alpha: float, sensitivity: float, family: NoiseFamily
) -> tuple[float, np.ndarray, np.ndarray, list[str]]:
    assert estimate.estimable and estimate.variance is not None
    assert estimate.coefficients is not None and estimate.noise_scales is not None
    scale = sensitivity / alpha
    fam = noise_family(family)
    t = fusion_weight(estimate.variance, fam.variance(scale))
    coef = np.append((1.0 - t) * np.asarray(estimate.coefficients), t)
    scales = np.append(np.asarray(estimate.noise_scales), scale)
    fams = list(estimate.families) + [fam.name]
    return t, coef, scales, fams


def fused_posterior(
    estimate: Estimate,
    alpha: float,
    sensitivity: float,
    family: NoiseFamily,
    *,
    center: float = 0.0,
    method: str = "fft",
    rng: np.random.Generator | None = None,
    align: float | None = None,
) -> Posterior:
    """Posterior of ``θ`` about the fused value ``center`` for a new row of budget ``alpha``.

    Examples
    --------
    >>> from dpdesk.engine.inference.history import Estimate
    >>> est = Estimate(True, 1, "primal", 0.0, 10.0, np.array([1.0]), np.array([2.0]), ("laplace",), 8.0)
    >>> post = fused_posterior(est, 0.5, 1.0, "laplace")   # V_new = 8 too, so t = 1/2
    >>> round(post.std**2, 6)
    4.0
    """
    _, coef, scales, fams = _parts(estimate, alpha, sensitivity, family)
    return posterior(center, coef, scales, fams, method=method, rng=rng, align=align)


def fused_confidence(
    estimate: Estimate,
    alpha: float,
    sensitivity: float,
    family: NoiseFamily,
    eps: float,
    *,
    method: str = "fft",
) -> float:
    """A lower bound of the fused posterior mass on ``[θ̂_F − ε, θ̂_F + ε]`` (public quantities only).

    The computed mass minus its error bound, so a plan that meets ``1 − δ`` with it does so for the
    exact distribution too. Computed from history's law and the fresh term's
    (:mod:`~dpdesk.engine.inference.fusedmass`) where that applies, else from the whole fused posterior.
    """
    return float(_evaluator(estimate, sensitivity, family, eps, method)(alpha))


def _evaluator(
    estimate: Estimate, sensitivity: float, family: NoiseFamily, eps: float, method: str
) -> Callable[[float], float]:
    """``α ↦`` a lower bound of the fused mass on ``±ε``; history's law is computed once, up front."""
    mass: FusedMass | None = fused_mass(estimate, sensitivity, family, eps)
    if mass is not None:
        return mass.confidence

    def whole(alpha: float) -> float:
        post = fused_posterior(estimate, alpha, sensitivity, family, method=method, align=eps)
        return post.central_mass(eps) - post.error_bound

    return whole


def plan_fusion(
    estimate: Estimate,
    sensitivity: float,
    eps: float,
    delta: float,
    family: NoiseFamily,
    *,
    method: str = "fft",
    rtol: float = 1e-4,
) -> FusionPlan:
    """Smallest ``α ≤ fresh_alpha`` whose fused posterior holds ``1 − δ`` on ``±ε``.

    The mass on ``±ε`` grows with ``α`` (the fused variance ``V_H V_new/(V_H + V_new)`` falls); the
    search brackets the root in ``log α`` (starting from a normal approximation), refines it with
    Brent's method to relative precision ``rtol``, and returns the smallest ``α`` *evaluated* that meets
    the requirement, so the plan is feasible even if the mass were not monotone. Non-estimable queries
    get ``fresh_alpha`` and no fusion.

    Examples
    --------
    >>> from dpdesk.engine.inference.history import Estimate
    >>> est = Estimate(True, 1, "primal", 0.0, 10.0, np.array([1.0]), np.array([10.0]), ("laplace",), 200.0)
    >>> plan = plan_fusion(est, 1.0, 10.0, 0.05, "laplace")
    >>> plan.alpha < plan.fresh_alpha and plan.confidence >= 0.95
    True
    """
    fresh = noise_family(family).alpha_for(sensitivity, eps, delta)
    if not estimate.estimable or not estimate.variance or estimate.variance <= 0:
        return FusionPlan(fresh, fresh, None, None)
    need = 1.0 - delta  # the normal approximation's target; feasibility is decided by meets()
    cache: dict[float, float] = {}
    lower_bound = _evaluator(estimate, sensitivity, family, eps, method)

    def conf(alpha: float) -> float:
        if alpha not in cache:
            cache[alpha] = lower_bound(alpha)
        return cache[alpha]

    if not meets(
        conf(fresh), delta
    ):  # fusion does not reach the requirement at Thm 5.3's α: plain fresh answer
        return FusionPlan(fresh, fresh, None, None)
    guess = _guess(estimate, sensitivity, eps, need, fresh)
    floor = fresh * 1e-6  # below this the new row hardly matters: history alone (nearly) suffices
    hi, lo = fresh, None
    a = max(guess, floor)
    while a < hi:
        if meets(conf(a), delta):
            hi = a
            if a <= floor:
                break
            a = max(a / 2.0, floor)
        else:
            lo = a
            break
    if lo is None:
        # the guess was infeasible at or above hi: walk down from hi
        a = hi / 2.0
        while a > floor and meets(conf(a), delta):
            hi, a = a, a / 2.0
        if a <= floor:  # the caller answers from history for free before asking for a plan
            return FusionPlan(hi, fresh, _weight(estimate, hi, sensitivity, family), conf(hi))
        lo = a
    if hi / lo > 1.0 + rtol:
        f = lambda la: conf(math.exp(la)) - need
        try:
            root = math.exp(brentq(f, math.log(lo), math.log(hi), xtol=rtol / 4, rtol=1e-12, maxiter=60))
            conf(root * (1.0 + rtol / 2))
        except ValueError:  # pragma: no cover - bracket lost to rounding; hi is feasible
            pass
    feasible = [al for al, c in cache.items() if meets(c, delta) and al <= fresh]
    best = min(feasible)
    return FusionPlan(best, fresh, _weight(estimate, best, sensitivity, family), cache[best])


def _guess(estimate: Estimate, sensitivity: float, eps: float, need: float, fresh: float) -> float:
    """The normal approximation of the fused α: fused sd = ε / z, i.e. ``V_new = V_H v / (V_H − v)``."""
    assert estimate.variance is not None
    z = math.sqrt(2.0) * erfinv(need)
    v = (eps / z) ** 2
    vh = float(estimate.variance)
    if vh <= v:
        return fresh
    v_new = vh * v / (vh - v)
    b = math.sqrt(v_new / 2.0)  # Laplace scale with that variance
    return min(fresh, sensitivity / b)


def _weight(estimate: Estimate, alpha: float, sensitivity: float, family: NoiseFamily) -> float:
    assert estimate.variance is not None
    return fusion_weight(estimate.variance, noise_family(family).variance(sensitivity / alpha))
