"""The privacy maps of posterior-of-proportions releases (docs/dirichlet.md), as ledger mechanisms.

A posterior release reads the category counts of one box and costs every cell of the box the same
``(α, δ)`` — the box's count query ``Q`` has coefficients 0/1, so the charge is one term ``α·|Q|``.
Its recorded payload holds ``query`` (the box's count), ``axis`` (the attribute's axis in the cube),
``alpha`` and ``delta``, the released Dirichlet parameters as ``values``, and the noisy counts it
released on the way: ``noisy_size`` (the box total, discrete Laplace at ``size_alpha``) for an
exponential mechanism without a public size, or ``noisy_counts`` (each category's count, discrete
Laplace at ``alpha``) for the Laplace baseline. Those are ordinary noisy linear answers, so they join
the history as rows; the exponential mechanism's choice does not.

The mathematics (sensitivities, candidate sets, Theorem 4.1) lives in :mod:`dpdesk.engine.dirichlet`;
this module only re-derives charges and rows from what the ledger recorded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.mechanisms.base import Contribution, NoisyRow
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.queries.query import Query, Term, query_from_json

__all__ = ["POSTERIOR_MECHANISMS", "PosteriorMechanism", "category_query"]

_NOISE = "discrete_laplace"  # the registered family of the noisy size and noisy counts


def category_query(box: Query, axis: int, label: int) -> Query:
    """The box's count restricted to the cells whose coordinate on ``axis`` is ``label``."""
    if box.terms is not None and len(box.terms) == 1:  # product form stays product form
        term = box.terms[0]
        factors = list(term.factors)
        only = np.zeros(len(factors[axis]))
        only[label] = factors[axis][label]
        factors[axis] = only
        return Query(box.shape, terms=(Term(term.weight, tuple(factors)),))
    idx, val = box.sparse()
    keep = np.unravel_index(idx, box.shape)[axis] == label
    return query_from_json(
        {"indices": idx[keep].tolist(), "values": val[keep].tolist()}, box.n_cells, box.shape
    )


def _positive(payload: Mapping[str, Any], key: str) -> float:
    value = payload.get(key)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise DpdeskError(f"posterior entry: {key} ({value!r}) must be a positive number")
    return float(value)


@dataclass(frozen=True)
class PosteriorMechanism:
    """One way of releasing a Dirichlet posterior; ``name`` is what the ledger records."""

    name: str
    label: str
    kind: str = "posterior"

    def contribution(self, payload: Mapping[str, Any], shape: tuple[int, ...]) -> Contribution:
        """Charge ``alpha`` (and ``delta``) on the box's cells; noisy counts as history rows."""
        box = query_from_json(payload["query"], math.prod(shape), shape)
        alpha = _positive(payload, "alpha")
        delta = float(payload.get("delta", 0.0))
        rows: list[NoisyRow] = []
        if payload.get("noisy_size") is not None:
            rows.append(NoisyRow(box, _positive(payload, "size_alpha"), float(payload["noisy_size"]), _NOISE))
        if payload.get("noisy_counts") is not None:
            axis = int(payload["axis"])
            rows += [
                NoisyRow(category_query(box, axis, i), alpha, float(v), _NOISE)
                for i, v in enumerate(payload["noisy_counts"])
            ]
        charge = Charge((ChargeTerm(alpha / box.sensitivity, box),), delta)
        return Contribution(charge, tuple(rows), tuple(float(v) for v in payload["values"]))


POSTERIOR_MECHANISMS: tuple[PosteriorMechanism, ...] = (
    PosteriorMechanism("posterior-exponential-global", "exponential mechanism, global sensitivity"),
    PosteriorMechanism("posterior-exponential-smooth", "exponential mechanism, smooth sensitivity"),
    PosteriorMechanism("posterior-laplace", "Laplace noise on every count, conjugate update"),
)
