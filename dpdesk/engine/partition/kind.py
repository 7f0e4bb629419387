"""The partition-release kind as the registry lists it (docs/releases.md): every cell, marginals or an
interval tree released at once with discrete-Laplace counts, each cell charged ``groups/b``. It is not
queued; ``dpdesk release plan|publish`` and the release dialog ask for it with its structure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.kinds.base import Asked, Recorded, ReleaseKind
from dpdesk.engine.partition.privacy_map import PARTITION

if TYPE_CHECKING:  # the solver and guarantees are imported when a release is first planned
    from dpdesk.engine.kinds.snapshot import LedgerSnapshot
    from dpdesk.engine.partition.release_plan import PartitionReleasePlan

__all__ = ["PARTITION_KIND", "PartitionKind"]


class PartitionKind(ReleaseKind["PartitionReleasePlan"]):
    name = "partition"
    label = "partition release"
    mechanisms = (PARTITION,)
    takes = frozenset({"structure", "alpha", "accuracy", "delta"})

    def plan(self, asked: Asked, snapshot: LedgerSnapshot, **options: Any) -> PartitionReleasePlan:
        """Options: ``structure`` (a :class:`~dpdesk.engine.partition.plan.PartitionPlan`, required) priced
        at ``alpha`` per cell or at the ``accuracy`` its first query class meets at ``delta``."""
        from dpdesk.engine.partition.guarantee import preview as preview_plan
        from dpdesk.engine.partition.release_plan import PartitionReleasePlan

        structure = options.get("structure")
        if structure is None:
            raise DpdeskError("a partition release needs its structure (cells, marginals or a tree)")
        pv = preview_plan(
            structure,
            alpha=options.get("alpha"),
            accuracy=options.get("accuracy"),
            delta=options.get("delta", 0.05),
            total_budget=snapshot.total_budget,
            cell_costs=snapshot.cell_costs,
            accounting=snapshot.settings.accounting,
            rule=snapshot.rule,
        )
        return PartitionReleasePlan(pv, snapshot.basis, asked.id)

    def preview(self, plan: PartitionReleasePlan) -> list[str]:
        """Per-cell charge, system cost now and after, per-query guarantees, the simultaneous bound."""
        pv = plan.preview
        b, schema = pv.budget, pv.plan.schema
        lines = [
            f"plan: {pv.plan.description}",
            f"cost: every cell pays ε = {pv.alpha:.6g} ({pv.plan.coverage} count(s) per record at ε = "
            f"{pv.row_alpha:.6g} each; discrete Laplace noise of scale {pv.scale:.6g})"
            + (f", chosen for ±{pv.target:g}" if pv.target else ""),
            (
                f"system cost: {b.system_cost:.6g} now → {b.system_cost_after:.6g} after (total {b.total:g}, "
                f"remaining after {b.remaining_after:.6g})"
                if b.accounting is None
                else f"system cost: {b.words()}"
            )
            + ("" if pv.fits else " — DOES NOT FIT the total budget"),
        ]
        lines += [g.text(schema) for g in pv.guarantees]
        lines.append(pv.simultaneous.text())
        return lines

    def question(self, plan: PartitionReleasePlan) -> str:
        pv = plan.preview
        return f"publish {pv.plan.n_rows} noisy counts, every cell paying ε = {pv.alpha:.6g}?"

    def outcome(self, release: Recorded, plan: PartitionReleasePlan, path: str = "PROJECT") -> list[str]:
        pv, seq = plan.preview, release.entry.seq
        return [
            f"released as ledger entry {seq}: {pv.plan.n_rows} noisy counts; system cost now "
            + (
                f"{pv.budget.system_cost_after:.6g} of {pv.budget.total:g}"
                if pv.budget.accounting is None
                else f"ε = {pv.budget.shown(pv.budget.system_cost_after):.6g} of {pv.budget.accounting.epsilon:g}"
            ),
            f"export it: dpdesk release export {path} --release {seq} --out table.csv",
        ]

    def plan_json(self, plan: PartitionReleasePlan, **options: Any) -> dict[str, Any]:
        return plan.preview.to_json()

    def release_json(self, release: Recorded) -> dict[str, Any]:
        obj = release.to_json()
        obj.pop("values", None)  # the counts are in the ledger and the exported table, not on the terminal
        return obj


PARTITION_KIND = PartitionKind()
