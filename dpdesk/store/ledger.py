"""The append-only, hash-chained privacy ledger.

Every release and every decision is one :class:`LedgerEntry`: a release of one of the registered
mechanisms' kinds (:func:`dpdesk.engine.registry.kinds` — ``fresh``, a noisy answer and the
budget it spent; ``inferred``, an answer computed from earlier releases, free; the kinds later
mechanisms add), ``rejected``, ``rebind`` (the curator accepted changed source data), and ``watch`` /
``unwatch`` (a watched claim added or removed, :mod:`dpdesk.store.watch`). Entries have gap-free sequence numbers from 1
and ``hash = SHA-256(prev_hash ‖ canonical entry)``, chained from the project's genesis hash; the
``ledger_head`` row repeats the last (seq, hash) so that deleting the newest entries is caught too.
Budget figures are never stored as trusted totals: they are recomputed from the fresh entries.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

from dpdesk.engine.answering.rounding import format_interval, format_value, stated_answer
from dpdesk.engine.errors import Cancelled
from dpdesk.engine.registry import entry_kinds
from dpdesk.store.canonical import canonical_json, chain_hash

_CHAIN_STEP = 64  # rows hashed between progress reports and cancel checks


def kinds() -> tuple[str, ...]:
    """Every kind an entry may have: the registered release kinds' and the decisions (the registry's)."""
    return entry_kinds()


def _freeze(obj: Any) -> Any:
    if isinstance(obj, dict):
        return MappingProxyType({k: _freeze(v) for k, v in obj.items()})
    if isinstance(obj, list):
        if not set(map(type, obj)) & {list, dict}:  # a flat list (e.g. millions of released counts)
            return tuple(obj)
        return tuple(_freeze(v) for v in obj)
    return obj


def thaw(obj: Any) -> Any:
    """A plain (JSON-ready) copy of a frozen payload."""
    if isinstance(obj, Mapping):
        return {k: thaw(v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        if not set(map(type, obj)) & {tuple, dict, MappingProxyType}:  # flat: no element to thaw
            return list(obj)
        return [thaw(v) for v in obj]
    return obj


@dataclass(frozen=True)
class LedgerEntry:
    """One ledger row. ``payload`` is a read-only mapping decoded from canonical JSON."""

    seq: int
    time: str
    kind: str
    request_id: str | None
    payload: Mapping[str, Any]
    prev_hash: str
    hash: str

    def body(self) -> dict[str, Any]:
        """The hashed part of the entry (everything but the hashes)."""
        return entry_body(self.seq, self.time, self.kind, self.request_id, thaw(self.payload))

    def to_json(self) -> dict[str, Any]:
        return {**self.body(), "prev_hash": self.prev_hash, "hash": self.hash}

    @property
    def released(self) -> float | None:
        """The value the requester received when a release released one value: the entry's ``values``
        (project format 3), else a fresh entry's released value (ỹ, or ỹ fused with history's estimate —
        the raw ỹ stays in ``payload["answer"]`` as the history row) or an inferred entry's estimate."""
        p = self.payload
        if "values" in p:
            v = p["values"]  # a flat list, or one list per group (a partition release)
            return float(v[0]) if len(v) == 1 and isinstance(v[0], (int, float)) else None
        if self.kind == "fresh":
            return float(p.get("released", p["answer"]))
        if self.kind == "inferred":
            return float(p["estimate"])
        return None

    @cached_property
    def integral(self) -> bool:
        """True when the entry released a count: one query with integer coefficients, whose true value is
        an integer (see :mod:`dpdesk.engine.answering.rounding`)."""
        q = self.payload.get("query")
        if q is None or isinstance(q, str):
            return False
        values = q.get("values", ()) if isinstance(q, Mapping) else q
        return all(float(v).is_integer() for v in values)

    def shown(self) -> str:
        """The released value as shown to people: a count rounded to an integer; "" when several values."""
        return "" if self.released is None else format_value(self.released, self.integral)

    def shown_interval(self) -> str:
        """The released interval as shown (a count's: the integers inside it); "" when there is none."""
        iv = self.payload.get("interval")
        if iv is None or len(iv) != 2:
            return ""
        return format_interval(float(iv[0]), float(iv[1]), self.integral, self.released)

    def stated(self) -> str:
        """The released answer with its one interval and confidence, as people read it everywhere
        (``880 in [860, 900] (±20 at 95 % confidence)``); the value alone when there is no interval."""
        iv, p = self.payload.get("interval"), self.payload
        if self.released is None or iv is None or len(iv) != 2:
            return self.shown()
        eps, delta = p.get("eps"), p.get("delta")
        return stated_answer(
            self.released,
            float(iv[0]),
            float(iv[1]),
            self.integral,
            None if eps is None else float(eps),
            None if delta is None else float(delta),
        )


def entry_body(seq: int, time: str, kind: str, request_id: str | None, payload: Any) -> dict[str, Any]:
    return {"seq": seq, "time": time, "kind": kind, "request_id": request_id, "payload": payload}


def head(conn: sqlite3.Connection) -> tuple[int, str] | None:
    row = conn.execute("SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1").fetchone()
    return (int(row[0]), str(row[1])) if row else None


def append(
    conn: sqlite3.Connection,
    genesis: str,
    *,
    time: str,
    kind: str,
    request_id: str | None,
    payload: dict[str, Any],
) -> LedgerEntry:
    """Append one entry inside the caller's open transaction (the caller commits)."""
    if kind not in kinds():
        raise ValueError(f"kind ({kind!r}) must be one of {kinds()}")
    last = head(conn)
    seq, prev = (last[0] + 1, last[1]) if last else (1, genesis)
    text = canonical_json(payload)
    payload_plain = json.loads(text)
    digest = chain_hash(prev, entry_body(seq, time, kind, request_id, payload_plain))
    conn.execute(
        "INSERT INTO ledger (seq, time, kind, request_id, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (seq, time, kind, request_id, text, prev, digest),
    )
    conn.execute(
        "INSERT INTO ledger_head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET seq = ?, hash = ?",
        (seq, digest, seq, digest),
    )
    return LedgerEntry(seq, time, kind, request_id, _freeze(payload_plain), prev, digest)


@dataclass(frozen=True)
class RawRow:
    """A ledger row as stored, before any checking (verify works on these)."""

    seq: Any
    time: Any
    kind: Any
    request_id: Any
    payload: Any
    prev_hash: Any
    hash: Any


def raw_rows(conn: sqlite3.Connection, after: int = 0, upto: int | None = None) -> list[RawRow]:
    """The ledger rows with ``after < seq (≤ upto)`` in physical sequence order, unchecked."""
    return [
        RawRow(*r)
        for r in conn.execute(
            "SELECT seq, time, kind, request_id, payload, prev_hash, hash FROM ledger WHERE seq > ? AND seq <= ? "
            "ORDER BY seq",
            (after, upto if upto is not None else 2**62),
        )
    ]


def entry_hash(conn: sqlite3.Connection, seq: int) -> str | None:
    """The stored hash of entry ``seq`` (None when there is no such entry)."""
    row = conn.execute("SELECT hash FROM ledger WHERE seq = ?", (seq,)).fetchone()
    return str(row[0]) if row else None


def decode(row: RawRow) -> LedgerEntry:
    """A checked-shape entry from a raw row (raises ValueError when the row is malformed)."""
    payload = json.loads(row.payload)
    if not isinstance(payload, dict):
        raise ValueError("payload is not an object")
    return LedgerEntry(
        int(row.seq),
        str(row.time),
        str(row.kind),
        row.request_id,
        _freeze(payload),
        str(row.prev_hash),
        str(row.hash),
    )


def check_chain(
    rows: Sequence[RawRow],
    genesis: str,
    *,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> tuple[list[LedgerEntry], str | None]:
    """Walk the chain; return the entries and the first problem (``"entry 7: ..."``) or None.

    Hashing a long ledger takes seconds (≈ 15 s for 3 546 entries of large payloads): ``progress(f)`` hears
    the fraction of rows checked and ``cancelled()`` is asked as often (:class:`Cancelled` raised).
    """
    entries: list[LedgerEntry] = []
    prev = genesis
    expected = 1
    for i, row in enumerate(rows):
        if i % _CHAIN_STEP == 0 and (progress is not None or cancelled is not None):
            if cancelled is not None and cancelled():
                raise Cancelled("stopped while checking the ledger's hash chain")
            if progress is not None:
                progress(i / len(rows))
        where = f"entry {row.seq}"
        if not isinstance(row.seq, int) or row.seq != expected:
            return (
                entries,
                f"{where}: sequence number {row.seq!r} where {expected} was expected (gap or reordering)",
            )
        if row.kind not in kinds():
            return entries, f"{where}: unknown kind {row.kind!r}"
        if not isinstance(row.payload, str):
            return entries, f"{where}: payload is not text"
        try:
            entry = decode(row)
        except (ValueError, TypeError) as exc:
            return entries, f"{where}: payload is not valid JSON ({exc})"
        if canonical_json(thaw(entry.payload)) != row.payload:
            return entries, f"{where}: payload is not in canonical form (edited by hand?)"
        if row.prev_hash != prev:
            return entries, f"{where}: prev_hash does not match the hash of entry {expected - 1 or 'genesis'}"
        if chain_hash(prev, entry.body()) != row.hash:
            return entries, f"{where}: hash does not match its contents (edited by hand?)"
        entries.append(entry)
        prev = entry.hash
        expected += 1
    return entries, None
