"""The secure noise sampler behind every real release: OpenDP's.

``OpenDPSampler().draw(family, scale)`` returns one noise value ``N`` from the measurement the family
object builds (:meth:`~dpdesk.engine.mechanisms.laplace.NoiseMechanism.measurement`): exact discrete
Laplace on the integers over ``dp.atom_domain(T="i64")``, or OpenDP's float Laplace, which samples on
a fine grid with exact arithmetic and so avoids the low-bit leak of naive floating-point samplers
(Mironov 2012). The measurement is applied to the family's zero, so the released value is ``Q·x + N``
computed by the caller. OpenDP is used only to sample: dpdesk keeps its own per-cell accounting
(DESIGN §4). For a query of sensitivity ``S`` released with budget ``α`` the scale is ``S/α``, and the
measurement's own privacy map confirms it (``measurement.map(S) == α`` up to rounding). ``opendp`` is
imported on first use (its modules, not the prelude: :func:`opendp_namespace`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpdesk.engine.mechanisms.noise import NoiseFamily, check_scores
from dpdesk.engine.mechanisms.registry import noise_family


def opendp_namespace() -> Any:
    """OpenDP's functions as ``opendp.prelude`` names them (``dp.m.make_laplace``, ``dp.atom_domain``,
    ``dp.l1_distance``, ``dp.max_divergence``, ``dp.enable_features``), from the modules that define
    them: the same functions, without the prelude's import of OpenDP's extras (its scikit-learn, NumPy
    and Polars front ends, about 0.15 s of a fresh command's start)."""
    import types

    import opendp.domains
    import opendp.measurements
    import opendp.measures
    import opendp.metrics
    import opendp.mod

    dp = types.SimpleNamespace()
    for module in (opendp.mod, opendp.domains, opendp.metrics, opendp.measures):
        for name in getattr(module, "__all__", ()):
            setattr(dp, name, getattr(module, name))
    dp.m = opendp.measurements
    return dp


class OpenDPSampler:
    """Draws release noise from OpenDP (``secure = True``); measurements cached per (family, scale, size)."""

    secure = True
    parallel_draws = True  # OpenDP samples in native code without the GIL: threads may draw at once

    def __init__(self) -> None:
        self._dp: Any = None
        self._cache: dict[tuple[str, float, int | None], Any] = {}
        self._selector: tuple[tuple[int, float], Any] | None = None
        self.name = "opendp"

    def _prelude(self) -> Any:
        if self._dp is None:
            from importlib.metadata import version

            dp = opendp_namespace()
            dp.enable_features("contrib")
            self._dp = dp
            self.name = f"opendp-{version('opendp')}"
        return self._dp

    def measurement(self, family: NoiseFamily, scale: float, size: int | None = None) -> Any:
        """The OpenDP measurement adding ``family`` noise of ``scale`` (``size`` values at once; cached)."""
        fam = noise_family(family)
        scale = float(scale)
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale ({scale}) must be a positive finite number")
        key = (fam.name, scale, size)
        meas = self._cache.get(key)
        if meas is None:
            meas = fam.measurement(self._prelude(), scale, size)
            if size is None:  # vector measurements are one-off (partition releases, goodness-of-fit tests)
                self._cache[key] = meas
        return meas

    def draw(self, family: NoiseFamily, scale: float) -> float:
        """One noise value of ``family`` and ``scale`` (an integer-valued float for discrete noise)."""
        return float(self.measurement(family, scale)(noise_family(family).zero))

    def draw_vector(self, family: NoiseFamily, scale: float, size: int) -> np.ndarray:
        """``size`` independent draws from one OpenDP vector measurement, as an array (partition releases).

        Each coordinate is a count of sensitivity 1 on its own, so the vector's l1 privacy map per record
        is the per-coordinate one: a partition's counts at scale ``b`` cost ``1/b`` per cell.
        """
        import numpy as np

        size = int(size)
        zero = noise_family(family).zero
        if size == 0:
            return np.zeros(0, dtype=type(zero))
        out = self.measurement(family, scale, size)(
            np.zeros(size, dtype=np.int64 if isinstance(zero, int) else float)
        )
        return np.asarray(out, dtype=np.int64 if isinstance(zero, int) else float)

    def noisy_max_measurement(self, scale: float, monotonic: bool) -> Any:
        """OpenDP's report-noisy-max over score vectors with ``LInfDistance`` (monotonic or not); cached."""
        key = ("noisy_max", float(scale), bool(monotonic))
        meas = self._cache.get(key)
        if meas is None:
            dp = self._prelude()
            meas = dp.m.make_noisy_max(
                dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                dp.linf_distance(T=float, monotonic=monotonic),
                dp.max_divergence(),
                scale=float(scale),
            )
            self._cache[key] = meas
        return meas

    def noisy_max(self, scores: np.ndarray, scale: float, monotonic: bool = False) -> int:
        """Index of the largest ``score + Exponential(scale)``: OpenDP's report-noisy-max (``make_noisy_max``).

        Over an ``LInfDistance`` of 1 its privacy map gives ``1/scale`` for monotonic scores and
        ``2/scale`` otherwise; the caller picks ``scale`` from its α accordingly.
        """
        import numpy as np

        s = np.asarray(scores, dtype=float)
        if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)):
            raise ValueError("scores must be a non-empty vector of finite numbers")
        return int(self.noisy_max_measurement(scale, monotonic)(s.tolist()))

    def draw_many(self, family: NoiseFamily, scale: float, size: int) -> list[float]:
        """``size`` independent draws from one vector measurement."""
        zero = noise_family(family).zero
        return [float(v) for v in self.measurement(family, scale, int(size))([zero] * int(size))]

    def select(self, scores: np.ndarray, scale: float) -> int:
        """Index ``r`` with probability ``∝ exp(scores[r] / scale)``: the exponential mechanism.

        OpenDP's report-noisy-max with Gumbel noise (``make_noisy_max`` under the zero-concentrated
        measure), whose Gumbel-max draw has exactly this distribution. Only the draw is OpenDP's: the
        privacy charge is the caller's (docs/dirichlet.md), not the measurement's map.
        """
        scores = check_scores(scores, scale)
        if scores.size == 1:
            return 0
        key = (int(scores.size), float(scale))
        if self._selector is None or self._selector[0] != key:  # releases rarely repeat a scale: keep one
            dp = self._prelude()
            space = (
                dp.vector_domain(dp.atom_domain(T=float, nan=False), size=key[0]),
                dp.linf_distance(T=float),
            )
            self._selector = (
                key,
                dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=key[1]),
            )
        return int(self._selector[1](scores.tolist()))
