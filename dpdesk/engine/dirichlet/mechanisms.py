"""The mechanisms that release a Dirichlet posterior of proportions, each with its privacy charge.

A release reads the ``k`` category counts ``c`` of one box; a record inside the box changes one count
by one, a record outside changes nothing. Each mechanism states the ``alpha`` and ``delta`` it costs
every cell of the box (paper Thm 5.4: cells outside the box pay nothing; the ledger's charge is built
from them by :mod:`dpdesk.engine.dirichlet.privacy_map`), draws only through the sampler it is given
(OpenDP's for releases), and can give its exact output distribution at any counts (for tests and the
benchmark).

- :class:`ExponentialGlobal` — the exponential mechanism over a public :class:`CandidateSet` with the
  prior-only global sensitivity: α-DP (docs/dirichlet.md §2).
- :class:`ExponentialSmooth` — the same, scaled by the β-smooth sensitivity: (α, δ)-DP by Thm 4.1
  (docs/dirichlet.md §4). Its scale reads the data and is never recorded.
- :class:`LaplaceCounts` — discrete Laplace noise on all ``k`` counts, clipped at 0, conjugate update:
  α-DP (docs/dirichlet.md §5).
- :class:`NoisySize` — the box's total with discrete Laplace noise, clipped at 0, as the public size
  of a candidate set: α-DP.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from dpdesk.engine.dirichlet.candidates import CandidateSet
from dpdesk.engine.dirichlet.hellinger import global_sensitivity, hellinger
from dpdesk.engine.dirichlet.smooth import SmoothCalibration, calibrate, smooth_bound
from dpdesk.engine.errors import DpdeskError

__all__ = [
    "ExponentialGlobal",
    "ExponentialSmooth",
    "LaplaceCounts",
    "NoisySize",
    "PosteriorSampler",
    "clipped_count_pmf",
    "discrete_laplace_pmf",
]


class PosteriorSampler(Protocol):
    """What a posterior release draws with (``OpenDPSampler`` for releases, ``SeededSampler`` in tests)."""

    name: str
    secure: bool

    def release(self, family: Any, value: Any, scale: float, sensitivity: float | None = None) -> float: ...

    def select(self, scores: np.ndarray, scale: float) -> int: ...


def _positive(alpha: float, what: str = "budget") -> float:
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        raise DpdeskError(f"{what} ({alpha}) must be a positive number")
    return float(alpha)


def _counts(counts: Any, k: int) -> np.ndarray:
    c = np.asarray(counts)
    if c.shape != (k,) or not np.all(c == np.floor(c)) or np.any(c < 0):
        raise ValueError(f"counts ({np.asarray(counts).tolist()}) must be {k} non-negative integers")
    return c.astype(np.int64)


def _softmax(logits: np.ndarray) -> np.ndarray:
    w = np.exp(logits - logits.max())
    return np.asarray(w / w.sum())


def discrete_laplace_pmf(z: np.ndarray, alpha: float) -> np.ndarray:
    """``Pr(Z = z) = tanh(α/2)·exp(-α|z|)``: discrete Laplace with scale ``1/α``."""
    return np.asarray(math.tanh(alpha / 2) * np.exp(-alpha * np.abs(np.asarray(z, dtype=float))))


def clipped_count_pmf(count: int, alpha: float, upto: int) -> np.ndarray:
    """``Pr(max(0, count + Z) = v)`` for ``v = 0..upto``; the rest of the mass lies above ``upto``.

    ``Pr(v = 0) = Pr(Z ≤ -count) = exp(-α·count) / (1 + exp(-α))``.
    """
    v = np.arange(upto + 1)
    pmf = discrete_laplace_pmf(v - count, alpha)
    pmf[0] = math.exp(-alpha * count) / (1 + math.exp(-alpha))
    return pmf


class ExponentialGlobal:
    """``P(r) ∝ exp(α·u_c(r) / (2Δ))`` over the candidates, ``u_c(r) = -H(Dir(prior + c), r)``.

    ``Δ = sqrt(1 - g(min prior))`` bounds ``|u_c(r) - u_c'(r)|`` for all add/remove neighbours and all
    ``r`` (:func:`global_sensitivity`), so the release is α-DP (Dwork–Roth Thm 3.10).
    """

    name = "exponential-global"
    delta = 0.0  # a pure mechanism

    def __init__(self, candidates: CandidateSet, alpha: float) -> None:
        self.candidates = candidates
        self.alpha = _positive(alpha)
        self.sensitivity = global_sensitivity(candidates.prior)

    @property
    def prior(self) -> np.ndarray:
        return self.candidates.prior

    def scores(self, counts: Any) -> np.ndarray:
        """``u_c(r)`` for every candidate (reads the data)."""
        c = _counts(counts, self.candidates.k)
        return -hellinger(self.prior + c, self.candidates.parameters())

    def _scale(self, counts: np.ndarray) -> float:
        return 2.0 * self.sensitivity / self.alpha

    def probabilities(self, counts: Any) -> np.ndarray:
        """The exact output distribution over :meth:`CandidateSet.parameters` rows."""
        c = _counts(counts, self.candidates.k)
        return _softmax(self.scores(c) / self._scale(c))

    def release(self, counts: Any, sampler: PosteriorSampler) -> np.ndarray:
        """Draw one candidate's Dirichlet parameters (read-only)."""
        c = _counts(counts, self.candidates.k)
        index = sampler.select(self.scores(c), self._scale(c))
        out = np.array(self.candidates.parameters()[index])
        out.setflags(write=False)
        return out

    def describe(self) -> dict[str, Any]:
        """Public description for the ledger (no data-dependent value)."""
        return {
            "mechanism": self.name,
            "alpha": self.alpha,
            "delta": 0.0,
            "candidates": self.candidates.to_json(),
            "global_sensitivity": self.sensitivity,
        }


class ExponentialSmooth(ExponentialGlobal):
    """``P(r) ∝ exp(ε₀·v_c(r) / (2·S_v(c)))`` with the smooth bound ``S_v = 2·S_β``: (α, δ)-DP.

    ``v_c = u_c - max_r u_c(r)`` puts the best candidate at 0, which Thm 4.1 needs because a public
    candidate set need not contain the true posterior; the shift at most doubles the local
    sensitivity, hence ``S_v = 2·S_β``. The shift does not change the distribution. ``ε₀`` and ``β``
    come from :func:`calibrate` (public inputs: α, δ, the candidate count, ``split``).
    """

    name = "exponential-smooth"

    def __init__(self, candidates: CandidateSet, alpha: float, delta: float, split: float = 0.5) -> None:
        super().__init__(candidates, alpha)
        self.delta = float(delta)
        self.calibration: SmoothCalibration = calibrate(self.alpha, self.delta, candidates.count, split)

    def _scale(self, counts: np.ndarray) -> float:
        # private: S_β(c) reads the data; it lives only inside this draw
        s_v = 2.0 * smooth_bound(self.prior, counts, self.calibration.beta)
        return 2.0 * s_v / self.calibration.eps0

    def describe(self) -> dict[str, Any]:
        cal = self.calibration
        return {
            "mechanism": self.name,
            "alpha": self.alpha,
            "delta": self.delta,
            "candidates": self.candidates.to_json(),
            "eps0": cal.eps0,
            "beta": cal.beta,
            "split": cal.split,
        }


class LaplaceCounts:
    """``Dir(prior + max(0, c + Z))`` with ``Z_i`` i.i.d. discrete Laplace of scale ``1/α``: α-DP.

    One record changes one count by one (L1 sensitivity 1), so noise of scale ``1/α`` on every
    count — including the last, which the notes fix from ``n`` — is α-DP. A negative noisy count is
    clipped to 0 (its mass moves to 0, nothing is dropped); the prior keeps every parameter positive.
    """

    name = "laplace"
    delta = 0.0  # a pure mechanism

    def __init__(self, prior: Any, alpha: float) -> None:
        prior = np.array(prior, dtype=float).reshape(-1)
        if prior.size < 2 or not np.all(np.isfinite(prior) & (prior > 0)):
            raise DpdeskError(f"prior: needs at least 2 positive parameters, got {prior.tolist()}")
        prior.setflags(write=False)
        self.prior = prior
        self.alpha = _positive(alpha)

    def noisy_counts(self, counts: Any, sampler: PosteriorSampler) -> np.ndarray:
        c = _counts(counts, self.prior.size)
        return np.array(
            [max(0.0, sampler.release("discrete_laplace", int(ci), 1.0 / self.alpha, 1)) for ci in c]
        )

    def release(self, counts: Any, sampler: PosteriorSampler) -> np.ndarray:
        out: np.ndarray = self.prior + self.noisy_counts(counts, sampler)
        out.setflags(write=False)
        return out

    def marginal(self, count: int, upto: int) -> np.ndarray:
        """``Pr(max(0, count + Z) = v)`` for ``v = 0..upto`` (one category's released pseudo-count)."""
        return clipped_count_pmf(int(count), self.alpha, upto)

    def describe(self) -> dict[str, Any]:
        return {
            "mechanism": self.name,
            "alpha": self.alpha,
            "delta": 0.0,
            "prior": self.prior.tolist(),
            "clip": "at 0",
        }


class NoisySize:
    """The box total ``max(0, n + Z)``, ``Z`` discrete Laplace of scale ``1/α``: α-DP, then public."""

    name = "noisy-size"
    delta = 0.0  # a pure mechanism

    def __init__(self, alpha: float) -> None:
        self.alpha = _positive(alpha, "size budget")

    def release(self, total: int, sampler: PosteriorSampler) -> int:
        return int(max(0.0, sampler.release("discrete_laplace", int(total), 1.0 / self.alpha, 1)))

    def pmf(self, total: int, upto: int) -> np.ndarray:
        return clipped_count_pmf(int(total), self.alpha, upto)
