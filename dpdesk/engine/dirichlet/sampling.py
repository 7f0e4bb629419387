"""Samplers for posterior releases: noise for counts, and exponential-mechanism selection.

A posterior release needs two kinds of randomness: discrete Laplace noise (the noisy size and the
Laplace baseline) and a draw from ``P(r) ∝ exp(score_r / scale)`` (the exponential mechanism). For
real releases both come from OpenDP: the selection is OpenDP's report-noisy-max with Gumbel noise
(``make_noisy_max`` with the zero-concentrated measure, whose Gumbel-max draw has exactly the
exponential mechanism's distribution). OpenDP only samples here; the privacy charge is dpdesk's own
(docs/dirichlet.md), so OpenDP's privacy map for the measurement is not used.

:class:`SeededPosteriorSampler` is the reproducible numpy counterpart for tests and simulations.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpdesk.engine.mechanisms.noise import NoiseFamily, SeededSampler
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler

__all__ = ["PosteriorSampler", "OpenDPPosteriorSampler", "SeededPosteriorSampler"]


@runtime_checkable
class PosteriorSampler(Protocol):
    """Draws count noise (``draw``) and exponential-mechanism choices (``select``)."""

    name: str
    secure: bool

    def draw(self, family: NoiseFamily, scale: float) -> float: ...

    def select(self, scores: np.ndarray, scale: float) -> int: ...


def _check(scores: np.ndarray, scale: float) -> np.ndarray:
    scores = np.asarray(scores, dtype=float).reshape(-1)
    if scores.size == 0 or not np.all(np.isfinite(scores)):
        raise ValueError("scores must be a non-empty vector of finite numbers")
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale ({scale}) must be a positive finite number")
    return scores


class OpenDPPosteriorSampler(OpenDPSampler):
    """OpenDP's samplers: discrete Laplace for counts, Gumbel report-noisy-max for selection."""

    def __init__(self) -> None:
        super().__init__()
        self._selectors: dict[tuple[int, float], Any] = {}

    def select(self, scores: np.ndarray, scale: float) -> int:
        """Index ``r`` with probability ``∝ exp(scores[r] / scale)``."""
        scores = _check(scores, scale)
        if scores.size == 1:
            return 0
        key = (int(scores.size), float(scale))
        meas = self._selectors.get(key)
        if meas is None:
            dp: Any = self._prelude()
            space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=key[0]), dp.linf_distance(T=float)
            meas = dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=key[1])
            self._selectors = {key: meas}  # one cached measurement: releases rarely repeat a scale
        return int(meas(scores.tolist()))


class SeededPosteriorSampler(SeededSampler):
    """A reproducible numpy sampler (``secure = False``): tests and simulations only."""

    def select(self, scores: np.ndarray, scale: float) -> int:
        scores = _check(scores, scale)
        return int(np.argmax(scores / scale + self._rng.gumbel(size=scores.size)))
