"""Watching claims in a project: add and remove them, read ``Pr(C)``, check a plan against them.

:class:`Claims` is the project's service that owns watched claims (the ledger side is
:mod:`dpdesk.store.watch`). :meth:`Claims.statuses` is what the CLI and the app show beside an
assessment; the release path runs the same gate (:meth:`Claims.gate`) and refuses a declined plan
before drawing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.answering.assessment import Assessment
from dpdesk.engine.answering.counteroffer import CounterOffer, claim_offer
from dpdesk.engine.budget.person import ROW_RULE, PersonRule
from dpdesk.engine.claims.claim import ClaimReading, read_claim
from dpdesk.engine.claims.control import ClaimCheck, largest_alpha
from dpdesk.engine.claims.odds import odds_bound
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.base import ReleasePlan
from dpdesk.engine.queries.query import Query, product_form, query_from_json
from dpdesk.store import view as view_module
from dpdesk.store.canonical import canonical_json
from dpdesk.store.errors import RequestStateError
from dpdesk.store.file import ProjectFile
from dpdesk.store.ledger import LedgerEntry
from dpdesk.store.ledger_book import LedgerBook
from dpdesk.store.settings import AnsweringSettings
from dpdesk.store.view import AssessState
from dpdesk.store.watch import WatchedClaim, claim_payload, gate, readings

__all__ = ["ClaimStatus", "Claims", "claim_statuses", "claim_trace", "offer_within_claims", "planned_rows"]


def planned_rows(plan: ReleasePlan, shape: tuple[int, ...]) -> list[tuple[Query, float, str]] | None:
    """The noisy rows ``plan`` will add, known before the draw: a count assessment's one fresh row (none
    for inference), a max/argmax's none, a posterior's noisy counts or size (``plan.noisy_rows()``); None
    for other kinds (the release path checks their rows after the draw, before anything is recorded or
    shown)."""
    if not plan.needs_data:
        return []
    rows = getattr(plan, "noisy_rows", None)
    if rows is not None:
        return [
            (
                query_from_json(json.loads(canonical_json(q.to_json())), math.prod(shape), shape),
                float(a),
                str(f),
            )
            for q, a, f in rows()
        ]
    if isinstance(plan, Assessment):
        # the query as the recorded entry will give it back (verify recomputes the check from that)
        q = product_form(
            query_from_json(json.loads(canonical_json(plan.request.query.to_json())), math.prod(shape), shape)
        )
        return [(q, float(plan.pricing.spend_alpha), plan.pricing.noise.name)]
    return None


def _odds(cell_costs: np.ndarray, w: WatchedClaim, rule: PersonRule = ROW_RULE) -> float:
    """The one-unit DP bound on the claim's cells (``odds_bound``: no model of the adversary; a person's
    rows added up by ``rule``, the project's privacy unit)."""
    idx, values = w.claim.query.sparse()
    cells = [int(i) for i, v in zip(idx, values) if v != 0]
    return odds_bound(cell_costs, cells, rule=rule).factor if cells else 1.0


@dataclass(frozen=True)
class ClaimStatus:
    """One watched claim beside a plan: ``Pr(C)`` now and the plan's check (``largest_alpha``: for a
    declined fresh count, the largest α that would pass; None if none does or it does not apply)."""

    watched: WatchedClaim
    reading: ClaimReading
    check: ClaimCheck | None = None
    largest_alpha: float | None = None
    odds_factor: float = 1.0  # one person in the claim's cells: posterior odds ≤ this × prior odds (DP bound)

    @property
    def verdict(self) -> str:
        if self.check is None:
            return "watched"
        if not self.check.touches:
            return "untouched"
        return "allowed" if self.check.allowed else "declined"

    def to_json(self) -> dict[str, Any]:
        r, c = self.reading, self.check
        return {
            "id": self.watched.id,
            "name": self.watched.claim.name,
            "query": self.watched.query_text,
            "low": self.watched.claim.low,
            "high": self.watched.claim.high,
            "threshold": self.watched.claim.threshold,
            "probability": r.probability,
            "estimable": r.estimable,
            "over_threshold": r.over_threshold,
            "risk": self.watched.claim.risk,
            "risk_spent": self.watched.spent,
            "risk_left": self.watched.remaining,
            "risk_of_crossing": None if c is None else c.risk,
            "touches": None if c is None else c.touches,
            "verdict": self.verdict,
            "reason": None if c is None else c.reason,
            "largest_alpha": self.largest_alpha,
            "odds_factor": self.odds_factor,
        }


class Claims:
    """Watched claims of one open project file, as a service (see the module docstring)."""

    def __init__(self, file: ProjectFile, book: LedgerBook, settings: AnsweringSettings) -> None:
        self.file, self.book, self.settings = file, book, settings

    def watch(
        self, query: object, low: object, high: object, threshold: object, risk: object, name: str = ""
    ) -> WatchedClaim:
        """Watch a claim ``low ≤ θ ≤ high`` (one side may be None) from now on; a ``watch`` ledger entry.

        Claims must come from public knowledge or policy, never from looking at the true counts: a claim
        picked because a cell *is* small, and releases declined because of it, tell the world so.
        """
        self.file.require_writer()
        view = self.book.view()
        payload = {
            "id": view.next_claim_id(),
            **claim_payload(self.file.schema, query, low, high, threshold, risk, name, where="claim"),
        }
        self.book.record("watch", None, payload, None)
        return next(w for w in self.book.view().claims if w.id == payload["id"])

    def unwatch(self, claim_id: str, reason: str = "") -> LedgerEntry:
        """Stop watching a claim (an ``unwatch`` entry; its history stays on the ledger)."""
        self.file.require_writer()
        watched = self.book.view().claims
        if claim_id not in {w.id for w in watched}:
            known = ", ".join(w.id for w in watched) or "none"
            raise RequestStateError(f"no watched claim {claim_id!r} (watched: {known})")
        return self.book.record(
            "unwatch", None, {"id": claim_id, "reason": reason or "removed by the curator"}, None
        )

    def claims(self) -> tuple[WatchedClaim, ...]:
        """The claims watched now, with the risk each has spent (recomputed from the ledger)."""
        return self.book.view().claims

    def gate(
        self, state: AssessState, plan: ReleasePlan, rows: Sequence[tuple[Query, float, str]] | None
    ) -> tuple[tuple[WatchedClaim, ClaimCheck], ...]:
        """The gate ``release`` runs: ``(watched claim, check)`` for every claim watched in ``state``."""
        return _gate(state, plan, rows, self.settings.table_size())

    def statuses(self, plan: ReleasePlan | None = None) -> list[ClaimStatus]:
        """Each watched claim's ``Pr(C)`` now and, given a plan, its check (public inputs only); see
        :func:`claim_statuses`."""
        return claim_statuses(self.book.view(), plan, self.settings.table_size())

    def trace(self, claim_id: str) -> list[tuple[int, float | None]]:
        """See :func:`claim_trace`."""
        return claim_trace(self.book.view(), claim_id)


def _gate(
    state: AssessState,
    plan: ReleasePlan,
    rows: Sequence[tuple[Query, float, str]] | None,
    table_size: float | None,
) -> tuple[tuple[WatchedClaim, ClaimCheck], ...]:
    return gate(
        state.claims,
        state.history,
        rows,
        charge=plan.charge,
        needs_data=plan.needs_data,
        structured=bool(state.structured),
        row_limit=view_module.HISTORY_ROW_LIMIT,
        table_size=table_size,
    )


def claim_statuses(
    view: view_module.LedgerView, plan: ReleasePlan | None = None, table_size: float | None = None
) -> list[ClaimStatus]:
    """Each claim watched in ``view`` with ``Pr(C)`` now and, given a plan, its check (public inputs only).

    Reads only the ledger view, so a worker thread may call it (the app does, beside its assessment).
    For a plan of another kind whose rows are known only after the draw, the check is None here; the
    release path checks it after the draw, before anything is recorded. No claims: no work at all.
    """
    if not view.claims:
        return []
    with view.assessing() as s:
        found = readings(s.claims, s.history, bool(s.structured))
        odds = [_odds(s.cell_costs, w, view.rule) for w in s.claims]
        rows = None if plan is None or not s.claims else planned_rows(plan, view.schema.shape)
        if plan is None or rows is None:
            return [ClaimStatus(w, r, odds_factor=f) for w, r, f in zip(s.claims, found, odds)]
        out = []
        for (w, chk), r, f in zip(_gate(s, plan, rows, table_size), found, odds):
            best = None
            if not chk.allowed and isinstance(plan, Assessment) and not s.structured:
                best = largest_alpha(
                    s.history,
                    w.claim,
                    plan.request.query,
                    float(plan.pricing.spend_alpha),
                    spent=w.spent,
                    family=plan.pricing.noise.name,
                    table_size=table_size,
                )
            out.append(ClaimStatus(w, r, chk, best, f))
        return out


def claim_trace(view: view_module.LedgerView, claim_id: str) -> list[tuple[int, float | None]]:
    """``(entry seq, Pr(C) after it)`` from the claim's ``watch`` entry through every later release
    whose rows joined the History (None: not estimable then). Reads released values: for the
    curator's eyes (the panel's plot), never for a decision."""
    watched = next((w for w in view.claims if w.id == claim_id), None)
    if watched is None:
        raise RequestStateError(f"no watched claim {claim_id!r}")
    history = History(view.schema.shape, layout=view.layout)
    out: list[tuple[int, float | None]] = []
    releases = [r for r in view.releases if r.in_history]
    for r in releases:
        if r.entry.seq > watched.added:
            break
        for row in r.contribution.rows:
            history.append(HistoryRow(*row))
    out.append((watched.added, read_claim(history, watched.claim).probability))
    for r in releases:
        if r.entry.seq <= watched.added:
            continue
        for row in r.contribution.rows:
            history.append(HistoryRow(*row))
        if r.contribution.rows:
            out.append((r.entry.seq, read_claim(history, watched.claim).probability))
    return out


def offer_within_claims(
    statuses: Sequence[ClaimStatus], assessment: Assessment, total: float
) -> CounterOffer | None:
    """The counter-offer for a count request watched claims decline (None when none declines it): a
    fresh answer at the largest α that passes every declining claim (and fits the cells' budget), at
    the ±ε that α buys at the request's δ, and history's free answer at its confidence. Accepting it
    edits the request's terms, which are then assessed, confirmed and released as usual."""
    declined = [s for s in statuses if s.verdict == "declined"]
    if not declined:
        return None
    best = [s.largest_alpha for s in declined if s.largest_alpha is not None]
    return claim_offer(assessment, min(best) if len(best) == len(declined) else None, total)
