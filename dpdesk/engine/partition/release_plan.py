"""A previewed partition release as a release plan: recorded exactly as the curator confirmed it.

:class:`PartitionReleasePlan` wraps a :class:`~dpdesk.engine.partition.guarantee.PlanPreview` and the
:class:`~dpdesk.engine.mechanisms.base.Basis` it was computed from. ``record()`` gives the ledger payload
members fixed before any data is read — the plan as asked, its structure by shape (per group and
attribute, the first label of every block), the noise scale, the per-cell α and what the preview
promised; ``draw()`` is the one step that reads the cube: the released counts, through the vetted
sampler. The registered :data:`~dpdesk.engine.partition.privacy_map.PARTITION` mechanism reads the
charge and the history rows back from that payload.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.partition.guarantee import PlanPreview
from dpdesk.engine.partition.privacy_map import PARTITION, PartitionMechanism
from dpdesk.engine.partition.release import draw_release

__all__ = ["PartitionReleasePlan"]


@dataclass(frozen=True, eq=False)
class PartitionReleasePlan:
    """The release plan of one previewed partition release."""

    preview: PlanPreview
    basis: Basis = field(default_factory=Basis)
    request_id: str | None = None
    mechanism: PartitionMechanism = PARTITION
    needs_data: bool = True

    @property
    def releasable(self) -> bool:
        return self.preview.fits

    @property
    def reason(self) -> str:
        pv = self.preview
        if not pv.fits:
            return (
                f"reject: every cell would pay ε = {pv.alpha:.4g}, taking the system cost to "
                f"{pv.budget.system_cost_after:.4g}, over the total {pv.budget.total:g}"
            )
        return f"publish {pv.plan.description} at ε = {pv.alpha:.4g} per cell"

    @property
    def charge(self) -> Charge:
        return self.mechanism.charge_for(self.preview.plan.coverage, self.preview.scale)

    def record(self) -> dict[str, Any]:
        pv = self.preview
        schema = pv.plan.schema
        return {
            "plan": pv.plan.to_json(),
            "description": pv.plan.description,
            "groups": [
                {"name": g.name, "starts": [b.starts.tolist() for b in g.blocks]} for g in pv.plan.groups
            ],
            "scale": pv.scale,
            "alpha": pv.alpha,
            "row_alpha": pv.row_alpha,
            "rows": pv.plan.n_rows,
            "family": self.mechanism.family,
            "delta": pv.delta,
            "accuracy_target": pv.target,
            "guarantees": [g.to_json(schema) for g in pv.guarantees],
            "simultaneous": pv.simultaneous.to_json(),
        }

    def draw(
        self,
        cube: Any,
        sampler: Any,
        *,
        allow_insecure: bool = False,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> dict[str, Any]:
        """The released counts (one list per group, C order) and the sampler's name — never shown before recorded."""
        rel = draw_release(
            self.preview.plan,
            self.preview.alpha,
            cube.counts,
            sampler,
            allow_insecure=allow_insecure,
            progress=progress,
            cancelled=cancelled,
        )
        return {"values": [v.reshape(-1).tolist() for v in rel.values], "sampler": rel.sampler}
