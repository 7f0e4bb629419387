"""The count kind: a linear counting query with an accuracy requirement, answered free from history or
fresh with Laplace-family noise (paper Fig. 4). Its home is this package: the request (``request.py``),
the pipeline infer → price → decide (``workflow.py``) whose :class:`~.assessment.Assessment` is the
plan, the draw (``fresh.py``), the words (``words.py``) and, here, what the registry lists.

Its entries are ``fresh`` (a noise family's mechanism: α|Q_j|/S per cell) and ``inferred`` (free), and
each answers a queued request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.kinds.base import Asked, ClaimOffer, ClaimVerdict, Read, Recorded, ReleaseKind
from dpdesk.engine.mechanisms.postprocessing import INFERENCE
from dpdesk.engine.mechanisms.registry import NOISE_FAMILIES
from dpdesk.engine.schema import Schema
from dpdesk.engine.vocabulary import accuracy_text

if TYPE_CHECKING:  # the pipeline is imported when a count is first planned (the registry stays light)
    from dpdesk.engine.answering.assessment import Assessment
    from dpdesk.engine.answering.counteroffer import CounterOffer
    from dpdesk.engine.kinds.snapshot import LedgerSnapshot

__all__ = ["COUNT", "CountKind"]

# --json lists the per-cell costs B of a cube up to this many cells; past it (a 10⁶-cell cube's B is 20 MB
# of text, most of a cold call's time) only when asked for
CELL_COSTS_SHOWN = 65_536


class CountKind(ReleaseKind["Assessment"]):
    name = "count"
    label = "count"
    example = 'count(age="0-30")'
    queueable = True
    answers_requests = True
    mechanisms = (*NOISE_FAMILIES, INFERENCE)
    takes = frozenset({"seed", "interval", "policy", "prior", "progress", "cancelled"})
    preview_decides = True  # "decision: spend" — a watched claim's decline is the decision instead

    def claims(self, text: object) -> bool:
        return False  # the fallback: whatever no other kind's head claims (text or coefficients)

    def read(
        self, schema: Schema, text: object, eps: float | None, delta: float | None, alpha: float | None
    ) -> Read:
        if alpha is not None:
            raise DpdeskError(
                "a count request states its accuracy and confidence (eps, delta), not a privacy loss "
                "(alpha): the engine decides ε"
            )
        if eps is None or delta is None:
            raise DpdeskError(
                f"a count request needs {'eps' if eps is None else 'delta'} "
                "(its accuracy ±eps, with probability at least 1 − delta: --accuracy and --confidence)"
            )
        from dpdesk.engine.budget.accounting import check_requirement
        from dpdesk.engine.queries.text import query_from_input

        check_requirement(eps, delta)
        q = query_from_input(text, schema.n_cells, schema.shape, schema)
        return Read("count", q.text, q, eps, delta, None)

    def plan(self, asked: Asked, snapshot: LedgerSnapshot, **options: Any) -> Assessment:
        """The engine's assessment against the snapshot's history. Options: ``method``, ``seed``,
        ``interval`` and ``progress``/``cancelled``; ``policy``/``prior`` were folded into the snapshot's
        settings by the caller."""
        from dpdesk.engine.answering.request import Request
        from dpdesk.engine.answering.workflow import assess

        if asked.query is None or asked.eps is None or asked.delta is None:
            raise DpdeskError(
                f"request {asked.id!r} is not a count request with an accuracy and a confidence"
            )
        if snapshot.history is None:
            raise DpdeskError("a count is assessed against the released history: the snapshot holds none")
        request = Request(asked.id or "1", asked.query, asked.eps, asked.delta, asked.requester)
        return assess(
            snapshot.history,
            request,
            snapshot.settings,
            method=options.get("method") or "fft",
            seed=options.get("seed"),
            interval=options.get("interval"),
            cell_costs=snapshot.cell_costs,
            head=None if snapshot.head[1] is None else (snapshot.head[0], snapshot.head[1]),
            schema=snapshot.schema,
            rule=snapshot.rule,
            releases=snapshot.releases,
            progress=options.get("progress"),
            cancelled=options.get("cancelled"),
        )

    # -- wording -------------------------------------------------------------------------------
    def heading(self, asked: Asked, describe: str) -> str:
        return f"request {asked.id}: {describe}  ({accuracy_text(asked.eps or 0, asked.delta or 0)})"

    def preview(self, plan: Assessment) -> list[str]:
        b, shown = plan.budget, plan.settings.shown
        after = b.system_cost_after if plan.decision == "spend" else b.system_cost
        acc = plan.settings.accounting
        of = (
            f"{b.total:g}"
            if acc is None
            else f"ε = {acc.epsilon:g} at δ = {acc.delta:g} ({acc.conversion} zCDP conversion)"
        )
        return [
            f"decision: {plan.decision} — {plan.reason}",
            f"budget: system cost {shown(b.system_cost):.6g} → {shown(after or 0.0):.6g} of {of}",
        ]

    def report(self, plan: Assessment, heading: str | None = None, declined: Sequence[str] = ()) -> list[str]:
        from dpdesk.engine.answering.words import assessment_lines

        return assessment_lines(plan, declined)  # its own first line names the request and its ε, δ

    def claim_offer(self, plan: Assessment, statuses: Sequence[ClaimVerdict]) -> CounterOffer | None:
        """A fresh answer at the largest α that passes every declining claim (and fits the cells' budget
        and the spend policy's cap), and history's free answer (:func:`~.counteroffer.claim_offer`)."""
        from dpdesk.engine.answering.counteroffer import claim_offer

        declined = [s for s in statuses if s.verdict == "declined"]
        if not declined:
            return None
        best = [s.largest_alpha for s in declined]
        passing = [b for b in best if b is not None]  # every declining claim passes some α, or no offer
        return claim_offer(plan, min(passing) if len(passing) == len(best) else None, plan.budget.total)

    def offer_lines(self, plan: Assessment, offer: ClaimOffer | None, path: str) -> list[str]:
        from dpdesk.engine.answering.counteroffer import CounterOffer
        from dpdesk.engine.answering.words import offer_lines

        return offer_lines(offer, plan, path) if isinstance(offer, CounterOffer) else []

    def spend_words(self, plan: Assessment) -> tuple[str, str, list[str]]:
        raised = (
            f"The request alone needs ε = {plan.needed_alpha:.6g}; the spend policy ({plan.policy}) buys more "
            "so later requests can be answered from history."
            if plan.needed_alpha is not None and plan.spend_alpha > plan.needed_alpha
            else ""
        )
        return f"a fresh noisy answer to {plan.request.id}", self._cost(plan), [raised]

    @staticmethod
    def _cost(plan: Assessment) -> str:
        from dpdesk.engine.answering.workflow import alpha_words

        return alpha_words(plan.noise, plan.spend_alpha, 6)

    def question(self, plan: Assessment) -> str:
        if plan.decision == "infer":
            return "release the inferred answer (free)"
        return f"spend {self._cost(plan)}"

    def outcome(self, release: Recorded, plan: Assessment, path: str = "PROJECT") -> list[str]:
        r: Any = release
        cost = f"{self._cost(plan)}, {r.family} noise" if r.kind == "fresh" else "free"
        if r.fusion_weight is not None:
            cost += f", fused with history (weight {r.fusion_weight:.3g})"
        # as shown everywhere (a count rounded to an integer); --json carries the exact recorded values
        e = r.entry
        req = plan.request
        return [
            f"answer {req.id}: {e.shown()}  {e.shown_interval()}  "
            f"({accuracy_text(req.eps, req.delta)}; {r.kind}, {cost}; ledger entry {e.seq})"
        ]

    def plan_json(self, plan: Assessment, **options: Any) -> dict[str, Any]:
        """DESIGN §6's assessment object; a cube over :data:`CELL_COSTS_SHOWN` cells lists its per-cell
        costs only with ``cell_costs=True``."""
        return plan.to_json(
            cell_costs=bool(options.get("cell_costs")) or len(plan.cell_costs) <= CELL_COSTS_SHOWN
        )


COUNT = CountKind()
