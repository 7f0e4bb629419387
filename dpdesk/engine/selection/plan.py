"""A private max/argmax as a release plan: priced and decided from public inputs, drawn only on release.

:func:`plan_selection` prices a :class:`~dpdesk.engine.selection.query.SelectionQuery` at a given α
or at the α meeting an accuracy target (the report-noisy-max shortfall at δ), previews the per-cell
budget after it (α on the box's cells), and returns a :class:`SelectionPlan` — the
:class:`~dpdesk.engine.mechanisms.base.ReleasePlan` the store records exactly (``record()`` before any
data is read, ``draw()`` the one step that reads it, through the vetted sampler).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.budget.accounting import BudgetPreview
from dpdesk.engine.budget.accounting import preview as budget_preview
from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.budget.person import ROW_RULE, PersonRule
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.schema import Schema
from dpdesk.engine.selection.mechanism import REPORT_NOISY_MAX, ReportNoisyMax, SelectionMechanism, box_query
from dpdesk.engine.selection.query import SelectionQuery

__all__ = ["SelectionPlan", "plan_selection"]


@dataclass(frozen=True, eq=False)
class SelectionPlan:
    """A priced private max/argmax, decided from public inputs; ``draw`` is the one step reading the data."""

    rnm: ReportNoisyMax
    schema: Schema
    budget: BudgetPreview
    basis: Basis
    delta: float = 0.05
    request_id: str | None = None
    mechanism: SelectionMechanism = REPORT_NOISY_MAX
    needs_data: bool = True

    @property
    def releasable(self) -> bool:
        return self.budget.fits

    @property
    def reason(self) -> str:
        if not self.releasable:
            return (
                f"reject: ε = {self.rnm.alpha:.4g} on the box would take the system cost to "
                f"{self.budget.system_cost_after:.4g}, over the total {self.budget.total:g}"
            )
        return (
            f"report-noisy-max at ε = {self.rnm.alpha:.4g}: {self.rnm.accuracy_text(self.schema, self.delta)}"
        )

    def noisy_rows(self) -> tuple[()]:
        """A max/argmax adds no noisy linear answer to history: its whole charge on the box is what
        watched claims must weigh (known before the draw)."""
        return ()

    @property
    def charge(self) -> Charge:
        box = self._box()
        return Charge((ChargeTerm(self.rnm.alpha, box_query(self.schema.shape, box)),))

    def _box(self) -> list[list[int] | None]:
        return _box_indices(self.rnm.query, self.schema)

    def record(self) -> dict[str, Any]:
        q = self.rnm.query
        return {
            "query": q.text,
            "kind": q.kind,
            "attribute": q.attribute,
            "axis": self.schema.axis(q.attribute),
            "box": self._box(),
            "alpha": self.rnm.alpha,
            "scale": self.rnm.scale,
            "delta": self.delta,
            "shortfall": self.rnm.shortfall(self.schema, self.delta),
            "accuracy": self.rnm.accuracy_text(self.schema, self.delta),
        }

    def to_json(self) -> dict[str, Any]:
        """The plan as plain JSON: what :meth:`record` holds, the budget before and after, whether it fits."""
        b = self.budget
        return {
            **self.record(),
            "mechanism": self.mechanism.name,
            "request_id": self.request_id,
            "releasable": self.releasable,
            "reason": self.reason,
            "budget": {
                "total": b.total,
                "system_cost": b.system_cost,
                "system_cost_after": b.system_cost_after,
                "remaining_after": b.remaining_after,
            },
        }

    def draw(self, cube: Any, sampler: Any, *, allow_insecure: bool = False) -> dict[str, Any]:
        r = self.rnm.release(cube.counts, self.schema, sampler, allow_insecure=allow_insecure)
        return {"index": r.index, "label": r.label, "values": [r.index], "sampler": r.sampler}


def _box_indices(query: SelectionQuery, schema: Schema) -> list[list[int] | None]:
    """The box by shape: per attribute the chosen label indices, or None for every label."""
    chosen = dict(query.conditions)
    return [
        None if a.name not in chosen else [a.labels.index(lab) for lab in chosen[a.name]]
        for a in schema.attributes
    ]


def plan_selection(
    query: SelectionQuery,
    schema: Schema,
    *,
    alpha: float | None = None,
    accuracy: float | None = None,
    delta: float = 0.05,
    cell_costs: np.ndarray | None = None,
    total_budget: float,
    basis: Basis | None = None,
    request_id: str | None = None,
    accounting: ZcdpAccounting | None = None,
    rule: PersonRule = ROW_RULE,
) -> SelectionPlan:
    """Price a private max/argmax at ``alpha`` or at the α whose shortfall at ``δ`` is ``accuracy`` (public inputs).

    In a zCDP project (``accounting``; costs and total in ρ) its pure α per cell costs ``α²/2`` per cell
    (the general conversion; the tighter ``α²/8`` of bounded-range mechanisms is not claimed)."""
    if (alpha is None) == (accuracy is None):
        raise BudgetError("give exactly one of alpha and accuracy")
    if alpha is not None:
        rnm = ReportNoisyMax(query, alpha)
    else:
        assert accuracy is not None  # exactly one of the two was given
        rnm = ReportNoisyMax.for_accuracy(query, schema, accuracy, delta)
    rnm.shortfall(schema, delta)  # checks δ
    costs = np.zeros(schema.n_cells) if cell_costs is None else np.asarray(cell_costs, dtype=float)
    if costs.size != schema.n_cells:
        raise DpdeskError(f"cell costs have {costs.size} entries, the cube has {schema.n_cells} cells")
    box = box_query(schema.shape, _box_indices(query, schema))
    budget = budget_preview(
        costs, float(total_budget), Charge((ChargeTerm(rnm.alpha, box),)), accounting, rule
    )
    return SelectionPlan(rnm, schema, budget, basis or Basis(), delta, request_id)
