"""The zero-cost kinds of the estimates' home as the registry lists them: a kernel-PCA shrinkage
``estimate(<count query>)`` (biased, meeting no (ε, δ)) and a maximum-entropy synthetic table. Both are
post-processing of released answers: priced at nothing, recorded like every release, read no data.
Their plans read the snapshot's History once (``history_inputs``) and fit from that copy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dpdesk.engine.errors import DpdeskError, QueryError
from dpdesk.engine.estimates.privacy_map import SHRINKAGE_ESTIMATE, SYNTHETIC_TABLE
from dpdesk.engine.kinds.base import Asked, Recorded, ReleaseKind

if TYPE_CHECKING:  # the fits (scipy.optimize) are imported when an estimate is first planned
    from dpdesk.engine.estimates.plans import EstimatePlan, HistoryInputs
    from dpdesk.engine.estimates.synthetic import SyntheticPlan
    from dpdesk.engine.kinds.snapshot import LedgerSnapshot
    from dpdesk.engine.queries.query import Query

__all__ = ["ESTIMATE", "SYNTHETIC", "inner_query", "snapshot_inputs"]

_INNER = re.compile(r"\s*estimate\s*\((.*)\)\s*$", re.S)


def inner_query(text: str) -> str:
    """The count query inside ``estimate(...)``."""
    m = _INNER.match(text)
    if m is None or not m.group(1).strip():
        raise QueryError(
            f'estimate(...) takes one count query, e.g. estimate(count(age="20-30")): got {text.strip()!r}'
        )
    return m.group(1)


def snapshot_inputs(
    snapshot: LedgerSnapshot, table_size: float | None = None, query: Query | None = None
) -> tuple[HistoryInputs, Any]:
    """The plans' inputs copied out of the snapshot's History (and history's own estimate of ``query``)."""
    from dpdesk.engine.estimates.plans import history_inputs

    if snapshot.history is None:
        raise DpdeskError("a zero-cost estimate reads the released history: the snapshot holds none")
    prior = snapshot.settings.prior
    inputs = history_inputs(
        snapshot.history,
        snapshot.schema.names,
        snapshot.basis,
        table_size=table_size,
        declared_size=None if prior is None else float(prior.table_size),
        left_out=snapshot.left_out,
    )
    return inputs, None if query is None else snapshot.history.estimate(query)


class EstimateKind(ReleaseKind["EstimatePlan"]):
    name = "estimate"
    label = "zero-cost estimate"
    example = 'estimate(count(age="20-30"))'
    on_the_spot = True
    head = re.compile(r"\s*estimate\s*\(")
    mechanisms = (SHRINKAGE_ESTIMATE,)
    takes = frozenset({"tau", "table_size", "progress", "cancelled"})
    unconfirmed = "not recorded (not confirmed)"
    previewed = "nothing was recorded (preview only)"
    recomputes = True

    def plan(self, asked: Asked, snapshot: LedgerSnapshot, **options: Any) -> EstimatePlan:
        """Options: ``tau`` (default: 5-fold cross-validation), ``table_size``, ``progress``/``cancelled``."""
        from dpdesk.engine.estimates.plans import plan_estimate
        from dpdesk.engine.queries.text import describe_query, query_from_input

        schema = snapshot.schema
        query = query_from_input(inner_query(asked.query_text or ""), schema.n_cells, schema.shape, schema)
        inputs, unbiased = snapshot_inputs(snapshot, options.get("table_size"), query)
        return plan_estimate(
            inputs,
            query,
            unbiased,
            text=describe_query(query, schema),
            tau=options.get("tau"),
            progress=options.get("progress"),
            cancelled=options.get("cancelled"),
        )

    def preview(self, plan: EstimatePlan) -> list[str]:
        return plan.lines()

    def question(self, plan: EstimatePlan) -> str:
        return "record this biased estimate (free) in the ledger?"

    def outcome(self, release: Recorded, plan: EstimatePlan, path: str = "PROJECT") -> list[str]:
        tau = "∞" if not math.isfinite(plan.tau) else f"{plan.tau:.4g}"
        return [
            f"estimate of {plan.text}: {plan.value:.6g} (biased, τ = {tau}; free; ledger entry {release.entry.seq})"
        ]

    def recompute(self, payload: Mapping[str, Any], snapshot: LedgerSnapshot) -> str | None:
        """The released answers before it give the recorded value at its recorded τ and table size."""
        from dpdesk.engine.estimates.plans import recompute_estimate

        if snapshot.history is None:
            return None
        value = recompute_estimate(payload, snapshot.history, snapshot.schema.names)
        recorded = float(payload["estimate"])
        if value is None or math.isclose(value, recorded, rel_tol=1e-9, abs_tol=1e-12):
            return None
        return (
            f"recorded estimate {recorded:.6g} but the released answers before it give {value:.6g} "
            f"at τ = {payload['tau']}"
        )


class SyntheticKind(ReleaseKind["SyntheticPlan"]):
    name = "synthetic"
    label = "synthetic table"
    mechanisms = (SYNTHETIC_TABLE,)
    takes = frozenset({"rows", "seed", "tau", "table_size", "progress", "cancelled"})
    unconfirmed = "not exported (not confirmed)"

    def plan(self, asked: Asked, snapshot: LedgerSnapshot, **options: Any) -> SyntheticPlan:
        """Options: ``rows`` (required), ``seed``, ``tau``, ``table_size``, ``progress``/``cancelled``."""
        from dpdesk.engine.estimates.synthetic import plan_synthetic

        if options.get("rows") is None:
            raise DpdeskError("a synthetic table needs its number of rows")
        inputs, _ = snapshot_inputs(snapshot, options.get("table_size"))
        return plan_synthetic(
            inputs,
            rows=options["rows"],
            seed=options.get("seed") or 0,
            tau=options.get("tau"),
            progress=options.get("progress"),
            cancelled=options.get("cancelled"),
        )

    def preview(self, plan: SyntheticPlan) -> list[str]:
        return plan.lines()

    def question(self, plan: SyntheticPlan) -> str:
        return "record the export and write the table?"

    def outcome(self, release: Recorded, plan: SyntheticPlan, path: str = "PROJECT") -> list[str]:
        return [f"ledger entry {release.entry.seq} (synthetic, free); rows digest {plan.digest}"]


ESTIMATE = EstimateKind()
SYNTHETIC = SyntheticKind()
