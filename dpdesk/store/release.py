"""A released answer as the ledger records it: what :meth:`Project.answer` returns and a retry finds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpdesk.store.errors import RequestStateError
from dpdesk.store.ledger import LedgerEntry

__all__ = ["Release", "release_from_entry"]


@dataclass(frozen=True)
class Release:
    """An answer released for a request — fresh (charged) or inferred (free) — as recorded."""

    request_id: str
    kind: str                      # "fresh" | "inferred"
    answer: float
    interval: tuple[float, float]
    alpha: float                   # budget spent (0 for inferred)
    family: str | None             # noise family of a fresh answer
    entry: LedgerEntry
    recovered: bool                # True when found already recorded (a retry), nothing new drawn
    fusion_weight: float | None = None  # a fresh answer released fused with history (weight t of ỹ)

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "kind": self.kind,
            "answer": self.answer,
            "interval": list(self.interval),
            "alpha": self.alpha,
            "family": self.family,
            "ledger_seq": self.entry.seq,
            "ledger_hash": self.entry.hash,
            "recovered": self.recovered,
            "fusion_weight": self.fusion_weight,
        }


def release_from_entry(entry: LedgerEntry, recovered: bool) -> Release:
    p = entry.payload
    if entry.kind == "fresh":
        return Release(entry.request_id or "", "fresh", entry.released, tuple(p["interval"]),  # type: ignore[arg-type]
                       float(p["alpha"]), str(p["family"]), entry, recovered, p.get("fusion_weight"))
    if entry.kind == "inferred":
        return Release(entry.request_id or "", "inferred", entry.released, tuple(p["interval"]),  # type: ignore[arg-type]
                       0.0, None, entry, recovered)
    raise RequestStateError(f"request {entry.request_id!r} was {entry.kind} (ledger entry {entry.seq}), not answered")
