"""One measurement of a batch plan as a release plan (:class:`~dpdesk.engine.mechanisms.base.ReleasePlan`).

The store releases a batch plan one measurement at a time on the one release path: each is priced from
public inputs (its query and α), recorded with its place in the batch, drawn from the vetted sampler
and committed before anything of it is shown. The requests of the batch are then answered from history
(post-processing, free).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dpdesk.engine.answering.fresh import exact_answer
from dpdesk.engine.errors import BudgetError
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.planning.plan import Measurement
from dpdesk.engine.planning.privacy_map import MEASUREMENTS, Measuring

__all__ = ["MeasurementPlan"]


@dataclass(frozen=True, eq=False)
class MeasurementPlan:
    """Release ``measurement`` (the ``index``-th of ``count`` in a batch plan of strategy ``strategy``)."""

    measurement: Measurement
    basis: Basis = field(default_factory=Basis)
    strategy: str = ""
    index: int = 0
    count: int = 1
    requests: tuple[str, ...] = field(default=())  # the batch's requests this plan is for
    text: str | None = None  # the query in words (the schema's labels), for the ledger and the report
    look_ahead: float | None = None  # the share, when this measurement is the plan's look-ahead for the queue
    plan_entry: int | None = (
        None  # the ledger entry that recorded the batch plan before its first measurement
    )
    request_id: None = None
    releasable: bool = True
    needs_data: bool = True

    @property
    def mechanism(self) -> Measuring:
        return MEASUREMENTS[self.measurement.family]

    @property
    def reason(self) -> str:
        m = self.measurement
        return f"batch measurement {self.index + 1} of {self.count} ({self.strategy}) at ε = {m.alpha:.4g}"

    @property
    def charge(self) -> Charge:
        return self.mechanism.charge_for(self.measurement.query, self.measurement.alpha)

    def record(self) -> dict[str, Any]:
        m = self.measurement
        return {
            "query": m.query.to_json(),
            "query_text": self.text or m.query.text,
            "sensitivity": m.query.sensitivity,
            "alpha": m.alpha,
            "family": m.family,
            "batch": {
                "strategy": self.strategy,
                "index": self.index,
                "count": self.count,
                "requests": list(self.requests),
                **({} if self.plan_entry is None else {"plan": self.plan_entry}),
                # an audit sees which rows served the queue's workload, and at what share of the room
                **({} if self.look_ahead is None else {"look_ahead": {"share": self.look_ahead}}),
            },
        }

    def draw(self, cube: Any, sampler: Any, *, allow_insecure: bool = False) -> dict[str, Any]:
        """The noisy count (never shown before it is recorded) and the sampler's name."""
        if not getattr(sampler, "secure", False) and not allow_insecure:
            raise BudgetError(
                f"sampler {getattr(sampler, 'name', sampler)!r} is not secure; releases need the vetted sampler"
            )
        m = self.measurement
        noise = self.mechanism.noise
        q = m.query
        answer = sampler.release(
            noise, exact_answer(q, cube), noise.scale(q.sensitivity, m.alpha), q.sensitivity
        )
        return {"answer": answer, "values": [answer], "sampler": sampler.name}
