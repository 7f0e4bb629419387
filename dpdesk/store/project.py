"""A dpdesk project: one SQLite file holding the settings, the data binding, the request queue and
the hash-chained privacy ledger.

:class:`Project` is the open file (its connection, fixed settings, writer lock and source binding) and
the services over it, each in its own module with a typed interface: :attr:`Project.queue`
(:class:`~dpdesk.store.queue.RequestQueue`), :attr:`Project.book` (the ledger and its view,
:class:`~dpdesk.store.ledger_book.LedgerBook`), :attr:`Project.answering`
(:class:`~dpdesk.store.settings.AnsweringSettings`), :attr:`Project.releaser` (the one release path,
:class:`~dpdesk.store.releasing.Releaser`: ``assess`` → the curator confirms → ``release(plan)``),
:attr:`Project.watched` (:class:`~dpdesk.store.watching.Claims`) and :attr:`Project.exports`
(:class:`~dpdesk.store.exports.Exports`). The project's own methods of the same names are one-line
delegations to them, the API every front end and script uses. Budget figures are always recomputed
from the ledger through the ledger view (:mod:`dpdesk.store.view`).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.history import History
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.kinds.base import Asked
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.mechanisms.base import Basis, ReleasePlan
from dpdesk.engine.mechanisms.noise import NoiseSampler
from dpdesk.engine.schema import Schema
from dpdesk.store import db, receipts
from dpdesk.store.binding import (
    Snapshot,
    SourceBinding,
    bound_order_key,
    changed,
    keyed_binding,
    order_key,
    snapshot,
    unkeyed_binding,
)
from dpdesk.store.canonical import utc_now
from dpdesk.store.creating import create_checked, read_accounting
from dpdesk.store.errors import BindingError, ReadOnlyError, StoreError
from dpdesk.store.exports import Exports
from dpdesk.store.ledger import LedgerEntry
from dpdesk.store.ledger_book import LedgerBook, keyed_source_table
from dpdesk.store.lock import WriterLock
from dpdesk.store.queue import RequestQueue
from dpdesk.store.release import Release
from dpdesk.store.releasing import Releaser
from dpdesk.store.requests import StoredRequest
from dpdesk.store.settings import AnsweringSettings
from dpdesk.store.source_key import own_key
from dpdesk.store.verify import AuditRecord, VerifyReport
from dpdesk.store.view import LedgerView
from dpdesk.store.watch import WatchedClaim
from dpdesk.store.watching import Claims, ClaimStatus


class Project:
    """An open project file. Use :meth:`create` or :meth:`open`; close with :meth:`close` or ``with``."""

    _parent: Project | None = None  # a sibling's parent (:meth:`sibling`): the one that writes the cache

    def __init__(self, path: Path, conn: sqlite3.Connection, mode: str, lock: WriterLock | None) -> None:
        self.path = path
        self.mode = mode
        self._conn = conn
        self._lock = lock
        self._snapshot: Snapshot | None = None
        self._parent: Project | None = None  # a sibling's project (see :meth:`sibling`)
        self.unsettled: str | None = None  # why closing could not copy the log into the file (:meth:`close`)
        row = conn.execute(
            "SELECT name, total_budget, neighbour_model, schema_json, test_project, created, "
            "initial_source_json, genesis_hash FROM project WHERE id = 1"
        ).fetchone()
        if row is None:
            raise StoreError(f"{path.name}: the project row is missing (damaged project file)")
        (
            self.name,
            self.total_budget,
            self.neighbour_model,
            self._schema_json,
            test,
            self.created,
            self._initial_source_json,
            self.genesis,
        ) = row
        self.test_project = bool(test)
        (self.format_version,) = conn.execute("PRAGMA user_version").fetchone()
        try:
            cap = conn.execute("SELECT delta_cap FROM project WHERE id = 1").fetchone()
        except sqlite3.OperationalError:  # a file of format 3 or older, opened read-only
            cap = None
        self.delta_cap = float(cap[0]) if cap else 0.0  # the largest per-cell δ releases may reach
        self.accounting = read_accounting(conn, path, float(self.total_budget))  # None: pure ε
        try:
            self.schema = Schema.from_dict(json.loads(self._schema_json))
        except (ValueError, TypeError) as exc:
            raise StoreError(f"{path.name}: the stored schema is unreadable ({exc})") from None
        self._services()

    def _services(self, parsed: dict[str, Any] | None = None, view: LedgerView | None = None) -> None:
        """The services over this file (a sibling shares its parent's parsed queue and ledger view)."""
        self.queue = RequestQueue(self, parsed)
        self.book = LedgerBook(self, self.queue, view)
        self.answering = AnsweringSettings(self)
        self.watched = Claims(self, self.book, self.answering)
        self.releaser = Releaser(self, self.queue, self.book, self.answering, self.watched, self.snapshot)
        self.exports = Exports(self, self.queue, self.book, self.settings, lambda: self.source.identity())

    # -- opening and creating --------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str], mode: str = "r") -> Project:
        """Open a project: ``"r"`` read-only (no lock, never writes), ``"w"`` as the single writer."""
        if mode not in ("r", "w"):
            raise ValueError(f"mode ({mode!r}) must be 'r' or 'w'")
        path = Path(path)
        lock = WriterLock(path).acquire() if mode == "w" and path.is_file() else None
        try:
            conn = db.open_checked(path, mode)
            return cls(path, conn, mode, lock)
        except BaseException:
            if lock is not None:
                lock.release()
            raise

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        name: str,
        schema: Schema | dict[str, Any],
        source_location: str,
        source_table: str | None = None,
        total_budget: float,
        test_project: bool = False,
        delta_cap: float = 0.0,
        accounting: str = "pure",
        delta: float | None = None,
    ) -> Project:
        """Create a project bound to a source and open it for writing. Nothing is written on error.

        ``delta_cap`` bounds every cell's δ (the sum over the (α, δ) releases charging it); 0 allows
        only pure α-DP releases. Like the total budget it is fixed for the project's life.

        ``accounting`` is ``"pure"`` (per-cell ε, the default) or ``"zcdp"``: per-cell ρ, the system cost
        the largest cell's ρ converted to ε at ``delta`` (required for zCDP; engine/budget/mode.py).
        """
        path = Path(path)
        snap = create_checked(
            path,
            name,
            schema,
            (source_location, source_table),
            total_budget,
            test_project,
            delta_cap,
            accounting,
            delta,
        )
        project = cls.open(path, "w")
        project._snapshot = snap
        return project

    def sibling(self) -> Project:
        """Another connection to this project for one worker thread, under this project's writer lock.

        SQLite connections belong to the thread that opened them, so a release off the GUI thread runs
        on a sibling opened there (WAL: this project's connection keeps reading the last committed
        state meanwhile). The sibling starts from this project's source snapshot and hands back the one
        it builds, so the table is scanned once, and shares this project's ledger view (or hands back the
        one it loaded, so a long ledger's view can be read off the GUI thread); closing it never releases
        the lock. Call it on the worker thread that will use it.
        """
        self._require_writer()
        sib = Project(self.path, db.connect_writer(self.path), "w", None)
        sib._snapshot = self._snapshot
        # one ledger view for both (it locks while it grows; no SQL on this thread) and one parsed queue
        sib._services(self.queue.parsed, self.book.loaded_view)
        sib._parent = self
        return sib

    def close(self, save_cache: bool = True) -> None:
        """Close the file (and release its writer lock). Unless ``save_cache`` is False, the ledger-view
        cache is written first when it is worth it (:meth:`save_view_cache`; never by a sibling: its
        parent's view is the same, and the parent writes it when it closes)."""
        parent = self._parent
        if parent is not None and parent._snapshot is None:
            parent._snapshot = self._snapshot
        if parent is not None:  # a view a worker loaded serves the parent too
            parent.book.adopt(self.book.loaded_view)
        try:
            try:
                if save_cache and parent is None:
                    self.save_view_cache()  # derived and optional: a failure here never keeps the file from closing
            except (DpdeskError, OSError, sqlite3.Error, MemoryError):
                pass
            if self.mode == "w" and parent is None:
                self.unsettled = db.settle_on_close(self._conn, self.path)
            self._conn.close()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        """Close; a log that could not be copied into the file is reported (unless an error already is)."""
        self.close()
        if self.unsettled is not None and exc[0] is None:
            raise StoreError(self.unsettled)

    # -- settings and binding --------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The fixed settings the ledger's genesis hash covers (as stored now)."""
        return (
            {
                "name": self.name,
                "total_budget": float(self.total_budget),
                "neighbour_model": self.neighbour_model,
                "schema": json.loads(self._schema_json),
                "test_project": self.test_project,
                "created": self.created,
                "initial_source": json.loads(self._initial_source_json),
            }
            | ({"delta_cap": self.delta_cap} if self.delta_cap else {})
            | ({} if self.accounting is None else {"accounting": self.accounting.to_json()})
        )

    @property
    def spend_policy(self) -> SpendPolicy | None:
        """The curator's spend policy (None: the greedy rule)."""
        return self.answering.spend_policy

    def set_spend_policy(self, policy: SpendPolicy | None) -> None:
        self.answering.set_spend_policy(policy)

    @property
    def prior(self) -> BoundedPrior | None:
        """The known-bounds prior from the declared table size (None: the flat prior)."""
        return self.answering.prior

    def set_prior(self, prior: BoundedPrior | None) -> None:
        self.answering.set_prior(prior)

    @property
    def look_ahead(self) -> float | None:
        """The batch plans' look-ahead share (None: off)."""
        return self.answering.look_ahead

    def set_look_ahead(self, share: float | None) -> None:
        self.answering.set_look_ahead(share)

    def answering_settings(self) -> Settings:
        """The curator's answering rules now: total budget, spend policy, known-bounds prior."""
        return self.answering.now()

    def table_size(self) -> float | None:
        """The declared public table size (None: none declared)."""
        return self.answering.table_size()

    @property
    def source(self) -> SourceBinding:
        keyed = keyed_source_table(self._conn)
        row = self._conn.execute(
            "SELECT location, table_name, fingerprint_method, fingerprint, row_count, out_of_domain, bound_at"
            + (", key_id, salt" if keyed else "")
            + " FROM source WHERE id = 1"
        ).fetchone()
        if row is None:
            raise StoreError(f"{self.path.name}: the source row is missing (damaged project file)")
        return SourceBinding(*row)

    def snapshot(
        self, progress: Callable[[float], None] | None = None, cancelled: Callable[[], bool] | None = None
    ) -> Snapshot:
        """The source as it is now (its cube rebuilt); cached for this open project.
        ``progress``/``cancelled``: see :func:`dpdesk.store.binding.snapshot` (used when it reads the source)."""
        if self._snapshot is None:
            src = self.source
            order = bound_order_key(src, self.schema)
            self._snapshot = snapshot(src.location, src.table, self.schema, progress, cancelled, order)
        return self._snapshot

    def binding_problem(self) -> str | None:
        """None when the source still matches its fingerprint, else why not (vanished, changed, or not
        checkable here: its key is on another machine)."""
        src = self.source
        try:
            return changed(src, self.snapshot())
        except DpdeskError as exc:
            return f"{exc}"
        except OSError as exc:  # an unkeyed binding of format 7 or older hashes the files again
            return f"source {src.location}: cannot read it ({exc.strerror or exc})"

    def cube(self) -> Cube:
        """The cube rebuilt from the bound source; refuses when the source vanished or changed."""
        problem = self.binding_problem()
        if problem is not None:
            raise BindingError(
                f"{problem}; run `dpdesk project rebind {self.path}` to accept the data as it is now, "
                "or open the project read-only"
            )
        return self.snapshot().cube

    # -- the queue (store/queue.py) ----------------------------------------------------------------
    def requests(self, status: str | None = None) -> list[StoredRequest]:
        return self.queue.requests(status)

    def request(self, request_id: str) -> StoredRequest:
        return self.queue.request(request_id)

    def add_request(
        self,
        query: object,
        eps: object = None,
        delta: object = None,
        requester: str = "",
        request_id: str | None = None,
        alpha: object = None,
    ) -> StoredRequest:
        """Queue one request of any kind (:meth:`RequestQueue.add <dpdesk.store.queue.RequestQueue.add>`)."""
        return self.queue.add(query, eps, delta, requester, request_id, alpha)

    def import_requests(self, path: str | os.PathLike[str]) -> list[StoredRequest]:
        """Queue every request of a JSON or CSV file, all or none."""
        return self.queue.import_file(path)

    def edit_request(
        self,
        request_id: str,
        query: object,
        eps: object = None,
        delta: object = None,
        requester: str = "",
        alpha: object = None,
    ) -> StoredRequest:
        """Change a *pending* request (an answered or rejected one is part of the record)."""
        return self.queue.edit(request_id, query, eps, delta, requester, alpha)

    def delete_request(self, request_id: str) -> None:
        """Remove a *pending* request from the queue."""
        self.queue.delete(request_id)

    # -- the ledger and its view (store/ledger_book.py) ---------------------------------------------
    def ledger(self) -> list[LedgerEntry]:
        """All entries in sequence order (decoded, not verified: use :meth:`verify` for that)."""
        return self.book.entries()

    def entry_for(self, request_id: str) -> LedgerEntry | None:
        """The ledger entry that decided ``request_id`` (a release of any kind, or a refusal), if any."""
        return self.book.entry_for(request_id)

    def reject(self, request_id: str, reason: str = "") -> LedgerEntry:
        """Record the refusal of a pending request (spends nothing)."""
        return self.book.reject(request_id, reason)

    def head(self) -> tuple[int, str]:
        """``(seq, hash)`` of the newest ledger entry; ``(0, genesis hash)`` for an empty ledger."""
        return self.book.head()

    def settled(self) -> None:
        """Make sure the main file holds every commit (before a recorded release is shown again)."""
        self.book.settled()

    def view(self) -> LedgerView:
        """The ledger view, extended with the entries recorded since it was last read."""
        return self.book.view()

    def history(self) -> History:
        """The engine's History of everything released (the view's; extended, never rebuilt)."""
        return self.book.history()

    def view_cache_worth_saving(self) -> bool:
        return self.book.view_cache_worth_saving()

    def save_view_cache(
        self, *, progress: Callable[[float], None] | None = None, cancelled: Callable[[], bool] | None = None
    ) -> bool:
        """Store the ledger view beside the file (:meth:`LedgerBook.save_view_cache
        <dpdesk.store.ledger_book.LedgerBook.save_view_cache>`)."""
        return self.book.save_view_cache(progress=progress, cancelled=cancelled)

    # -- the release path (store/releasing.py) -------------------------------------------------------
    def basis(self, method: str | None = None, seed: int | None = None) -> Basis:
        return self.releaser.basis(method, seed)

    def plan_inputs(self) -> dict[str, Any]:
        return self.releaser.plan_inputs()

    def plan(self, asked: Asked, **options: Any) -> ReleasePlan:
        """The plan of ``asked`` now, from the one assess function (:meth:`Releaser.plan
        <dpdesk.store.releasing.Releaser.plan>`)."""
        return self.releaser.plan(asked, **options)

    def assess(self, request_id: str, **options: Any) -> ReleasePlan:
        """The plan of a stored request now (:meth:`Releaser.assess <dpdesk.store.releasing.Releaser.assess>`)."""
        return self.releaser.assess(request_id, **options)

    def release(
        self,
        plan: ReleasePlan,
        sampler: NoiseSampler | None = None,
        *,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Release:
        """Record exactly ``plan`` (:meth:`Releaser.release <dpdesk.store.releasing.Releaser.release>`)."""
        return self.releaser.release(plan, sampler, progress=progress, cancelled=cancelled)

    def answer(self, request_id: str, sampler: NoiseSampler | None = None, **options: Any) -> Release:
        """Assess a pending request and release exactly that (:meth:`Releaser.answer
        <dpdesk.store.releasing.Releaser.answer>`)."""
        return self.releaser.answer(request_id, sampler, **options)

    # -- watched claims (store/watching.py) ----------------------------------------------------------
    def watch(
        self, query: object, low: object, high: object, threshold: object, risk: object, name: str = ""
    ) -> WatchedClaim:
        return self.watched.watch(query, low, high, threshold, risk, name)

    def unwatch(self, claim_id: str, reason: str = "") -> LedgerEntry:
        return self.watched.unwatch(claim_id, reason)

    def claims(self) -> tuple[WatchedClaim, ...]:
        return self.watched.claims()

    def claim_statuses(self, plan: ReleasePlan | None = None) -> list[ClaimStatus]:
        return self.watched.statuses(plan)

    def claim_trace(self, claim_id: str) -> list[tuple[int, float | None]]:
        return self.watched.trace(claim_id)

    def rebind(self) -> LedgerEntry:
        """Accept the source's current data: record the old and new bindings in the ledger.

        The new binding is keyed with this machine's source key (:mod:`dpdesk.store.source_key`); it holds
        no count. A rebind also replaces an unkeyed binding of format 7 or older, data changed or not.
        """
        self._require_writer()
        old = self.source
        self._snapshot = None
        if keyed_source_table(self._conn):
            key = own_key()  # the cube is rebuilt in this key's order: the one the new binding names
            order = order_key(key) if self.schema.unit.column else None
            self._snapshot = snap = snapshot(old.location, old.table, self.schema, order=order)
            new = keyed_binding(old.location, old.table, snap.cube, key, utc_now())
        else:  # a file of an older format (only the tests write one)
            snap = self.snapshot()
            new = unkeyed_binding(old.location, old.table, snap.cube, utc_now())
        payload = {"previous": old.identity(), "current": new.identity()}
        return self.book.record("rebind", None, payload, None, source=new)

    def require_writer(self) -> None:
        """Raise ``ReadOnlyError`` unless the file is open for writing."""
        self._require_writer()

    def receipt(self, heads: Sequence[tuple[int, str]], what: str) -> None:
        """Keep ``heads`` of this project's ledger in the curator's receipt log (:mod:`dpdesk.store.receipts`),
        outside the file, so that ``verify`` can later tell when the file falls behind one of them."""
        receipts.record(self.genesis, heads, what, self.path)

    def _require_writer(self) -> None:
        if self.mode != "w":
            raise ReadOnlyError(f"{self.path.name} is open read-only")

    # -- audit (store/exports.py) ------------------------------------------------------------------
    def verify(
        self,
        extends: Sequence[str] = (),
        *,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> VerifyReport:
        """Audit the file (:mod:`dpdesk.store.verify`); ``extends``: ledger heads it must still contain."""
        return self.exports.verify(extends, progress=progress, cancelled=cancelled)

    def audit_record(self) -> AuditRecord:
        return self.exports.audit_record()

    def export_history(self) -> dict[str, Any]:
        return self.exports.history()

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection: the services read and write the file through it (tests of the file
        format read it too; nothing else writes through it)."""
        return self._conn
