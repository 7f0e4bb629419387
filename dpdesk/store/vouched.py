"""What a project file vouches for beyond each entry's own checks, for :func:`~dpdesk.store.verify.verify`:
batch plans and their measurements (format 9), each decided request as it was decided (format 10), and the
heads this machine's receipt log holds (:mod:`dpdesk.store.receipts`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dpdesk.store.ledger import thaw
from dpdesk.store.receipts import Receipt

__all__ = ["Batches", "check_receipts", "check_requests"]

Bad = Callable[[int | None, str], None]  # records a problem (the entry it names, or None) and its words


class Batches:
    """Batch plans and their measurements (project format 9): a plan is recorded before its first
    measurement; each measurement names the newest plan, comes in the plan's order, is the plan's own
    (query, α, noise) and is bought once — a batch resumed after a crash or a cancel never pays twice."""

    def __init__(self) -> None:
        self.plans: dict[int, list[Any]] = {}  # batch entry -> its measurements as recorded
        self.bought: dict[int, int] = {}  # batch entry -> measurements bought so far
        self.newest: int | None = None

    def check(self, e: Any, bad: Bad) -> None:
        if e.kind == "batch":
            rows = thaw(e.payload)["measurements"]
            if not isinstance(rows, list) or not rows:
                raise ValueError("a batch plan without measurements")
            self.plans[e.seq], self.bought[e.seq], self.newest = rows, 0, e.seq
            return
        plan = e.payload.get("batch", {}).get("plan") if e.kind == "measurement" else None
        if plan is None:  # a measurement recorded before format 9, or another kind
            return
        where = f"entry {e.seq}"
        if plan not in self.plans:
            bad(e.seq, f"{where}: measurement of batch plan #{plan}, which is no earlier batch plan entry")
            return
        if plan != self.newest:
            bad(
                e.seq,
                f"{where}: measurement of batch plan #{plan}, superseded by the plan of entry {self.newest}",
            )
        k, rows = e.payload["batch"].get("index"), self.plans[plan]
        done = self.bought[plan]
        if k != done:
            more = (
                "already bought (paid twice)" if isinstance(k, int) and k < done else f"expected #{done + 1}"
            )
            bad(
                e.seq,
                f"{where}: measurement #{k + 1 if isinstance(k, int) else k!r} of batch plan #{plan}: {more}",
            )
        elif k >= len(rows):
            bad(e.seq, f"{where}: batch plan #{plan} has only {len(rows)} measurements")
        else:
            want, p = rows[k], e.payload
            if (thaw(p["query"]), float(p["alpha"]), p["family"]) != (
                want["query"],
                float(want["alpha"]),
                want["family"],
            ):
                bad(e.seq, f"{where}: measurement #{k + 1} is not the one batch plan #{plan} recorded")
        self.bought[plan] = done + 1


def check_requests(entries: Sequence[Any], digests: dict[str, str], bad: Bad) -> None:
    """Each decided request is, as stored, what its deciding entry recorded (the digest of its requester,
    kind, text, coefficients, terms and time); an entry made before format 10 is vouched for by the
    ``requests`` entry its migration recorded."""
    anchored: dict[str, tuple[int, str]] = {}
    for e in entries:
        if e.kind == "requests":
            anchored.update((rid, (e.seq, d)) for rid, d in e.payload["requests"].items())
    for e in entries:
        if e.request_id is None or e.request_id not in digests:
            continue  # a missing request is named above
        seq, want = (
            (e.seq, e.payload["request_digest"])
            if "request_digest" in e.payload
            else anchored.get(e.request_id, (0, None))
        )
        if want is not None and digests[e.request_id] != want:
            bad(
                e.seq,
                f"entry {e.seq}: request {e.request_id!r} as stored (its requester, query, terms or time) is not "
                f"what entry {seq} recorded — edited after it was decided",
            )


def check_receipts(entries: Sequence[Any], receipts: Sequence[Receipt], bad: Bad) -> None:
    """The file still holds every head this machine recorded or handed out, each at its place."""
    if not receipts:
        return
    hashes = {e.seq: e.hash for e in entries}
    last = entries[-1].seq if entries else 0
    ahead = [r for r in receipts if r.seq > last]
    if ahead:
        r = max(ahead, key=lambda r: r.seq)
        bad(
            last + 1,
            f"entry {last + 1}: missing — the file is behind a head it once had: this machine {r.what} entry "
            f"{r.seq} (witness {r.hash[:16]}…) on {r.time[:19]} in {r.file}, but the ledger now ends at entry "
            f"{last} (entries removed, or an older copy of the project put back)",
        )
    wrong = next((r for r in receipts if r.seq <= last and hashes.get(r.seq) != r.hash), None)
    if wrong is not None:
        bad(
            wrong.seq,
            f"entry {wrong.seq}: not the entry this machine {wrong.what} on {wrong.time[:19]} (witness "
            f"{wrong.hash[:16]}…): the ledger was rewritten from there, or this is another copy of the "
            "project that went its own way",
        )
