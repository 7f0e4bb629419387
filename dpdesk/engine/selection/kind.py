"""The max/argmax kind as the registry lists it: ``max(A | box)`` / ``argmax(A | box)``, queued with an
accuracy ``(ε, δ)`` — at most ε records above the released value (max), its count within ε of the largest
(argmax), at 1 − δ — or a per-cell budget α; released by report-noisy-max, α on every cell of the box.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.kinds.base import Asked, Read, Recorded, ReleaseKind, cost_text
from dpdesk.engine.schema import Schema
from dpdesk.engine.selection.mechanism import REPORT_NOISY_MAX, box_query
from dpdesk.engine.selection.query import parse_selection

if TYPE_CHECKING:
    from dpdesk.engine.kinds.snapshot import LedgerSnapshot
    from dpdesk.engine.selection.plan import SelectionPlan

__all__ = ["SELECTION", "SelectionKind", "selection_price"]

SELECTION_DELTA = 0.05  # the δ of a max/argmax's public accuracy statement when the request gives α only


def selection_price(eps: float | None, delta: float | None, alpha: float | None) -> dict[str, Any]:
    """``plan_selection``'s price from what a max/argmax request states."""
    if alpha is not None:
        if eps is not None:
            raise DpdeskError("a max/argmax request gives a budget alpha or an accuracy eps, not both")
        return {"alpha": alpha, "delta": SELECTION_DELTA if delta is None else delta}
    if eps is None or delta is None:
        raise DpdeskError(
            "a max/argmax request needs a budget alpha, or an accuracy eps with its delta "
            "(max: at most eps records above the released value; argmax: its count within eps of "
            "the largest; with probability at least 1 − delta)"
        )
    return {"accuracy": eps, "delta": delta}


class SelectionKind(ReleaseKind["SelectionPlan"]):
    name = "selection"
    label = "max / argmax"
    example = 'max(age | sex="Female")'
    head = re.compile(r"\s*(max|argmax)\s*\(")
    queueable = True
    mechanisms = (REPORT_NOISY_MAX,)

    def read(
        self, schema: Schema, text: object, eps: float | None, delta: float | None, alpha: float | None
    ) -> Read:
        from dpdesk.engine.selection.plan import plan_selection

        q = parse_selection(str(text), schema)  # its head claimed it: text
        plan = plan_selection(
            q, schema, total_budget=1.0, **selection_price(eps, delta, alpha)
        )  # checks the price
        return Read("selection", q.text, box_query(schema.shape, plan._box()), eps, delta, alpha)

    def plan(self, asked: Asked, snapshot: LedgerSnapshot, **options: Any) -> SelectionPlan:
        """Priced at the α the request names, or at the α meeting its accuracy ε at δ."""
        from dpdesk.engine.selection.plan import plan_selection

        return plan_selection(
            parse_selection(asked.query_text or "", snapshot.schema),
            snapshot.schema,
            cell_costs=snapshot.cell_costs,
            total_budget=snapshot.total_budget,
            accounting=snapshot.settings.accounting,
            basis=snapshot.basis,
            rule=snapshot.rule,
            request_id=asked.id,
            **selection_price(asked.eps, asked.delta, asked.alpha),
        )

    def preview(self, plan: SelectionPlan) -> list[str]:
        """Mechanism, per-cell α, budget before and after, public accuracy."""
        b, rnm = plan.budget, plan.rnm
        lines = [
            f"{rnm.query.text}: report-noisy-max, every cell of the box pays ε = {rnm.alpha:.6g}; system cost "
            f"{b.words()}",
            f"public accuracy: {rnm.accuracy_text(plan.schema, plan.delta)}",
        ]
        return lines + ([] if plan.releasable else [f"NOT releasable: {plan.reason}"])

    def question(self, plan: SelectionPlan) -> str:
        return f"release it, each cell of its box paying {cost_text(plan)}?"

    def outcome(self, release: Recorded, plan: SelectionPlan, path: str = "PROJECT") -> list[str]:
        p = release.entry.payload
        return [
            f"released: {p['label']} (the {p['kind']} of {p['attribute']}; {p['accuracy']}); "
            f"ledger entry {release.entry.seq}"
        ]

    def release_json(self, release: Recorded) -> dict[str, Any]:
        p = release.entry.payload
        return {**release.to_json(), "label": p["label"], "index": p["index"]}


SELECTION = SelectionKind()
