"""Measurements of a batch plan in the ledger: a fresh noisy count that answers no request by itself.

A batch plan (:mod:`dpdesk.engine.planning`) releases strategy rows — counts that no data user asked
for as such — and then answers the batch's requests from history. Each row is one ledger entry of kind
``measurement``, drawn with a noise family's mechanism exactly like a fresh answer: the charge is
``α|Q_j|/S`` per cell (paper Thm 5.4; in a zCDP project the Gaussian families' ``(α|Q_j|/S)²/2`` in ρ)
and the noisy answer joins history as one row. There is one
mechanism per noise family, named after it, so the entry records which noise was drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpdesk.engine.mechanisms.base import Contribution
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.mechanisms.gaussian import DISCRETE_GAUSSIAN, GAUSSIAN
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE, LAPLACE, NoiseMechanism
from dpdesk.engine.queries.query import Query

__all__ = ["MEASUREMENTS", "Measuring"]


@dataclass(frozen=True)
class Measuring:
    """A batch plan's measurement drawn with ``noise`` (recorded under ``name``, kind ``measurement``)."""

    noise: NoiseMechanism
    kind: str = "measurement"

    @property
    def name(self) -> str:
        return f"measurement-{self.noise.name}"

    @property
    def label(self) -> str:
        return f"batch measurement ({self.noise.label})"

    def charge_for(self, query: Query, alpha: float) -> Charge:
        return self.noise.charge_for(query, alpha)

    def contribution(self, payload: Mapping[str, Any], shape: tuple[int, ...]) -> Contribution:
        """Its privacy map: the noise family's own, on the recorded ``query``, ``alpha`` and ``answer``."""
        return self.noise.contribution(payload, shape)


# the Gaussian ones are priced in ρ (their charge's measure): only a zCDP project takes them
MEASUREMENTS: Mapping[str, Measuring] = {
    f.name: Measuring(f) for f in (DISCRETE_LAPLACE, LAPLACE, DISCRETE_GAUSSIAN, GAUSSIAN)
}
