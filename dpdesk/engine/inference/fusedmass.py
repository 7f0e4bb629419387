"""The fused posterior's mass on ``±ε`` for many candidate budgets, from history's law computed once.

A fresh answer fused with history has error ``S = (1 − t)·H + t·N`` (:mod:`.fusion`): ``H = Σ_k A_k N_k``
is history's noise sum, the same for every candidate budget ``α``, and ``N`` is the one fresh term, whose
scale ``S/α`` and weight ``t`` are all that change. The search for the smallest ``α`` asks for
``Pr(|S| ≤ ε)`` at a dozen ``α``; computing a whole posterior of ``S`` each time repeats the expensive part
(``H``'s many terms). Instead, :class:`FusedMass` computes ``H``'s law once, as a cumulative distribution
function with a uniform error bound ``e``, and conditions on the fresh term, whose law is closed-form:

* discrete ``N`` (atoms ``k`` with masses ``p_k``)::

      Pr(|S| ≤ ε) = Σ_k p_k · Pr(H ∈ [(−ε − t k)/(1 − t), (ε − t k)/(1 − t)])

  each interval's mass within ``2e`` of the one read from ``H``'s law, and ``Σ p_k ≤ 1``;
* continuous ``N`` and ``H`` with atoms (``h_i``, masses ``w_i``)::

      Pr(|S| ≤ ε) = Σ_i w_i · Pr(t N ∈ [−ε − (1 − t) h_i, ε − (1 − t) h_i])

  with the Laplace distribution function in closed form (the listed masses are within ``e`` of the
  exact ones in total).

``H``'s law comes in two forms. *Stepped*: ``H`` lives on a lattice (its masses by the exact lattice
transform) or on few enough atoms to list (:mod:`.atoms`); reading a distribution function is then a
search among the atoms. *Laplace*: ``H`` is one continuous term, in closed form. *Smooth*: ``H`` has a
continuous term (and more); its bin masses come from the transform
with its proven ℓ1 bound (:func:`~.grid.fft_general`), on bins fine enough that linear interpolation of
the distribution function between bin edges is within ``h²/(16 c₁²)``: the density of ``H`` is the
Laplace density of its widest continuous term ``c₁`` smoothed by the rest, so it is Lipschitz with
constant ``1/(2c₁²)``, and linear interpolation of a function whose derivative is ``L``-Lipschitz errs by
at most ``L h²/8``. *Spectral*, for a history with too many atoms off one lattice to list: ``H``'s
characteristic function is sampled once at ``2πj/P``; the fused sum's at its period ``(1 − t)P`` is that
times the fresh term's closed form, and Selberg's brackets (:mod:`.selberg`) read the mass on ``±ε``
(a half-gap up to ``SPECTRAL_TARGET``: wider than the others, which only raises the plan's ``α`` a
little). A continuous fresh term next to a smooth history is left to the whole fused posterior, whose
transform converges fast when every term is continuous (``None`` from :func:`fused_mass`); so is any
sum with a Gaussian term (fresh or in history), whose laws this module does not hold.
Private to the engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.inference import grid as _g
from dpdesk.engine.inference.atoms import enumerate_atoms
from dpdesk.engine.inference.history import Estimate
from dpdesk.engine.inference.selberg import FIRST_NODES, MAX_NODES, central_sums, selberg_weights
from dpdesk.engine.mechanisms.noise import NoiseFamily
from dpdesk.engine.mechanisms.registry import noise_family

__all__ = ["FusedMass", "fused_mass"]

TAIL = 1e-12  # Pr(|H| > T) and the fresh term's atoms left out: both enter the bounds
INTERPOLATION = 5e-7  # aimed-at error of the interpolated distribution function (smooth histories)
MAX_BLOCKS = 8192  # blocks of the fresh term's atoms read per budget
SPECTRAL_TARGET = 1e-4  # half-gap of Selberg's brackets aimed at (a wider one only raises the plan's α)
MAX_BINS = 2**17  # bins of a smooth history's law (beyond, the interpolation bound grows instead)


@dataclass(frozen=True, eq=False)
class _Stepped:
    """A law on sorted atoms: ``cum[i]`` = mass of ``points[:i]``; reads off by at most ``error``."""

    points: np.ndarray
    cum: np.ndarray
    error: float  # bound on |listed − exact| for any interval's mass
    tol: float  # atoms within this of an interval's end count as inside (rounding of the sums)

    def mass(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.points, low - self.tol, side="left")
        j = np.searchsorted(self.points, high + self.tol, side="right")
        return np.where(j > i, self.cum[j] - self.cum[np.minimum(i, j)], 0.0)


@dataclass(frozen=True, eq=False)
class _Smooth:
    """Cumulative masses at bin edges, read between them by linear interpolation."""

    edges: np.ndarray
    cum: np.ndarray
    error: float  # bound on |read − exact| for any interval's mass (two distribution-function reads)

    def mass(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        return np.asarray(
            np.maximum(np.interp(high, self.edges, self.cum) - np.interp(low, self.edges, self.cum), 0.0)
        )


@dataclass(frozen=True, eq=False)
class _Laplace:
    """One continuous term ``c·L``: its distribution function in closed form."""

    c: float
    error: float

    def cdf(self, x: np.ndarray) -> np.ndarray:
        z = np.asarray(x, dtype=float) / self.c
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1.0 - 0.5 * np.exp(-np.maximum(z, 0.0)))

    def mass(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        return np.asarray(np.maximum(self.cdf(high) - self.cdf(low), 0.0))


class _Spectral:
    """``H``'s characteristic function at ``2πj/P`` (``j < n``, extended on demand), for Selberg's brackets.

    The fused sum's samples at its own period ``(1 − t)P`` are ``φ_H(2πj/P)·φ_N(2πj t/((1 − t)P))``: the
    expensive factor does not depend on ``α``. ``P`` must keep ``(1 − t)P ≥ 2 T_S``: it is the power of two
    at or above that, so a budget's bracket does not depend on which budgets were asked before.
    """

    def __init__(self, comp: _g.Components, error: float) -> None:
        self.comp = comp
        self.error = error
        self.T = _g.tail_halfwidth(comp, TAIL / 2)
        self._phi: dict[float, np.ndarray] = {}
        self._weights: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def weights(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if n not in self._weights:
            self._weights[n] = selberg_weights(np.arange(1, n), n)
        return self._weights[n]

    @staticmethod
    def period(least: float) -> float:
        return 2.0 ** math.ceil(math.log2(least))

    def samples(self, period: float, n: int) -> np.ndarray:
        """``φ_H(2πj/P)`` for ``j < n``."""
        have = self._phi.get(period, np.ones(1))
        if n > have.size:
            have = self._phi[period] = np.concatenate([have, _g.phi_nodes(have.size, n, period, self.comp)])
        return have[:n]


def _history_law(estimate: Estimate) -> _Stepped | _Smooth | _Laplace | _Spectral:
    """``H = Σ_k A_k N_k``'s law with a bound on any interval's mass (see the module notes)."""
    from dpdesk.engine.inference.posterior import _prune_negligible  # its rounding-noise rule, shared

    assert estimate.coefficients is not None and estimate.noise_scales is not None
    b = np.asarray(estimate.noise_scales, dtype=float)
    discrete = np.array([noise_family(f).lattice for f in estimate.families], bool)
    A, pruned = _prune_negligible(np.asarray(estimate.coefficients, dtype=float), b, discrete)
    comp = _g.make_components(A, b, discrete)
    if comp.c.size + comp.a.size == 0:
        return _Stepped(np.zeros(1), np.array([0.0, 1.0]), pruned, 0.0)
    T = _g.tail_halfwidth(comp, TAIL)
    step = _g.lattice_step(comp)
    if step is not None and 2 * math.ceil(T / step) + 1 <= _g.LATTICE_MAX_POINTS:
        half = math.ceil(T / step)
        mass, err = _g.fft_lattice(comp, step, half)
        cum = np.concatenate([[0.0], np.cumsum(mass)])
        return _Stepped(step * np.arange(-half, half + 1), cum, 2 * err + 2 * TAIL + pruned, 1e-9 * step)
    if not comp.c.size:
        atoms = enumerate_atoms(comp, TAIL / (2 * comp.a.size))
        if atoms is None:
            return _Spectral(comp, pruned)
        values, weights = atoms.values, np.diff(atoms.cum)
        if atoms.group is not None:  # list the widest group too, when that stays affordable
            g = (atoms.group.size - 2) // 2
            if values.size * (2 * g + 1) > 4_000_000:
                return _Spectral(comp, pruned)
            gw = np.diff(atoms.group)
            keep = gw > 0
            values = (values[:, None] + atoms.step * np.arange(-g, g + 1)[keep][None, :]).ravel()
            weights = (weights[:, None] * gw[keep][None, :]).ravel()
            order = np.argsort(values, kind="stable")
            values, weights = values[order], weights[order]
        cum = np.concatenate([[0.0], np.cumsum(weights)])
        return _Stepped(values, cum, atoms.missing + 1e-15 * values.size**0.5 + pruned, atoms.tol)
    c1 = float(comp.c[-1])
    if comp.c.size == 1 and not comp.a.size:
        return _Laplace(c1, pruned + 1e-15)
    h = min(c1 * math.sqrt(16 * INTERPOLATION), 2 * T / 1000)
    half = math.ceil(T / h)
    if 2 * half + 1 > MAX_BINS:
        half = MAX_BINS // 2
        h = T / half
    n = _g.odd_fast_len(2 * half + 1)
    half = n // 2
    binned, err = _g.fft_general(comp, h, n, 1e-9, give_up=lambda e: e > 1e-6)
    if binned is None or err > 1e-6:  # discrete terms next to a narrow continuous one: not resolved in budget
        return _Spectral(comp, pruned)
    edges = h * (np.arange(-half, half + 2) - 0.5)
    cum = np.concatenate([[0.0], np.cumsum(binned)])
    each = err + 2 * TAIL + h * h / (16 * c1 * c1)  # one read of the distribution function
    return _Smooth(edges, cum, 2 * each + pruned)


class FusedMass:
    """Bounds of ``Pr(|(1 − t) H + t N| ≤ ε)`` for any budget of the fresh term (see the module notes).

    Parameters
    ----------
    estimate : Estimate
        History's estimate of the query (estimable): ``H``'s coefficients, scales and families.
    sensitivity : float
        The query's sensitivity (the fresh term's scale is ``sensitivity/α``).
    family : noise family or its name
        The fresh term's noise family.
    eps : float
        The request's half-width.
    law : optional
        ``H``'s law as built by :func:`fused_mass` (it is what is reused).
    """

    def __init__(
        self,
        estimate: Estimate,
        sensitivity: float,
        family: NoiseFamily,
        eps: float,
        law: _Stepped | _Smooth | _Laplace | _Spectral,
    ) -> None:
        assert estimate.variance is not None
        self.variance = float(estimate.variance)
        self.sensitivity = float(sensitivity)
        self.family = noise_family(family)
        self.eps = float(eps)
        self.law = law

    def weight(self, alpha: float) -> float:
        """``t``, the fresh answer's weight at ``alpha`` (inverse-variance)."""
        v_new = self.family.variance(self.family.scale(self.sensitivity, alpha))
        return self.variance / (self.variance + v_new)

    def bounds(self, alpha: float) -> tuple[float, float]:
        """``(lower, upper)`` bounds of the fused mass on ``±ε`` at ``alpha``."""
        t = self.weight(alpha)
        b = self.family.scale(self.sensitivity, alpha)
        eps, law = self.eps, self.law
        if isinstance(law, _Spectral):
            lower, upper = self._spectral(t, b)
        elif self.family.lattice:
            lower, upper = self._discrete(t, b)
        else:
            assert isinstance(law, _Stepped)
            # Laplace(c) distribution function of t·N at the ends of each atom's window
            c = t * b
            w = np.diff(law.cum)
            hi = (eps - (1 - t) * law.points) / c
            lo = (-eps - (1 - t) * law.points) / c

            def cdf(x: np.ndarray) -> np.ndarray:
                out: np.ndarray = np.where(
                    x < 0, 0.5 * np.exp(np.minimum(x, 0)), 1 - 0.5 * np.exp(-np.maximum(x, 0))
                )
                return out

            m = float(np.dot(w, cdf(hi) - cdf(lo)))
            lower, upper = m - law.error, m + law.error
        return max(lower, 0.0), min(upper, 1.0)

    def _discrete(self, t: float, b: float) -> tuple[float, float]:
        """Bounds for a discrete fresh term ``K``: its atoms in blocks of consecutive ``k``.

        Within a block ``k0..k1`` the window ``[(−ε − t k)/(1 − t), (ε − t k)/(1 − t)]`` slides, so its
        mass lies between that of the windows' intersection and of their union; blocks of one atom
        (any fresh term narrower than ``MAX_BLOCKS`` atoms) make the two one, exact to ``H``'s bound.
        """
        eps, law = self.eps, self.law
        assert not isinstance(law, _Spectral)  # bounds() asks _spectral for that law
        p = math.exp(-1.0 / b)
        # atoms |k| ≤ n, with Pr(|K| > n) = 2 p^(n+1)/(1 + p) ≤ TAIL left out
        n = max(0, math.ceil(math.log(TAIL * (1 + p) / 2) / math.log(p) - 1)) if p > 0 else 0
        dropped = 2.0 * p ** (n + 1) / (1 + p)
        width = max(1, math.ceil((2 * n + 1) / MAX_BLOCKS))
        k0 = np.arange(-n, n + 1, width, dtype=float)
        k1 = np.minimum(k0 + width - 1, n)

        def below(x: np.ndarray) -> np.ndarray:  # Pr(K ≤ x) for integers x
            out: np.ndarray = np.where(
                x >= 0, 1 - p ** (np.maximum(x, -1) + 1) / (1 + p), p ** np.maximum(-x, 0) / (1 + p)
            )
            return out

        pk = below(k1) - below(k0 - 1)
        if t >= 1.0:  # (only by rounding) history no longer matters
            inside = (np.maximum(np.abs(k0), np.abs(k1)) <= eps / t * (1 + 1e-12)).astype(float)
            return float(np.dot(pk, inside)), float(np.dot(pk, inside)) + dropped
        s = 1.0 - t
        inner = law.mass((-eps - t * k0) / s, (eps - t * k1) / s)  # (an empty window holds nothing)
        outer = law.mass((-eps - t * k1) / s, (eps - t * k0) / s)
        lower = float(np.dot(pk, np.clip(inner - law.error, 0.0, 1.0)))
        upper = float(np.dot(pk, np.clip(outer + law.error, 0.0, 1.0))) + dropped
        return lower, upper

    def _spectral(self, t: float, b: float) -> tuple[float, float]:
        """Selberg's brackets (:mod:`.selberg`) for ``S`` from ``H``'s samples and ``N``'s closed form."""
        law, fam = self.law, self.family
        assert isinstance(law, _Spectral)
        if fam.lattice:
            p = math.exp(-1.0 / b)
            q = -math.expm1(-1.0 / b)
            n_tail = max(0, math.ceil(math.log(TAIL / 2 * (1 + p) / 2) / math.log(p) - 1)) if p > 0 else 0
            t_n = float(n_tail)

            def phi_n(u: np.ndarray) -> np.ndarray:
                return q * q / (q * q + 4 * p * np.sin(u / 2) ** 2)
        else:
            t_n = b * math.log(1.0 / TAIL)

            def phi_n(u: np.ndarray) -> np.ndarray:
                return 1.0 / (1.0 + (b * u) ** 2)

        if t >= 1.0 or t <= 0.0:
            raise ValueError("the fused weight must lie strictly between 0 and 1")
        s = 1.0 - t
        T = s * law.T + t * t_n  # Pr(|S| > T) ≤ TAIL: each part's tail holds TAIL/2
        w = min(self.eps, T)
        clipped = self.eps > T
        big = law.period(2.0 * T / s)
        period = s * big
        n = FIRST_NODES
        while True:
            ph = law.samples(big, n)[1:]
            j = np.arange(1, ph.size + 1)
            ph = ph * phi_n(2.0 * math.pi * j * t / period)
            lower, gap = central_sums(ph, j, n, period, w, weights=law.weights(n))
            if gap <= SPECTRAL_TARGET or 2 * n > MAX_NODES:
                break
            # the half-gap falls like 1/n: go straight to the node count that should meet the target
            n = min(MAX_NODES, max(2 * n, 2 ** math.ceil(math.log2(n * gap / SPECTRAL_TARGET * 1.2))))
        upper = lower + 2 * gap + TAIL * (2 if clipped else 1)
        return lower - law.error, upper + law.error

    def confidence(self, alpha: float) -> float:
        """The lower bound: a plan that meets ``1 − δ`` with it does so for the exact law too."""
        return self.bounds(alpha)[0]


def fused_mass(estimate: Estimate, sensitivity: float, family: NoiseFamily, eps: float) -> FusedMass | None:
    """A :class:`FusedMass` for the request, or None when history's law does not allow it (see the notes)."""
    fam = noise_family(family)
    if fam.gaussian or any(noise_family(f).gaussian for f in set(estimate.families)):
        return None  # Gaussian terms: the whole fused posterior (its kernels hold them exactly)
    law = _history_law(estimate)
    if isinstance(law, (_Smooth, _Laplace)) and not fam.lattice:
        return None  # both parts continuous: the whole fused posterior's transform converges fast

    return FusedMass(estimate, sensitivity, fam, eps, law)
