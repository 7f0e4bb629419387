"""Exponential mechanisms from the Dirichlet notes that dpdesk does NOT ship: benchmark use only.

- :class:`LocalSensitivityExponential` — the notes' §2.2, scaled by the local sensitivity of the
  table itself. NOT PRIVATE: the scale is a function of the data (docs/dirichlet.md §4); exact
  enumeration finds neighbours whose probability ratio exceeds e^α.
- :class:`NotesSmoothExponential` — the notes' §2.3 calibration: ε₀ = ε and their β, with dpdesk's
  add/remove smooth bound. Its claimed (ε, δ) is unproven; Theorem 4.1 gives about (1.5ε, δ), and
  only when the true posterior is a candidate.

They reuse the shipped mechanism's code and change only the scale, so differences in the benchmark
are differences in calibration.
"""

from __future__ import annotations

import math

import numpy as np

from dpdesk.engine.dirichlet.candidates import CandidateSet
from dpdesk.engine.dirichlet.mechanisms import ExponentialGlobal
from dpdesk.engine.dirichlet.smooth import local_bound, smooth_bound

__all__ = ["LocalSensitivityExponential", "NotesSmoothExponential", "notes_beta"]


class LocalSensitivityExponential(ExponentialGlobal):
    """``P(r) ∝ exp(ε·u_c(r) / (2·L(c)))`` — NON-PRIVATE (benchmark only)."""

    name = "exponential-local (non-private)"

    def _scale(self, counts: np.ndarray) -> float:
        return 2.0 * local_bound(self.prior, counts) / self.alpha


def notes_beta(eps: float, delta: float, n_candidates: int) -> float:
    """The notes' ``β = ln(1 - ε / (2 ln(δ / (2N))))`` (their N = n + 1)."""
    return math.log(1 - eps / (2 * math.log(delta / (2 * n_candidates))))


class NotesSmoothExponential(ExponentialGlobal):
    """``P(r) ∝ exp(ε·u_c(r) / (2·S_β(c)))`` with the notes' β — calibration as the notes state it."""

    name = "exponential-smooth (notes' calibration)"

    def __init__(self, candidates: CandidateSet, eps: float, delta: float) -> None:
        super().__init__(candidates, eps)
        self.delta = delta
        self.beta = notes_beta(eps, delta, candidates.count)

    def _scale(self, counts: np.ndarray) -> float:
        return 2.0 * smooth_bound(self.prior, counts, self.beta) / self.alpha
