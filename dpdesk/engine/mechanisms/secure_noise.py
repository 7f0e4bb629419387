"""The secure noise sampler behind every real release: OpenDP's measurement applied to the true value.

Noise and a true value meet only here (DESIGN §4). :meth:`OpenDPSampler.release` takes the true value θ
and returns the released one; there is no call that hands out bare noise to be added elsewhere. Adding
noise drawn at zero to θ in binary64 (``θ + N``) is not differentially private: which floats ``θ + N``
can round to depends on θ's low bits, so neighbouring tables have events one can produce and the other
cannot (Mironov 2012). Instead every release is exact integer arithmetic on a lattice, with the family's
OpenDP integer measurement (:meth:`~dpdesk.engine.mechanisms.laplace.NoiseMechanism.lattice_measurement`:
exact discrete Laplace, or exact discrete Gaussian for the ρ-priced families):

* **integer families** (discrete Laplace, discrete Gaussian: integer queries on integer counts): the
  measurement, at scale ``b = S/α``, is applied to the integer θ.
* **continuous families** (Laplace, Gaussian: any query): θ = Σ_j q_j x_j is exact (binary-fraction
  coefficients times integer counts: :func:`dpdesk.engine.answering.fresh.exact_answer`). It is rounded to
  the nearest point ``G·m`` of the lattice ``G·Z``, ``G = 2^g`` the largest power of two not above
  ``b·2⁻⁵²`` (:func:`~dpdesk.engine.mechanisms.laplace.fine_lattice`), and the measurement is applied to
  the lattice index ``m`` with scale ``s = Δ·b/S`` in lattice steps, where ``Δ = ⌊S/G⌋ + 1`` bounds how
  far ``m`` moves when one record changes (the rounding adds at most one step). So the release costs
  exactly what noise of scale ``b`` on θ is charged (α = S/b; ρ = α²/2 for the Gaussian), and the
  measurement's own privacy map says so (checked on every release). The released value is ``G·(m + K)``
  rounded to the nearest float, a post-processing. This is how OpenDP's own float Laplace and Gaussian
  work inside (granularity ``2^k``); dpdesk rounds onto the lattice from the exact θ because θ need not be
  a float, and a θ rounded to a float first could move by more than S between neighbouring tables.

The index is large (θ/G ~ θ·2⁵²/b): the measurement is applied to its low part ``m − h`` (``h`` the
nearest multiple of 2⁴⁰) and ``h`` is added back in exact integer arithmetic, so no value ever leaves
i64 (the noise is ~2⁵² steps; 2⁶³ is 2¹⁰ scales away).

What a continuous release is, then, differs from ``θ + noise of scale b`` — the accuracy model of the
engine's posterior — only by the lattice (steps of at most ``b·2⁻⁵²``), the rounding of θ onto it (half a
step) and a scale larger by the factor ``Δ·G/S ≤ 1 + G/S ≤ 1 + 2⁻⁵²/α``: any interval's probability moves
by less than ``2⁻⁵¹(1 + 1/α)`` (below 10⁻⁹ for α ≥ 10⁻⁶, under every posterior method's error bound).

Report-noisy-max and the exponential mechanism (:meth:`noisy_max`, :meth:`select`) are OpenDP's
``make_noisy_max`` applied to the true scores. OpenDP is used only to sample: dpdesk keeps its own
per-cell accounting (DESIGN §4). ``opendp`` is imported on first use (its modules, not the prelude:
:func:`opendp_namespace`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpdesk.engine.mechanisms.laplace import Lattice, NoiseMechanism
from dpdesk.engine.mechanisms.noise import NoiseFamily, check_scale, check_scores, exact_value
from dpdesk.engine.mechanisms.registry import noise_family

_LOW_BITS = 40  # the measurement sees the lattice index modulo a multiple of 2^40 (see the docstring)
_REL_MAP = 1e-12  # OpenDP's map rounds up; a map above α by more than this is a bug, not rounding


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
    """Releases through OpenDP (``secure = True``); measurements cached per (scale, size)."""

    secure = True
    parallel_draws = True  # OpenDP samples in native code without the GIL: threads may draw at once

    def __init__(self) -> None:
        self._dp: Any = None
        self._cache: dict[tuple[str, float, int | None], Any] = {}
        self._selector: tuple[tuple[int, float], Any] | None = None
        self._maps: dict[tuple[str, float, int], float] = {}
        self.name = "opendp"

    def _prelude(self) -> Any:
        if self._dp is None:
            from importlib.metadata import version

            dp = opendp_namespace()
            dp.enable_features("contrib")
            self._dp = dp
            self.name = f"opendp-{version('opendp')}"
        return self._dp

    def lattice_measurement(self, family: NoiseFamily, scale: float, size: int | None = None) -> Any:
        """The family's OpenDP integer measurement at ``scale`` lattice steps (``size`` values at once when
        given: one-off, for partition releases); scalar ones cached."""
        fam = noise_family(family)
        key = (fam.name, float(scale), size)
        meas = self._cache.get(key)
        if meas is None:
            meas = fam.lattice_measurement(self._prelude(), float(scale), size)
            if size is None:
                self._cache[key] = meas
        return meas

    def release(
        self, family: NoiseFamily, value: Any, scale: float, sensitivity: float | None = None
    ) -> float:
        """The released value of true value ``value`` under ``family`` noise of scale ``b = scale``.

        ``value`` is exact (an int, a :class:`~fractions.Fraction` or a float, taken as the binary fraction
        it is). ``sensitivity`` ``S`` (the continuous families need it) makes the release cost what noise of
        scale ``b`` on a query of sensitivity ``S`` is charged.
        """
        fam = noise_family(family)
        lattice = fam.on_lattice(exact_value(value), check_scale(scale), sensitivity)
        meas = self.lattice_measurement(fam, lattice.scale)
        self._check_map(fam, meas, lattice)
        return lattice.value_of(_apply(meas, lattice.index))

    def release_vector(self, family: NoiseFamily, values: np.ndarray, scale: float) -> np.ndarray:
        """Integer counts of sensitivity 1 each, released at once by one OpenDP vector measurement.

        For a partition release: each coordinate is a count of sensitivity 1 on its own, so the vector's
        l1 privacy map per record is the per-coordinate one (counts at scale ``b`` cost ``1/b`` per cell).
        Integer families: the counts themselves (integers out); continuous families: each count's index on
        the family's fine lattice, as :meth:`release` does (floats out).
        """
        fam = noise_family(family)
        counts = np.asarray(values)
        if counts.dtype.kind not in "iu":
            raise ValueError("a vector release takes integer counts")
        if counts.size == 0:
            return np.zeros(counts.shape, dtype=np.int64 if fam.lattice else float)
        b = check_scale(scale)
        first = fam.on_lattice(Fraction(0), b, 1.0)  # every count has the same lattice, scale and steps
        self._check_map(fam, self.lattice_measurement(fam, first.scale), first)
        meas = self.lattice_measurement(fam, first.scale, int(counts.size))
        flat = counts.reshape(-1).astype(np.int64)
        if first.exponent == 0 and np.abs(flat).max() < 1 << (_LOW_BITS - 1):
            # integer noise on counts well inside i64 (a partition's 2¹⁸ at a time): applied to them as they are
            out = np.asarray(meas(flat.tolist()), dtype=np.int64)
        else:
            g = first.exponent
            indices = [int(v) << -g if g <= 0 else round(Fraction(int(v), 1 << g)) for v in flat]
            out_list = _apply_many(meas, indices)
            if fam.lattice:
                out = np.asarray(out_list, dtype=np.int64)
            else:
                return np.array([first.value_of(n) for n in out_list], dtype=float).reshape(counts.shape)
        return out.reshape(counts.shape)

    def _check_map(self, fam: NoiseMechanism, meas: Any, lattice: Lattice) -> None:
        """The measurement's own privacy map over the steps one record can move the index, as the family's
        α: at most the α charged (OpenDP rounds its map up; once per family, scale and steps)."""
        if lattice.alpha is None:
            return
        key = (fam.name, lattice.scale, lattice.steps)
        loss = self._maps.get(key)
        if loss is None:
            loss = self._maps[key] = fam.opendp_loss(meas, lattice.steps)
        if loss > lattice.alpha * (1 + _REL_MAP):
            raise ValueError(
                f"the measurement's privacy map gives {loss!r}, above the ε = {lattice.alpha!r} charged"
            )

    def noisy_max_measurement(self, scale: float, monotonic: bool) -> Any:
        """OpenDP's report-noisy-max over score vectors with ``LInfDistance`` (monotonic or not); cached."""
        key = ("noisy_max", float(scale), int(bool(monotonic)))
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
        """Index of the largest ``score + Exponential(scale)``: OpenDP's report-noisy-max (``make_noisy_max``)
        applied to the true scores (it compares them exactly, as rationals).

        Over an ``LInfDistance`` of 1 its privacy map gives ``1/scale`` for monotonic scores and
        ``2/scale`` otherwise; the caller picks ``scale`` from its α accordingly.
        """
        s = np.asarray(scores, dtype=float)
        if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)):
            raise ValueError("scores must be a non-empty vector of finite numbers")
        return int(self.noisy_max_measurement(scale, monotonic)(s.tolist()))

    def select(self, scores: np.ndarray, scale: float) -> int:
        """Index ``r`` with probability ``∝ exp(scores[r] / scale)``: the exponential mechanism.

        OpenDP's report-noisy-max with Gumbel noise (``make_noisy_max`` under the zero-concentrated
        measure) applied to the true scores, whose Gumbel-max draw has exactly this distribution. Only the
        draw is OpenDP's: the privacy charge is the caller's (docs/dirichlet.md), not the measurement's map.
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


def _split(m: int) -> tuple[int, int]:
    """A lattice index as ``(h, m − h)``, ``h`` its nearest multiple of 2⁴⁰: the measurement sees the low
    part (well inside i64), the high part is added back in exact integer arithmetic."""
    high = ((m + (1 << (_LOW_BITS - 1))) >> _LOW_BITS) << _LOW_BITS
    return high, m - high


def _apply(meas: Any, index: int) -> int:
    """One integer measurement applied to one lattice index of any size."""
    high, low = _split(index)
    return high + int(meas(low))


def _apply_many(meas: Any, indices: list[int]) -> list[int]:
    """One vector measurement of ``len(indices)`` values applied to lattice indices of any size."""
    parts = [_split(m) for m in indices]
    return [high + int(v) for (high, _), v in zip(parts, meas([low for _, low in parts]))]
