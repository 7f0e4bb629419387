"""The convergence test of the maximum-entropy fit to released marginals (:func:`~.marginal_fit.fit_marginals`).

One round's statistics from particle counts against the targets, in noise-scale units: the mean squared
misfit beyond Monte Carlo error ``B``, its standard error at zero misfit, and the z-weighted variant
(derivations in :mod:`~.marginal_fit`'s docstring).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["FitCheck", "check_fit"]


@dataclass(frozen=True)
class FitCheck:
    """One round's convergence statistics (:func:`fit_marginals`, its docstring), noise-scale units."""

    bias_ms: float  # B: the mean squared misfit beyond Monte Carlo error (noise scales²; can be < 0)
    bias_rms: float  # √max(B, 0)
    bias_se: float  # the standard error of B (noise scales²) at zero misfit
    z_excess: float  # Z: the mean squared misfit beyond Monte Carlo error, in units of it
    z_rms: float  # √(max(Z, 0)·v̄)/s̄: Z turned back into noise scales
    z_upper: float  # the same from Z + 2√(2/m): a one-sided 97.7 % upper bound
    cells: int

    @property
    def bias_upper(self) -> float:
        """``√max(B + 2·se_B, 0)``: a one-sided 97.7 % upper bound on the RMS misfit (noise scales)."""
        return math.sqrt(max(self.bias_ms + 2 * self.bias_se, 0.0))

    def passes(self, gtol: float) -> bool:
        return self.bias_upper <= gtol


def check_fit(
    hists: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
    scale2: Sequence[float],
    theta: Sequence[np.ndarray],
    bound: Sequence[float],
    n: float,
    particles: int,
) -> FitCheck:
    """The convergence statistics of :func:`fit_marginals` (its docstring), from unweighted particle counts."""
    b_num = b_var = z_num = v_sum = s_sum = 0.0
    count = z_count = 0
    kappa = n / particles
    for h, t, s2, th, bd in zip(hists, targets, scale2, theta, bound):
        # a cell held on the box with its misfit pointing outward meets the dual's optimality condition
        free = ~(((th >= bd) & (h < t)) | ((th <= -bd) & (h > t)))
        v = (t * np.maximum(n - t, 0.0) / particles)[
            free
        ]  # a particle count's binomial variance at the target
        excess = ((h - t) ** 2)[free] - v
        b_num += float(excess.sum()) / s2
        b_var += 2.0 * float(np.sum(v * v)) / (s2 * s2)
        seen = t[free] >= kappa  # z-scores where at least one particle is expected
        z_num += float(np.sum(excess[seen] / v[seen]))
        z_count += int(seen.sum())
        v_sum += float(v[seen].sum())
        s_sum += s2 * int(seen.sum())
        count += int(free.sum())
    m, mz = max(count, 1), max(z_count, 1)
    z = z_num / mz
    unit = v_sum / max(s_sum, 1e-300)  # mean v / mean s²: one unit of Z in noise scales²
    return FitCheck(
        bias_ms=b_num / m,
        bias_rms=math.sqrt(max(b_num / m, 0.0)),
        bias_se=math.sqrt(b_var) / m,
        z_excess=z,
        z_rms=math.sqrt(max(z, 0.0) * unit),
        z_upper=math.sqrt(max(z + 2 * math.sqrt(3 / mz), 0.0) * unit),
        cells=count,
    )
