"""The samplers behind fresh answers: the protocol, and a seeded one for tests and simulations.

A sampler draws noise of a registered family (:mod:`dpdesk.engine.mechanisms.laplace`) at a scale;
the family object itself says how (its OpenDP constructor, its seeded numpy draw), so a sampler never
switches on a family's name. Noise for releases comes only from a *secure* sampler (OpenDP's, in
:mod:`dpdesk.engine.mechanisms.secure_noise`). :class:`SeededSampler` is for tests and simulations over
public quantities; the release path refuses it unless a project is explicitly a test project.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from dpdesk.engine.mechanisms.laplace import NoiseMechanism
from dpdesk.engine.mechanisms.registry import noise_family

# a family is passed as its object or its registered name
NoiseFamily = NoiseMechanism | str


@runtime_checkable
class NoiseSampler(Protocol):
    """Draws noise of a family and scale ``b = S/α``."""

    name: str
    secure: bool

    def draw(self, family: NoiseFamily, scale: float) -> float: ...

    def draw_many(self, family: NoiseFamily, scale: float, size: int) -> list[float]: ...


def _check_scale(scale: float) -> float:
    scale = float(scale)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale ({scale}) must be a positive finite number")
    return scale


def check_scores(scores: np.ndarray, scale: float) -> np.ndarray:
    """Validate an exponential-mechanism selection's scores (a finite vector) and scale."""
    scores = np.asarray(scores, dtype=float).reshape(-1)
    if scores.size == 0 or not np.all(np.isfinite(scores)):
        raise ValueError("scores must be a non-empty vector of finite numbers")
    _check_scale(scale)
    return scores


class SeededSampler:
    """A reproducible numpy sampler. Not for real releases: ``secure`` is False."""

    secure = False

    def __init__(self, seed: int | None = 0) -> None:
        self.name = f"seeded-numpy(seed={seed})"
        self._rng = np.random.default_rng(seed)

    def draw(self, family: NoiseFamily, scale: float) -> float:
        return float(noise_family(family).draw_seeded(self._rng, _check_scale(scale)))

    def draw_many(self, family: NoiseFamily, scale: float, size: int) -> list[float]:
        return [float(v) for v in noise_family(family).draw_seeded(self._rng, _check_scale(scale), int(size))]

    def select(self, scores: np.ndarray, scale: float) -> int:
        """Index ``r`` with probability ``∝ exp(scores[r] / scale)`` (Gumbel-max, like the secure sampler)."""
        scores = check_scores(scores, scale)
        return int(np.argmax(scores / scale + self._rng.gumbel(size=scores.size)))

    def draw_vector(self, family: NoiseFamily, scale: float, size: int) -> np.ndarray:
        """``size`` independent draws as an array (simulations of partition releases)."""
        return np.asarray(noise_family(family).draw_seeded(self._rng, _check_scale(scale), int(size)))

    def noisy_max(self, scores: np.ndarray, scale: float, monotonic: bool = False) -> int:
        """Index of the largest ``score + Exponential(scale)`` (report-noisy-max, as OpenDP's ``make_noisy_max``)."""
        scores = check_scores(scores, scale)
        return int(np.argmax(scores + self._rng.exponential(scale, scores.size)))
