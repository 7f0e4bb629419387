"""Who asked for what: the requester of each ledger entry and a per-requester account.

The requester is part of the request, not of the hash-chained ledger entry: it is joined from the
project's request queue by request id. Decided requests never leave the queue (only a *pending*
request can be deleted), so every entry with a request id keeps its requester, and the ledger format
stays as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dpdesk.engine.answering.rounding import format_interval, format_value, stated_answer

__all__ = ["Received", "RequesterAccount", "accounts", "requester_of"]


@dataclass(frozen=True)
class Received:
    """One decided request of a requester, as the ledger recorded it."""

    request_id: str
    query: str
    kind: str  # the ledger entry's kind: fresh, inferred, rejected, …
    released: float | None  # the value released (None: a refusal or several values)
    interval: tuple[float, float] | None
    eps: float | None  # the accuracy asked for (None: a request priced by α)
    delta: float | None
    alpha: float  # budget its release spent (0 when free or refused)
    seq: int  # ledger entry
    hash: str
    time: str
    reason: str = ""  # a refusal's note
    integral: bool = False  # a count (integer coefficients): shown rounded
    text: str = ""  # another kind's release in words (a max's label, a posterior)

    def shown(self) -> str:
        """The released value as shown to people (engine/answering/rounding.py: a count as an integer)."""
        return format_value(self.released, self.integral)

    def shown_interval(self) -> str:
        """``[low, high]`` as shown (a count's: the integers inside it), "" when there is none."""
        if self.interval is None:
            return ""
        return format_interval(self.interval[0], self.interval[1], self.integral, self.released)

    def stated(self) -> str:
        """The answer with its one interval and confidence (``880 in [860, 900] (±20 at 95 % confidence)``)."""
        if self.released is None or self.interval is None:
            return self.shown()
        return stated_answer(self.released, *self.interval, self.integral, self.eps, self.delta)


@dataclass(frozen=True)
class RequesterAccount:
    """What one requester asked for, received and cost."""

    requester: str
    received: tuple[Received, ...]
    pending: int

    @property
    def answered(self) -> int:
        return sum(r.released is not None for r in self.received)

    @property
    def rejected(self) -> int:
        return sum(r.kind == "rejected" for r in self.received)

    @property
    def alpha(self) -> float:
        """Sum of the α their fresh releases spent (each charged the cells its query touches)."""
        return float(sum(r.alpha for r in self.received))


def requester_of(requests: Sequence[Any]) -> dict[str, str]:
    """Request id → requester ("" when none was given)."""
    return {r.id: r.requester for r in requests}


def _in_words(entry: Any, schema: Any = None) -> str:
    """A max/argmax's label with its public accuracy, or a posterior's shares with the bands the app shows
    (including the Laplace noise where it can; '' for counts)."""
    p = entry.payload
    if entry.kind in ("mean", "mean-inferred"):  # the mean kind: its interval holds at every table
        from dpdesk.engine.sums.kind import entry_words

        return entry_words(p)
    if "label" in p:
        return f"{p['label']} ({p.get('accuracy', '')})"
    if entry.kind == "posterior":
        from dpdesk.engine.dirichlet.summary import shares_text

        values = [float(v) for v in p.get("values", ())]
        params = f"{'Beta' if len(values) == 2 else 'Dirichlet'}({', '.join(f'{v:.4g}' for v in values)})"
        request = p.get("request") or {}
        try:
            labels = schema.attribute(request["attribute"]).labels
        except (AttributeError, KeyError, TypeError):
            labels = [f"category {i + 1}" for i in range(len(values))]
        prior = request.get("prior") or [1.0] * len(values)
        shares = shares_text(
            labels, values, str(p.get("method", "")), prior, p.get("noisy_counts"), float(p.get("alpha", 0.0))
        )
        return f"posterior {params}: {shares}"
    return ""


def accounts(
    entries: Sequence[Any], requests: Sequence[Any], describe: Any = None, schema: Any = None
) -> list[RequesterAccount]:
    """One account per requester (named ones alphabetically, then anonymous), from the ledger and queue.

    ``describe(request)`` gives a request's readable query (default: the request's own ``describe()``);
    ``schema`` names a posterior's categories.
    """
    by_id: Mapping[str, Any] = {r.id: r for r in requests}
    got: dict[str, list[Received]] = {}
    for e in entries:
        req = by_id.get(e.request_id) if e.request_id else None
        if req is None:
            continue
        p = e.payload
        interval = tuple(float(v) for v in p["interval"]) if "interval" in p else None
        got.setdefault(req.requester, []).append(
            Received(
                req.id,
                describe(req) if describe else req.describe(),
                e.kind,
                e.released,
                interval,  # type: ignore[arg-type]
                req.eps,
                req.delta,
                float(p.get("alpha", 0.0)) if e.kind not in ("inferred", "rejected") else 0.0,
                e.seq,
                e.hash,
                e.time,
                str(p.get("reason", "")) if e.kind == "rejected" else "",
                e.integral,
                _in_words(e, schema),
            )
        )
    pending: dict[str, int] = {}
    for r in requests:
        if r.status == "pending":
            pending[r.requester] = pending.get(r.requester, 0) + 1
    names = sorted(set(got) | set(pending), key=lambda n: (n == "", n.lower()))
    return [RequesterAccount(n, tuple(got.get(n, ())), pending.get(n, 0)) for n in names]
