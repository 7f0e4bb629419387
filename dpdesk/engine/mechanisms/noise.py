"""The samplers of releases: the protocol, and a seeded one for tests and simulations.

A sampler *releases* a true value under noise of a registered family
(:mod:`dpdesk.engine.mechanisms.laplace`) at a scale: it is handed the true value and returns the noisy
one, so noise and a true value meet only inside it (DESIGN §4). The family object says how its true
value goes onto the lattice the noise lives on (:meth:`~dpdesk.engine.mechanisms.laplace.NoiseMechanism.
on_lattice`) and how a seeded generator draws it, so a sampler never switches on a family's name. Real
releases come only from the *secure* sampler (OpenDP's, in :mod:`dpdesk.engine.mechanisms.secure_noise`).
:class:`SeededSampler` is for tests and simulations over public quantities — it adds numpy noise to the
value in floating point, which is not private — and the release path refuses it unless a project is
explicitly a test project.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpdesk.engine.mechanisms.laplace import NoiseMechanism
from dpdesk.engine.mechanisms.registry import noise_family

# a family is passed as its object or its registered name
NoiseFamily = NoiseMechanism | str


@runtime_checkable
class NoiseSampler(Protocol):
    """Releases a true value under noise of a family and scale ``b = S/α``."""

    name: str
    secure: bool

    def release(
        self, family: NoiseFamily, value: Any, scale: float, sensitivity: float | None = None
    ) -> float: ...

    def release_vector(self, family: NoiseFamily, values: np.ndarray, scale: float) -> np.ndarray: ...


def check_scale(scale: float) -> float:
    scale = float(scale)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale ({scale}) must be a positive finite number")
    return scale


def exact_value(value: Any) -> Fraction:
    """A true value as the exact number it is (an integer, a fraction, or a float's binary fraction)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real | np.integer | np.floating):
        raise ValueError(f"a true value must be a number, got {value!r}")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral | np.integer):
        return Fraction(int(value))
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"a true value must be finite, got {value!r}")
    return Fraction(v)


def check_scores(scores: np.ndarray, scale: float) -> np.ndarray:
    """Validate an exponential-mechanism selection's scores (a finite vector) and scale."""
    scores = np.asarray(scores, dtype=float).reshape(-1)
    if scores.size == 0 or not np.all(np.isfinite(scores)):
        raise ValueError("scores must be a non-empty vector of finite numbers")
    check_scale(scale)
    return scores


class SeededSampler:
    """A reproducible numpy sampler: the value plus seeded noise in floats. Not for real releases
    (``secure`` is False): simulations over public quantities and test projects."""

    secure = False

    def __init__(self, seed: int | None = 0) -> None:
        self.name = f"seeded-numpy(seed={seed})"
        self._rng = np.random.default_rng(seed)

    def release(
        self, family: NoiseFamily, value: Any, scale: float, sensitivity: float | None = None
    ) -> float:
        noise = noise_family(family).draw_seeded(self._rng, check_scale(scale))
        return float(exact_value(value)) + float(noise)

    def release_vector(self, family: NoiseFamily, values: np.ndarray, scale: float) -> np.ndarray:
        """``values`` plus independent draws (simulations of partition releases)."""
        values = np.asarray(values)
        noise = np.asarray(noise_family(family).draw_seeded(self._rng, check_scale(scale), int(values.size)))
        out: np.ndarray = values + noise.reshape(values.shape)
        return out

    def select(self, scores: np.ndarray, scale: float) -> int:
        """Index ``r`` with probability ``∝ exp(scores[r] / scale)`` (Gumbel-max, like the secure sampler)."""
        scores = check_scores(scores, scale)
        return int(np.argmax(scores / scale + self._rng.gumbel(size=scores.size)))

    def noisy_max(self, scores: np.ndarray, scale: float, monotonic: bool = False) -> int:
        """Index of the largest ``score + Exponential(scale)`` (report-noisy-max, as OpenDP's ``make_noisy_max``)."""
        scores = check_scores(scores, scale)
        return int(np.argmax(scores + self._rng.exponential(scale, scores.size)))
