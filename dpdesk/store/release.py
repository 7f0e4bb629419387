"""A release as the ledger records it: what :meth:`Project.release` returns and a retry finds.

Every release carries its **witness**: the hash of its ledger entry, i.e. the ledger head right after
it. Whoever holds that hash can later check, with ``dpdesk verify PROJECT --extends HASH``, that the
project's ledger still contains the release — a ledger rewritten and consistently re-chained
afterwards passes every other check but not that one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpdesk.engine.registry import decision_kinds
from dpdesk.store.errors import RequestStateError
from dpdesk.store.ledger import LedgerEntry

__all__ = ["Release", "release_from_entry"]


REPLY_VALUES = 8  # values a reply spells out; a longer release is summarised


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 2**53 else repr(float(x))


@dataclass(frozen=True)
class Release:
    """A release — a fresh (charged) or inferred (free) answer, or another kind — as recorded."""

    request_id: str | None
    kind: str  # the ledger entry's kind: "fresh", "inferred", or a later release kind
    answer: float | None  # the value released (None when a release released several)
    interval: tuple[float, float] | None
    alpha: float  # budget spent (0 for inferred)
    family: str | None  # noise family of a fresh answer
    entry: LedgerEntry
    recovered: bool  # True when found already recorded (a retry), nothing new drawn
    fusion_weight: float | None = None  # a fresh answer released fused with history (weight t of ỹ)
    values: tuple[float, ...] = ()  # every value released, in order

    @property
    def witness(self) -> str:
        """The ledger head this release made (its entry's hash): what the requester keeps."""
        return self.entry.hash

    def reply(self) -> str:
        """The requester's reply: the answer, the promise it meets and the witness to keep."""
        p = self.entry.payload
        who = f"request {self.request_id}" if self.request_id else f"release #{self.entry.seq}"
        if self.answer is not None and self.interval is not None and "eps" in p:
            # as shown everywhere: a count rounded to an integer, its interval the integers inside it
            what = f"{who}: {self.entry.stated()}: the true answer lies in this interval at that confidence"
        elif "label" in p:  # a max/argmax: the label drawn, and its public accuracy statement
            what = f"{who}: {p['label']} ({p.get('text') or p.get('query')}; {p.get('accuracy', self.kind)})"
        else:
            shown = ", ".join(_num(v) for v in self.values[:REPLY_VALUES])
            if (
                len(self.values) > REPLY_VALUES
            ):  # a partition release: its values go out as a table, not a line
                shown += f", … ({len(self.values):,} values in all)"
            what = f"{who}: {shown or 'released'} ({self.kind})"
        return (
            f"{what}. Ledger entry #{self.entry.seq}, ledger head {self.witness} — keep it: "
            f"`dpdesk verify PROJECT --extends {self.witness}` checks the ledger still holds this release."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "kind": self.kind,
            "answer": self.answer,
            "interval": list(self.interval) if self.interval is not None else None,
            "alpha": self.alpha,
            "family": self.family,
            "ledger_seq": self.entry.seq,
            "ledger_hash": self.entry.hash,
            "ledger_head": self.witness,
            "recovered": self.recovered,
            "fusion_weight": self.fusion_weight,
            "values": list(self.values),
        }


def flat_values(values: Any) -> list[float]:
    """The recorded values in order: a flat list, or nested lists (one per group of a partition release)."""
    if not set(map(type, values)) & {list, tuple}:
        return list(map(float, values))  # millions of counts: no Python call per value
    out: list[float] = []
    for v in values:
        out.extend(flat_values(v) if isinstance(v, (list, tuple)) else (float(v),))
    return out


def release_from_entry(entry: LedgerEntry, recovered: bool) -> Release:
    """The release a ledger entry records (refuses a refusal or a rebind, which released nothing)."""
    if entry.kind in decision_kinds():
        raise RequestStateError(
            f"request {entry.request_id!r} was {entry.kind} (ledger entry {entry.seq}), not answered"
        )
    p = entry.payload
    released = entry.released
    values = tuple(flat_values(p["values"])) if "values" in p else (() if released is None else (released,))
    interval = (float(p["interval"][0]), float(p["interval"][1])) if "interval" in p else None
    return Release(
        entry.request_id,
        entry.kind,
        released,
        interval,
        float(p.get("alpha", 0.0)),
        p.get("family"),
        entry,
        recovered,
        p.get("fusion_weight"),
        values,
    )
