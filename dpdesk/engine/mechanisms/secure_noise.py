"""The secure noise sampler behind every real release: OpenDP's.

``OpenDPSampler().draw(family, scale)`` returns one noise value ``N``:

- ``"discrete_laplace"``: exact discrete Laplace on the integers, ``Pr(N = k) ∝ exp(-|k|/scale)``,
  from ``dp.m.make_laplace`` over ``dp.atom_domain(T="i64")`` (integer-coefficient queries);
- ``"laplace"``: OpenDP's float Laplace (``dp.atom_domain(T=float, nan=False)``), which samples on a
  fine grid with exact arithmetic and so avoids the low-bit leak of naive floating-point samplers
  (Mironov 2012).

The mechanism is applied to 0, so the released value is ``Q·x + N`` computed by the caller. OpenDP is
used only to sample: dpdesk keeps its own per-cell accounting (DESIGN §4). For a query of sensitivity
``S`` released with budget ``α`` the scale is ``S/α``, and the mechanism's own privacy map confirms it
(``measurement.map(S) == α`` up to rounding). ``opendp`` is imported on first use.
"""

from __future__ import annotations

import math
from typing import Any

from dpdesk.engine.mechanisms.noise import NOISE_FAMILIES, NoiseFamily


class OpenDPSampler:
    """Draws release noise from OpenDP (``secure = True``); measurements cached per (family, scale)."""

    secure = True

    def __init__(self) -> None:
        self._dp: Any = None
        self._cache: dict[tuple[str, float], Any] = {}
        self.name = "opendp"

    def _prelude(self) -> Any:
        if self._dp is None:
            from importlib.metadata import version

            import opendp.prelude as dp

            dp.enable_features("contrib")
            self._dp = dp
            self.name = f"opendp-{version('opendp')}"
        return self._dp

    def measurement(self, family: NoiseFamily, scale: float) -> Any:
        """The OpenDP measurement adding ``family`` noise of ``scale`` (cached)."""
        if family not in NOISE_FAMILIES:
            raise ValueError(f"family ({family!r}) must be one of {NOISE_FAMILIES}")
        scale = float(scale)
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale ({scale}) must be a positive finite number")
        key = (family, scale)
        meas = self._cache.get(key)
        if meas is None:
            dp = self._prelude()
            if family == "discrete_laplace":
                meas = dp.m.make_laplace(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale=scale)
            else:
                meas = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=scale)
            self._cache[key] = meas
        return meas

    def draw(self, family: NoiseFamily, scale: float) -> float:
        """One noise value of ``family`` and ``scale`` (an integer-valued float for discrete Laplace)."""
        meas = self.measurement(family, scale)
        if family == "discrete_laplace":
            return float(meas(0))
        return float(meas(0.0))

    def draw_many(self, family: NoiseFamily, scale: float, size: int) -> list[float]:
        """``size`` independent draws (one vector measurement; used by goodness-of-fit tests)."""
        dp = self._prelude()
        if family == "discrete_laplace":
            meas = dp.m.make_laplace(
                dp.vector_domain(dp.atom_domain(T="i64"), size=size), dp.l1_distance(T="i64"), scale=float(scale)
            )
            return [float(v) for v in meas([0] * size)]
        meas = dp.m.make_laplace(
            dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size), dp.l1_distance(T=float), scale=float(scale)
        )
        return [float(v) for v in meas([0.0] * size)]
