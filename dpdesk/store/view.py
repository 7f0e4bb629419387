"""The one view of the ledger: history, per-cell costs, the cost curve and who spent each cell.

A :class:`LedgerView` takes ledger entries in order and derives everything the app, the CLI and
``verify`` show, asking each entry's mechanism (:mod:`dpdesk.engine.registry`) for its
contribution — its per-cell charge (the mechanism's privacy map applied to the recorded parameters,
never a stored total) and the noisy rows it adds to the history the BLUE uses. It only grows: the
project extends it with the entries recorded since it last looked, so nothing is replayed twice.

Per cell it accumulates the privacy loss α (Thm 5.4) and, for mechanisms charged in ``(α, δ)``, the δ
of every release that charges the cell. A release's noisy rows join the History only up to
:data:`HISTORY_ROW_LIMIT` rows per release: a partition release of millions of counts is not fed row
by row; it stays in :attr:`LedgerView.structured_releases`, to be answered from its own structure
(e.g. ``PartitionRelease.estimate``). The limit is part of the ledger's meaning (fresh entries record
how many history rows preceded them and ``verify`` checks it), so it never changes for a project.
``verify`` builds its own from the raw entries and never trusts a cached one.

Qt-free and thread-aware: one thread (the project's) extends it; a worker reads a consistent
:meth:`assessing` state (history, costs, head) under a lock while the owner keeps extending.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.budget.costs import CellCosts
from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.budget.person import person_rule
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.base import Contribution, Mechanism
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.registry import claim_kinds, kinds, mechanism
from dpdesk.engine.schema import Schema
from dpdesk.store.errors import StoreError
from dpdesk.store.ledger import LedgerEntry, thaw
from dpdesk.store.watch import ClaimBook, WatchedClaim

__all__ = [
    "HISTORY_ROW_LIMIT",
    "AssessState",
    "LedgerView",
    "MalformedEntry",
    "ViewedRelease",
    "mechanism_of",
]

# A release with more noisy rows than this is not fed into the History; it is answered from its own
# structure instead. The History factorises its rows once, in cubic time — measured for interval-tree
# rows: 0.55 s for 1 016, 1.7 s for 2 040, 7.9 s for 4 088, 43 s for 8 184 — while a release's own
# solver answers in ~20 ms at any size. Recorded history prefixes depend on it.
HISTORY_ROW_LIMIT = 2048

# entries written before project format 3 name no mechanism: their kind says which one made them
_FORMAT2_MECHANISM = {"inferred": "inference"}


class MalformedEntry(StoreError):
    """A ledger entry whose payload its mechanism cannot read (named ``entry N: ...``)."""


def mechanism_of(entry: LedgerEntry) -> Mechanism:
    """The registered mechanism that made a release entry (format 2: by kind, or a fresh entry's family)."""
    p = entry.payload
    name = p.get("mechanism") or _FORMAT2_MECHANISM.get(entry.kind) or p.get("family")
    return mechanism(str(name))


@dataclass(frozen=True)
class ViewedRelease:
    """One release entry and what the view derived from it."""

    entry: LedgerEntry
    mechanism: Mechanism
    contribution: Contribution
    rows_before: int  # history rows released before this entry
    in_history: bool = True  # its rows joined the History (False: more than HISTORY_ROW_LIMIT of them)


@dataclass(frozen=True)
class AssessState:
    """A consistent moment of the ledger for an assessment: its history, costs, δ, head and the releases
    whose rows the history does not hold (an assessment may estimate from their own structure)."""

    history: History
    cell_costs: np.ndarray
    head: tuple[int, str]
    cell_deltas: np.ndarray | None = None  # per-cell δ of the (α, δ) releases so far
    structured: tuple[
        ViewedRelease, ...
    ] = ()  # releases left out of the History (answer from their structure)
    releases: tuple[
        tuple[int, Any], ...
    ] = ()  # (entry seq, PartitionRelease): those of them that answer from their structure
    claims: tuple[WatchedClaim, ...] = ()  # the watched claims and the risk each has spent


def _add_for_curve(costs: CellCosts, charge: Charge) -> float:
    """Add ``charge`` to ``costs``; the largest cost among the cells it touched (every cell's when that
    takes a pass anyway): a one-term charge costs its box, not a pass over the cube."""
    if not charge.terms:
        return 0.0
    if len(charge.terms) == 1 and charge.terms[0].query is not None:
        return costs.add_touched(charge.terms[0].scale, charge.terms[0].query)
    _add_charge(costs, charge)
    v = costs.values
    return float(v.max()) if v.size else 0.0


def _add_charge(costs: CellCosts, charge: Charge) -> None:
    for t in charge.terms:
        if t.query is None:
            costs.add_uniform(t.scale)
        else:
            costs.add(t.scale, t.query)


class LedgerView:
    """Everything derived from a project's ledger, extended entry by entry. See the module docstring."""

    def __init__(self, schema: Schema, genesis: str, accounting: ZcdpAccounting | None = None) -> None:
        self.schema = schema
        self.layout = Layout.of(schema)  # the vector of counts and sums a query over measures reads
        self.rule = person_rule(schema)  # how per-cell costs add up to one person's loss
        self.genesis = genesis
        # the unit per-cell totals are kept in: ε (None), or ρ under zCDP (engine/budget/mode.py)
        self.accounting = accounting
        self._lock = threading.RLock()  # entries, releases, costs, curve
        self._history_lock = threading.Lock()  # the History (its factorisation grows while estimating)
        self._entries: list[LedgerEntry] = []
        self._releases: list[ViewedRelease] = []
        self._rows: list[HistoryRow] = []
        self._costs = CellCosts(schema.shape)
        self._deltas = np.zeros(schema.n_cells)  # per-cell δ of the (α, δ) releases charging each cell
        # the cost curve is drawn on demand: the max over n cells after every entry costs n per entry, which
        # a long ledger (thousands of entries over 10⁶ cells) should not pay just to assess a request
        self._charges: list[tuple[int, Charge | None]] = []  # (seq, charge of a release entry) per entry
        self._curve: list[tuple[int, float]] = [(0, 0.0)]
        self._curve_costs = CellCosts(schema.shape)
        self._curve_released = False
        self._curve_top = 0.0  # the largest per-cell cost so far (costs only grow)
        self._history: History | None = None
        self._structured: dict[int, Any] = {}  # entry seq -> what answers from its structure (built once)
        self.history_builds = 0  # how often a History was built from scratch (visible to tests)
        self._book = ClaimBook(schema)  # watched claims: added/removed by entries, risk spent by releases
        self.malformed = 0  # entries taken that their mechanism could not read
        # restored from a cache (dpdesk/store/view_cache.py): costs, δ and the History up to ``_head0`` come
        # from it; the entries up to there are read only when something asks for them (``_prefix``)
        self._head0: tuple[int, str] | None = None
        self._prefix: Callable[[], list[LedgerEntry]] | None = None
        self._prefix_releases = 0
        self._prefix_structured: tuple[int, ...] = ()
        self._rows_offset = 0  # history rows of the cached prefix (not in ``_rows``)
        self.cache_key: tuple[int, str] | None = (
            None  # the head of the cache this view came from or was saved to
        )
        self.cache_spaces: tuple[str, ...] = ()  # the factorisations that cache holds

    @classmethod
    def restored(
        cls,
        schema: Schema,
        genesis: str,
        *,
        head: tuple[int, str],
        history: History,
        costs: np.ndarray,
        deltas: np.ndarray,
        releases: int,
        structured: Sequence[int],
        load_prefix: Callable[[], list[LedgerEntry]],
        accounting: ZcdpAccounting | None = None,
    ) -> LedgerView:
        """A view of the ledger up to ``head`` from stored results (the cache's): ``history``, per-cell
        ``costs`` and ``deltas``, the number of ``releases`` and the seqs of those kept out of the History.
        ``load_prefix()`` returns the entries up to ``head``; it runs only when entries are asked for."""
        v = cls(schema, genesis, accounting)
        if (
            costs.shape != v._deltas.shape
            or deltas.shape != v._deltas.shape
            or history.cells != tuple(schema.shape)
            or history.layout != v.layout
        ):
            raise StoreError("the stored view does not match the cube")
        v._head0, v._prefix = (int(head[0]), str(head[1])), load_prefix
        v._prefix_releases, v._prefix_structured = int(releases), tuple(int(s) for s in structured)
        v._costs.load(costs)
        v._deltas = np.array(deltas, dtype=float)
        v._history, v._rows_offset = history, len(history)
        v.cache_key = v._head0
        return v

    @property
    def entries_read(self) -> bool:
        """Whether asking for :attr:`entries`, :attr:`releases` or :meth:`spenders` is quick: False while a
        restored view's cached prefix is still unread (on a long ledger, reading it takes seconds)."""
        return self._prefix is None

    @property
    def restored_from_cache(self) -> bool:
        """Whether the costs and History up to some head came from a cache (see :meth:`restored`)."""
        return self._head0 is not None

    def _materialise(self) -> None:
        """Read the cached prefix's entries (once), for what needs them: entries, releases, spenders."""
        with self._lock:
            if self._prefix is None:
                return
            load, self._prefix = self._prefix, None
            entries, releases, charges, rows = [], [], [], 0
            for e in load():
                viewed, _ = self._read(e, rows)
                entries.append(e)
                if viewed is not None:
                    releases.append(viewed)
                    rows += len(viewed.contribution.rows) if viewed.in_history else 0
                charges.append((e.seq, viewed.contribution.charge if viewed is not None else None))
            if (
                (entries[-1].seq, entries[-1].hash) if entries else None
            ) != self._head0 or rows != self._rows_offset:
                raise StoreError(
                    "the ledger no longer matches its cached view (delete the .cache file beside "
                    "the project and open it again)"
                )
            self._entries[:0], self._releases[:0], self._charges[:0] = entries, releases, charges

    # -- growing ---------------------------------------------------------------------------------
    @property
    def head(self) -> tuple[int, str]:
        """``(seq, hash)`` of the last entry taken; ``(0, genesis)`` before any."""
        with self._lock:
            if self._entries:
                return self._entries[-1].seq, self._entries[-1].hash
            return self._head0 if self._head0 is not None else (0, self.genesis)

    def extends(self, entry: LedgerEntry) -> bool:
        """Whether ``entry`` is the next one of the chain this view has taken."""
        seq, digest = self.head
        return entry.seq == seq + 1 and entry.prev_hash == digest

    def growing(self) -> threading.RLock:
        """Hold it to read new entries and add them without another thread adding the same ones."""
        return self._lock

    def add(self, entry: LedgerEntry) -> ViewedRelease | None:
        """Take the next entry. A release entry is read through its mechanism; one that cannot be read is
        still taken (so the chain goes on, charging nothing) and :class:`MalformedEntry` is raised."""
        with self._lock:
            return self._add(entry)

    def _add(self, entry: LedgerEntry) -> ViewedRelease | None:
        if not self.extends(entry):
            raise StoreError(
                f"entry {entry.seq}: does not extend the ledger read so far (ends at #{self.head[0]})"
            )
        viewed, problem = self._read(entry, self._row_count())
        if problem is None and (viewed is not None or entry.kind in claim_kinds()):
            try:
                self._book.take(entry)
            except (KeyError, TypeError, ValueError, DpdeskError) as exc:
                problem = (
                    str(exc)
                    if str(exc).startswith("entry ")
                    else f"entry {entry.seq}: malformed {entry.kind} payload ({exc})"
                )
        with self._lock:
            self.malformed += problem is not None
            self._entries.append(entry)
            if viewed is not None:
                self._releases.append(viewed)
                _add_charge(self._costs, self.in_unit(viewed.contribution.charge))
                charge = viewed.contribution.charge
                if charge.delta > 0:  # δ adds up per cell, like α, on the cells the release charges
                    self._deltas += charge.delta * (charge.dense(self._deltas.size) > 0)
                if viewed.in_history:
                    self._rows.extend(HistoryRow(*r) for r in viewed.contribution.rows)
            self._charges.append((entry.seq, viewed.contribution.charge if viewed is not None else None))
        if problem is not None:
            raise MalformedEntry(problem)
        return viewed

    def _read(self, entry: LedgerEntry, rows_before: int) -> tuple[ViewedRelease | None, str | None]:
        """What a release entry contributes (None for other kinds), or the problem reading it."""
        if entry.kind not in kinds():
            return None, None
        try:
            mech = mechanism_of(entry)
            contribution = mech.contribution(thaw(entry.payload), self.schema.shape)
        except (KeyError, TypeError, ValueError, DpdeskError) as exc:
            return None, f"entry {entry.seq}: malformed {entry.kind} payload ({exc})"
        if any(r.query.layout not in (None, self.layout) for r in contribution.rows):
            return None, f"entry {entry.seq}: its measures' clamp bounds are not the schema's"
        if contribution.charge.measure != "epsilon" and self.accounting is None:  # only zCDP adds ρ
            return None, f"entry {entry.seq}: {mech.name} is priced in ρ (zCDP), the project in pure ε"
        return ViewedRelease(
            entry, mech, contribution, rows_before, len(contribution.rows) <= HISTORY_ROW_LIMIT
        ), None

    def _row_count(self) -> int:
        return self._rows_offset + len(self._rows)

    @property
    def history_rows(self) -> int:
        """How many noisy rows the History holds (or will, once :meth:`assessing` extends it)."""
        with self._lock:
            return self._row_count()

    def extend(self, entries: Iterable[LedgerEntry]) -> None:
        for e in entries:
            self.add(e)

    @property
    def _measure(self) -> str:
        """The unit per-cell totals are kept in: ``"epsilon"``, or ``"rho"`` under zCDP."""
        return "epsilon" if self.accounting is None else "rho"

    def in_unit(self, charge: Charge) -> Charge:
        """``charge`` as the per-cell totals add it: as it is (pure ε), or in ρ under zCDP."""
        return charge if self.accounting is None else self.accounting.unit(charge, self.schema.n_cells)

    # -- reading ---------------------------------------------------------------------------------
    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        self._materialise()
        with self._lock:
            return tuple(self._entries)

    @property
    def releases(self) -> tuple[ViewedRelease, ...]:
        self._materialise()
        with self._lock:
            return tuple(self._releases)

    @property
    def cell_costs(self) -> np.ndarray:
        """Per-cell privacy loss of everything released (paper Thm 5.4): a read-only copy, the same object
        until the next release is added."""
        with self._lock:
            return self._costs.snapshot()

    @property
    def system_cost(self) -> float:
        """One person's privacy loss from everything released so far: the largest per-cell cost when one
        row is one person, else the sum over the cells a person's rows can fall in (``rule``)."""
        with self._lock:
            v = self._costs.values
            return (
                self.rule.total(v, self._measure)
                if v.size and (self._releases or self._prefix_releases)
                else 0.0
            )

    @property
    def claims(self) -> tuple[WatchedClaim, ...]:
        """The claims watched now, each with the risk it has spent (recomputed from the ledger)."""
        with self._lock:
            return self._book.active

    def next_claim_id(self) -> str:
        with self._lock:
            return self._book.next_id()

    @property
    def structured_releases(self) -> tuple[ViewedRelease, ...]:
        """Releases whose rows did not join the History (over :data:`HISTORY_ROW_LIMIT`): answer from
        their own structure (their ``contribution.rows`` / payload), e.g. a large partition release."""
        if self._prefix_structured:
            self._materialise()
        with self._lock:
            return tuple(r for r in self._releases if not r.in_history)

    @property
    def cell_deltas(self) -> np.ndarray:
        """Per-cell δ: the sum of the δ of the (α, δ) releases charging each cell (a read-only copy)."""
        with self._lock:
            out = self._deltas.copy()
        out.setflags(write=False)
        return out

    @property
    def delta_spent(self) -> float:
        """One person's δ (0 while every release is pure; the largest per-cell δ when one row is one
        person): with :attr:`system_cost`, the (α, δ) guarantee of everything released."""
        with self._lock:
            if not self._deltas.size:
                return 0.0
            if self.rule.rows_are_people:
                return float(self._deltas.max())
            return self.rule.delta(self._costs.values, self._deltas)

    def cost_curve(self) -> list[tuple[int, float]]:
        """``(seq, system cost after it)`` for every entry, starting at ``(0, 0.0)``."""
        self._materialise()
        with self._lock:
            for seq, charge in self._charges[len(self._curve) - 1 :]:
                if charge is not None:
                    self._curve_top = max(
                        self._curve_top, _add_for_curve(self._curve_costs, self.in_unit(charge))
                    )
                    self._curve_released = True
                    if self.rule.group_axes is not None:  # a sum of the largest cells: not a running max
                        self._curve_top = self.rule.total(self._curve_costs.values, self._measure)
                factor = self.rule.factor(self._measure)
                top = self._curve_top * factor if self.rule.group_axes is None else self._curve_top
                self._curve.append((seq, top if self._curve_released else 0.0))
            return list(self._curve)

    def largest_charges(self) -> dict[int, float]:
        """Entry seq → the most any one cell paid for that release (its α; 0 for a free one)."""
        n = self.schema.n_cells  # from each release's query, never a dense vector of the cube per release
        return {r.entry.seq: self.in_unit(r.contribution.charge).largest(n) for r in self.releases}

    def spenders(self, cell: int) -> list[tuple[str, float]]:
        """(request id, or "entry N" for a release without one; its charge on ``cell``) per charging release."""
        out = []
        for r in self.releases:
            charge = self.in_unit(r.contribution.charge)
            share = charge.at(cell) if charge.terms else 0.0
            if share > 0:
                out.append((r.entry.request_id or f"entry {r.entry.seq}", share))
        return out

    def answering_release(self, seq: int) -> Any | None:
        """What answers from the structure of release entry ``seq`` if it was kept out of the History
        (a ``PartitionRelease``, read from its payload once); None for any other entry."""
        self._materialise()
        with self._lock:
            viewed = next((r for r in self._releases if r.entry.seq == seq and not r.in_history), None)
            if viewed is None or seq in self._structured:
                return None if viewed is None else self._structured[seq]
        # read outside the lock (a large release takes a while): the GUI thread keeps reading costs
        from dpdesk.engine.partition.release import structured_release  # (scipy.fft) only for such releases

        release = structured_release(viewed.mechanism, thaw(viewed.entry.payload), self.schema)
        with self._lock:
            return self._structured.setdefault(seq, release)

    def _answering(self, structured: list[ViewedRelease]) -> tuple[tuple[int, Any], ...]:
        out = ((r.entry.seq, self.answering_release(r.entry.seq)) for r in structured)
        return tuple((seq, rel) for seq, rel in out if rel is not None)

    @contextlib.contextmanager
    def assessing(self) -> Iterator[AssessState]:
        """The history, costs and head of one moment, the History extended to it (held while in use)."""
        with self._history_lock:
            with self._lock:
                rows, costs, head, deltas = list(self._rows), self.cell_costs, self.head, self.cell_deltas
                offset = self._rows_offset
                structured, claims = self.structured_releases, self._book.active
            h = self._history
            if h is None or len(h) > offset + len(rows) or len(h) < offset:
                if offset:  # a restored view always keeps its History; anything else is a bug
                    raise StoreError("the cached view lost its history")
                h = self._history = History(self.schema.shape, layout=self.layout)
                self.history_builds += 1
            for row in rows[len(h) - offset :]:
                h.append(row)
            yield AssessState(h, costs, head, deltas, structured, self._answering(list(structured)), claims)
