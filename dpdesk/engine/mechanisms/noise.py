"""The noise samplers behind fresh answers, and the noise families the posterior models.

A fresh answer to a query with sensitivity ``S`` and budget ``α`` adds noise of scale ``b = S/α``:
continuous Laplace (density ``exp(-|z|/b)/(2b)``) or, for integer-coefficient queries, discrete
Laplace on the integers (mass ∝ ``exp(-|k|/b)``). Both are α-DP for sensitivity ``S``.

Noise for releases comes only from a *secure* sampler (OpenDP's, in :mod:`dpdesk.engine.mechanisms.secure_noise`).
:class:`SeededSampler` is for tests and simulations over public quantities; the release path refuses
it unless a project is explicitly a test project.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

import numpy as np

NoiseFamily = Literal["laplace", "discrete_laplace"]
NOISE_FAMILIES: tuple[str, ...] = ("laplace", "discrete_laplace")


@runtime_checkable
class NoiseSampler(Protocol):
    """Draws one noise value of the given family and scale ``b = S/α``."""

    name: str
    secure: bool

    def draw(self, family: NoiseFamily, scale: float) -> float: ...


class SeededSampler:
    """A reproducible numpy sampler. Not for real releases: ``secure`` is False."""

    secure = False

    def __init__(self, seed: int | None = 0) -> None:
        self.name = f"seeded-numpy(seed={seed})"
        self._rng = np.random.default_rng(seed)

    def draw(self, family: NoiseFamily, scale: float) -> float:
        if not scale > 0:
            raise ValueError(f"scale ({scale}) must be positive")
        if family == "laplace":
            return float(self._rng.laplace(0.0, scale))
        if family == "discrete_laplace":
            # difference of two geometric variables with p = 1 - exp(-1/scale) is discrete Laplace
            p = -np.expm1(-1.0 / scale)
            return float(self._rng.geometric(p) - self._rng.geometric(p))
        raise ValueError(f"family ({family!r}) must be one of {NOISE_FAMILIES}")
