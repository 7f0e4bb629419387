"""Watched claims in a project's ledger: what they are, how much risk each has spent, and the gate every
release passes (issue 18; the reasoning is in docs/claims.md).

A claim is watched and unwatched by ledger entries (kinds ``watch`` and ``unwatch``), hash-chained like
every release: the risk a claim has spent is recomputed from the ledger, never stored as a total, and
dropping a claim (to reset its risk, or to hide that it was watched) leaves a trace ``verify`` sees.
A release entry made while claims are watched records ``claims``: ``[{"id", "risk"}]`` for every claim
it touched, the crossing risk it spent. ``verify`` recomputes each from public inputs (the history's
structure before the entry, the release's rows, the claim, the declared table size of the entry's
basis) and checks that no claim's spent risk passed its budget.

What cannot be modelled is the worst case (declined while the claim has risk left to protect):

- a release whose noisy rows do not join the History (more than ``HISTORY_ROW_LIMIT``), and any release
  while such a release is on the ledger (the History then misses what it revealed about θ);
- a release that charges a cell of the claim's query beyond what its noisy linear rows explain (an
  exponential mechanism: max/argmax, a posterior of proportions).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpdesk.engine.claims.claim import Claim, ClaimError, ClaimReading, read_claim
from dpdesk.engine.claims.control import ClaimCheck, check_rows
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.history import History
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.queries.query import Query, query_from_json
from dpdesk.engine.queries.text import query_from_input
from dpdesk.engine.schema import Schema
from dpdesk.store.errors import RequestStateError
from dpdesk.store.ledger import LedgerEntry, thaw

__all__ = ["ClaimBook", "ClaimDeclined", "WatchedClaim", "claim_payload", "gate", "worst_case"]

RISK_TOL = 1e-9


class ClaimDeclined(RequestStateError):
    """A release would spend more of a watched claim's risk than it has left: nothing was released."""


@dataclass(frozen=True)
class WatchedClaim:
    """A claim on the ledger: its id (``c1``, ``c2``, …), the engine's :class:`Claim`, the query's text,
    the entry that added it, the risk spent so far and ``(entry seq, risk)`` of each release that touched it."""

    id: str
    claim: Claim
    query_text: str | None
    added: int
    spent: float = 0.0
    touched: tuple[tuple[int, float], ...] = ()

    @property
    def remaining(self) -> float:
        return max(0.0, self.claim.risk - self.spent)

    def to_json(self) -> dict[str, Any]:
        c = self.claim
        return {
            "id": self.id,
            "name": c.name,
            "query": self.query_text,
            "low": c.low,
            "high": c.high,
            "threshold": c.threshold,
            "risk": c.risk,
            "risk_spent": self.spent,
            "risk_left": self.remaining,
            "added": self.added,
            "touched": [{"entry": s, "risk": r} for s, r in self.touched],
        }


def _claim(payload: Mapping[str, Any], schema: Schema, where: str) -> Claim:
    q = query_from_json(thaw(payload["query"]), schema.n_cells, schema.shape)
    text = payload.get("query_text")
    return Claim(
        q,
        payload.get("low"),
        payload.get("high"),
        payload["threshold"],
        payload["risk"],
        name=str(payload.get("name") or text or where),
    )


def claim_payload(
    schema: Schema,
    query: Any,
    low: Any,
    high: Any,
    threshold: Any,
    risk: Any,
    name: str = "",
    *,
    where: str = "claim",
) -> dict[str, Any]:
    """The ``watch`` entry's payload for a claim as a curator gives it (query text or JSON coefficients);
    raises a one-line :class:`~dpdesk.engine.errors.DpdeskError` naming the problem and ``where``."""
    q = query_from_input(query, schema.n_cells, schema.shape, schema, where=where)
    text = query.strip() if isinstance(query, str) and query.strip()[:1] not in ("[", "{") else None
    label = (name or "").strip() or text or "claim"
    try:
        Claim(q, low, high, threshold, risk, name=label)  # every check the engine makes
    except ClaimError as exc:
        raise ClaimError(f"{where}: {exc}") from None
    return {
        "query": q.to_json(),
        "query_text": text,
        "name": label,
        "low": None if low is None else float(low),
        "high": None if high is None else float(high),
        "threshold": float(threshold),
        "risk": float(risk),
    }


class ClaimBook:
    """The watched claims as the ledger has them so far (the ledger view keeps one, entry by entry)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._claims: dict[str, WatchedClaim] = {}
        self._added = 0

    @property
    def active(self) -> tuple[WatchedClaim, ...]:
        return tuple(self._claims.values())

    def next_id(self) -> str:
        return f"c{self._added + 1}"

    def take(self, entry: LedgerEntry) -> None:
        """Follow one entry: a claim added or removed, or the risk a release recorded spending."""
        p, where = entry.payload, f"entry {entry.seq}"
        if entry.kind == "watch":
            self._added += 1
            cid = str(p["id"])
            if cid != f"c{self._added}":
                raise DpdeskError(f"{where}: claim id {cid!r} where c{self._added} was expected")
            self._claims[cid] = WatchedClaim(
                cid, _claim(p, self.schema, where), p.get("query_text"), entry.seq
            )
        elif entry.kind == "unwatch":
            if self._claims.pop(str(p["id"]), None) is None:
                raise DpdeskError(f"{where}: removes claim {p['id']!r}, which is not watched")
        else:
            for spend in p.get("claims") or ():
                cid = str(spend["id"])
                if cid not in self._claims:
                    raise DpdeskError(f"{where}: spends risk of claim {cid!r}, which is not watched")
                w, r = self._claims[cid], float(spend["risk"])
                self._claims[cid] = replace(w, spent=w.spent + r, touched=(*w.touched, (entry.seq, r)))


def worst_case(w: WatchedClaim, why: str) -> ClaimCheck:
    """A check that counts as touching with certainty: declined while the claim has risk to protect."""
    return ClaimCheck(
        w.claim, True, 1.0, w.remaining, False, f"{w.claim.name}: declined — {why}; treated as the worst case"
    )


def _cells(query: Query) -> np.ndarray:
    idx, values = query.sparse()
    cells: np.ndarray = np.asarray(idx)[np.asarray(values) != 0]
    return cells


def gate(
    claims: Sequence[WatchedClaim],
    history: History,
    rows: Sequence[tuple[Query, float, str]] | None,
    *,
    charge: Charge,
    needs_data: bool,
    structured: bool,
    row_limit: int,
    table_size: float | None,
) -> tuple[tuple[WatchedClaim, ClaimCheck], ...]:
    """Every watched claim's check on one release (public inputs only: no table, no released value).

    ``rows``: the release's noisy rows ``(query, α, family)``; ``structured``: the ledger already holds a
    release left out of the History.
    """
    out = []
    n = int(np.prod(history.cells))  # per cube cell (a history over measures has more coordinates)
    rows = list(rows or ())
    excess = np.zeros(n)
    if needs_data and charge.terms and len(rows) <= row_limit:
        # what the release charges beyond its noisy linear rows (an exponential mechanism's part): the
        # claim's posterior cannot model it
        explained = (
            Charge(tuple(ChargeTerm(a / q.sensitivity, q) for q, a, _ in rows)).dense(n) if rows else 0.0
        )
        excess = charge.dense(n) - explained
    for w in claims:
        if not needs_data:
            chk = ClaimCheck(
                w.claim, False, 0.0, w.remaining, True, f"{w.claim.name}: computed from released values only"
            )
        elif structured:
            chk = worst_case(w, "the ledger holds a release too large for the history the claim is read from")
        elif len(rows) > row_limit:
            chk = worst_case(w, f"this release adds {len(rows)} noisy answers, too many to model")
        elif float(np.max(excess[_cells(w.claim.query)], initial=0.0)) > 1e-9 * max(
            1.0, float(np.max(excess, initial=0.0))
        ):
            chk = worst_case(w, "this release draws from cells of the claim beyond noisy linear answers")
        else:
            chk = check_rows(history, w.claim, rows, spent=w.spent, table_size=table_size)
        out.append((w, chk))
    return tuple(out)


def readings(claims: Iterable[WatchedClaim], history: History, structured: bool) -> list[ClaimReading]:
    """``Pr(C)`` now for each claim; not estimable (the worst case) while a structured release exists."""
    return [
        ClaimReading(w.claim, False, None) if structured else read_claim(history, w.claim) for w in claims
    ]


def recorded(checks: Iterable[tuple[WatchedClaim, ClaimCheck]]) -> list[dict[str, Any]]:
    """The release payload's ``claims`` member: the risk spent on each claim it touches."""
    return [{"id": w.id, "risk": float(c.risk)} for w, c in checks if c.touches]


def declined(checks: Iterable[tuple[WatchedClaim, ClaimCheck]], what: str) -> ClaimDeclined | None:
    """The one-line refusal for the first declined check, or None."""
    bad = [(w, c) for w, c in checks if not c.allowed]
    if not bad:
        return None
    w, c = bad[0]
    more = f" (and {len(bad) - 1} more claim{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
    return ClaimDeclined(
        f"{what} is declined by watched claim {w.id}: {c.reason}{more}; nothing was released"
    )


def same_risks(recorded_claims: Any, checks: Iterable[tuple[WatchedClaim, ClaimCheck]]) -> str | None:
    """None when the recorded ``claims`` member is what the checks give, else what differs."""
    want = {w.id: c.risk for w, c in checks if c.touches}
    got = {str(s["id"]): float(s["risk"]) for s in (recorded_claims or ())}
    if set(want) != set(got):
        return f"touches claims {sorted(want) or 'none'} but records {sorted(got) or 'none'}"
    for cid, r in want.items():
        if not math.isclose(r, got[cid], rel_tol=1e-6, abs_tol=RISK_TOL):
            return f"spends risk {r:.6g} of claim {cid} but records {got[cid]:.6g}"
    return None
