"""A mean's two mechanisms: a fresh mean (a sum and a count of values, each with its own noise) and a
mean inferred from history (free). Their privacy maps are read off a recorded entry, never trusted from
the plan (docs/sums.md, Theorem 1 and §5).

A fresh mean releases ``sum(m | box)`` with Laplace noise of scale ``B/α_S`` and ``count(m | box)`` with
discrete Laplace noise of scale ``1/α_C``: two ordinary linear releases over the cube's measures. Its
per-cell charge is theirs added (:func:`mean_charge`, the one place a mean is priced per cell: a
person-level or zCDP project changes the charge here, on the two queries' footprints), and both rows
join the history, so a later sum or count of the box is answered from them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.mechanisms.base import Contribution, NoisyRow
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.mechanisms.laplace import LAPLACE
from dpdesk.engine.mechanisms.postprocessing import PostProcessing
from dpdesk.engine.mechanisms.registry import noise_family
from dpdesk.engine.queries.query import Query, product_form, query_from_json

__all__ = ["COUNT_FAMILIES", "FRESH_MEAN", "MEAN_INFERENCE", "FreshMeanMechanism", "mean_charge"]

COUNT_FAMILIES = ("discrete_laplace", "laplace")  # how a fresh mean's count of values may be released


def mean_charge(total: Query, size: Query, alpha_sum: float, alpha_count: float, count_family: str) -> Charge:
    """The per-cell charge of a fresh mean: its sum's ``α_S·ℓ_j(Q_S)/S_S`` plus its count's
    ``α_C·ℓ_j(Q_C)/S_C`` (docs/sums.md, Theorem 1(c): count and sum releases of a cell add)."""
    if count_family not in COUNT_FAMILIES:
        raise DpdeskError(f"a fresh mean's count is released with Laplace noise, not {count_family!r}")
    s = LAPLACE.charge_for(total, alpha_sum)
    c = noise_family(count_family).charge_for(size, alpha_count)
    return Charge((*s.terms, *c.terms))


def _positive(payload: Mapping[str, Any], key: str) -> float:
    v = float(payload[key])
    if not (math.isfinite(v) and v > 0):
        raise DpdeskError(f"{key} ({payload[key]!r}) must be a positive finite number")
    return v


@dataclass(frozen=True)
class FreshMeanMechanism:
    """A fresh mean's privacy map: the recorded sum and count queries, their budgets and noisy answers."""

    name: str = "mean-laplace"
    kind: str = "mean"
    label: str = "fresh mean (a Laplace sum and a discrete Laplace count of values)"

    def contribution(self, payload: Mapping[str, Any], shape: tuple[int, ...]) -> Contribution:
        n = math.prod(shape)
        total = product_form(query_from_json(payload["sum_query"], n, shape))
        size = product_form(query_from_json(payload["count_query"], n, shape))
        if total.layout is None or size.layout is None:
            raise DpdeskError("a fresh mean's sum and count read the cube's measures")
        a_s, a_c = _positive(payload, "alpha_sum"), _positive(payload, "alpha_count")
        family = str(payload["count_family"])
        charge = mean_charge(total, size, a_s, a_c, family)
        rows = (
            NoisyRow(total, a_s, float(payload["sum_answer"]), LAPLACE.name),
            NoisyRow(size, a_c, float(payload["count_answer"]), family),
        )
        return Contribution(charge, rows, tuple(float(v) for v in payload["values"]))


FRESH_MEAN = FreshMeanMechanism()
MEAN_INFERENCE = PostProcessing("mean-inference", "mean-inferred", "mean inferred from history")
