"""The ledger of a project file, as one service: its entries (hash-chained, append-only), the one
fsync'd append every decision goes through, refusals, and the ledger view derived from it — history,
per-cell costs, cost curve, who spent what — with the view's cache beside the file.

The view only grows: it is extended with the entries recorded since it was last read (a sibling
connection on a worker shares it and may extend it meanwhile); a ledger that does not continue the
one read so far (another file under this name) starts it over.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from dpdesk.engine.inference.history import History
from dpdesk.store import db, ledger, view_cache
from dpdesk.store.binding import SourceBinding
from dpdesk.store.canonical import utc_now
from dpdesk.store.checkpoints import checkpoint, install_sqlite, remove_sqlite
from dpdesk.store.errors import RequestStateError, StoreError, Unsettled
from dpdesk.store.file import ProjectFile
from dpdesk.store.ledger import LedgerEntry
from dpdesk.store.queue import RequestQueue
from dpdesk.store.requests import request_digest
from dpdesk.store.view import LedgerView

REQUESTS_CHAINED = 10  # the format from which a deciding entry records its request's digest (store/db.py)

__all__ = ["LedgerBook", "keyed_source_table", "write_source"]

_RESUMED = ("batch", "measurement")  # entries a command run again resumes from (store/batch.py)
_CHAIN_SHARE = 0.9  # of saving the view cache: checking the chain hash by hash is nearly all of it


class LedgerBook:
    """The ledger and its view, for one open project file (see the module docstring)."""

    def __init__(self, file: ProjectFile, queue: RequestQueue, view: LedgerView | None = None) -> None:
        self.file, self.queue = file, queue
        self._view = view

    @property
    def loaded_view(self) -> LedgerView | None:
        """The view read so far (None: never read), without reading anything."""
        return self._view

    def adopt(self, view: LedgerView | None) -> None:
        """Take the view a sibling read on a worker, unless this book has one already."""
        if self._view is None:
            self._view = view

    def view(self) -> LedgerView:
        """The project's ledger view, extended with the entries recorded since it was last read."""
        if self._view is None:
            self._view = self._cached_view() or LedgerView(
                self.file.schema, self.file.genesis, self.file.accounting
            )
        view = self._view
        with view.growing():  # a sibling on a worker thread shares this view
            fresh = [ledger.decode(r) for r in ledger.raw_rows(self.file.connection, after=view.head[0])]
            if not fresh or view.extends(fresh[0]):
                view.extend(fresh)
                return view
        # the ledger does not continue the one read so far (another file under this name): start over
        self._view = view = LedgerView(self.file.schema, self.file.genesis, self.file.accounting)
        view.extend(ledger.decode(r) for r in ledger.raw_rows(self.file.connection))
        return view

    def _cached_view(self) -> LedgerView | None:
        """The view stored beside the file for a head this ledger holds (``store/view_cache.py``), or None."""
        conn, path = self.file.connection, self.file.path

        def load_prefix(seq: int) -> list[ledger.LedgerEntry]:
            # its own read-only connection: the entries are asked for later, maybe on another thread than
            # this connection's (the app loads the view on a worker and reads the ledger table on another)
            ro = db.connect_readonly(path)
            try:
                return [ledger.decode(r) for r in ledger.raw_rows(ro, upto=seq)]
            finally:
                ro.close()

        return view_cache.load(
            self.file.path,
            self.file.schema,
            self.file.genesis,
            lambda seq: ledger.entry_hash(conn, seq),
            load_prefix,
            self.file.accounting,
        )

    def view_cache_worth_saving(self) -> bool:
        """Whether :meth:`save_view_cache` may have something to write — a quick test (no History work,
        no chain check): a view was read, the cache is on, and the view is long enough to be cached."""
        return (
            self._view is not None and view_cache.enabled() and self._view.history_rows >= view_cache.MIN_ROWS
        )

    def save_view_cache(
        self, *, progress: Callable[[float], None] | None = None, cancelled: Callable[[], bool] | None = None
    ) -> bool:
        """Store the ledger view beside the file when it holds more than the cache there (a new head or a
        factorisation it lacks); the chain is checked hash by hash first. Returns whether it wrote.

        ``Project.close`` calls it; the app calls it earlier on a worker through a sibling connection
        (which shares the view), so closing then has nothing left to write. ``progress(f)`` hears the
        fraction done (the chain check is most of it); ``cancelled()`` is asked as often and
        :class:`~dpdesk.engine.errors.Cancelled` raised when it says so (nothing is written then: the cache
        is only an accelerator, and the one there, if any, stays as it was).
        """
        if self._view is None:
            return False
        view = self.view()  # with the entries recorded since it was last read
        if view.history_rows < view_cache.MIN_ROWS:
            return False
        with view.assessing() as state:
            spaces = state.history.spaces
            if view.cache_key == state.head and set(spaces) <= set(view.cache_spaces):
                return False
        conn = self.file.connection

        def chain_ok(seq: int) -> bool:
            return (
                ledger.check_chain(
                    ledger.raw_rows(conn, upto=seq),
                    self.file.genesis,
                    cancelled=cancelled,
                    progress=None if progress is None else lambda f: progress(_CHAIN_SHARE * f),
                )[1]
                is None
            )

        return view_cache.save(
            self.file.path,
            view,
            chain_ok,
            cancelled=cancelled,
            progress=None if progress is None else lambda f: progress(_CHAIN_SHARE + (1 - _CHAIN_SHARE) * f),
        )

    def settled(self) -> None:
        """Make sure the main file holds every commit (before a recorded release is shown again)."""
        if self.file.mode != "w":
            return
        try:
            settled = db.settle(self.file.connection)
        except sqlite3.Error as exc:
            raise Unsettled(db.unsettled_line(self.file.connection, exc)) from None
        if not settled:
            name = self.file.path.name
            raise Unsettled(
                f"{name}: its last changes are in {name}-wal but cannot be written into {name} now "
                "(another program is reading it); close it and run the command again"
            )

    def head(self) -> tuple[int, str]:
        """``(seq, hash)`` of the newest ledger entry; ``(0, genesis hash)`` for an empty ledger."""
        return ledger.head(self.file.connection) or (0, self.file.genesis)

    def history(self) -> History:
        """The engine's History of everything released (the view's; extended, never rebuilt)."""
        with self.view().assessing() as state:
            return state.history

    def entries(self) -> list[LedgerEntry]:
        """All entries in sequence order (decoded, not verified: use :meth:`verify` for that)."""
        return [ledger.decode(r) for r in ledger.raw_rows(self.file.connection)]

    def entry_for(self, request_id: str) -> LedgerEntry | None:
        """The ledger entry that decided ``request_id`` (a release of any kind, or a refusal), if any."""
        row = self.file.connection.execute(
            "SELECT seq, time, kind, request_id, payload, prev_hash, hash FROM ledger WHERE request_id = ?",
            (request_id,),
        ).fetchone()
        return ledger.decode(ledger.RawRow(*row)) if row else None

    def reject(self, request_id: str, reason: str = "") -> LedgerEntry:
        """Record the refusal of a pending request (spends nothing)."""
        self.file.require_writer()
        req = self.queue.request(request_id)
        done = self.entry_for(request_id)
        if done is not None or req.status != "pending":
            raise RequestStateError(
                f"request {request_id!r} is already {req.status}"
                + (f" (ledger entry {done.seq})" if done else "")
            )
        return self.record(
            "rejected", request_id, {"reason": reason or "rejected by the curator"}, "rejected"
        )

    def record(
        self,
        kind: str,
        request_id: str | None,
        payload: dict[str, Any],
        status: str | None,
        source: SourceBinding | None = None,
    ) -> LedgerEntry:
        """Append one entry (and the request's new status) in one fsync'd transaction, written into the
        main file before it returns (:mod:`dpdesk.store.db`: announced, committed, settled).

        Raises :class:`~dpdesk.store.errors.Unsettled` when the entry is committed but a reader kept it
        from reaching the main file: it must not be shown yet (the next writer, or a retry, settles it).
        """
        conn = self.file.connection
        db.announce(conn, self.head()[0] + 1, kind, request_id, utc_now())  # nothing recorded if it fails
        checkpoint("tx:announced")
        install_sqlite(conn)
        try:
            with db.transaction(conn, must_settle=True, committed=lambda: checkpoint("tx:committed")):
                checkpoint("tx:begun")
                if request_id is not None and self.file.format_version >= REQUESTS_CHAINED:
                    # what the decision depends on goes under the chain with it
                    payload = {**payload, "request_digest": request_digest(conn, request_id)}
                entry = ledger.append(
                    conn, self.file.genesis, time=utc_now(), kind=kind, request_id=request_id, payload=payload
                )
                checkpoint("tx:appended")
                if status is not None:
                    cur = conn.execute(
                        "UPDATE requests SET status = ? WHERE id = ? AND status = 'pending'",
                        (status, request_id),
                    )
                    if cur.rowcount != 1:
                        raise RequestStateError(f"request {request_id!r} is no longer pending")
                if source is not None:
                    write_source(conn, source)
                db.landed(conn)
                checkpoint("tx:committing")
        except Unsettled as exc:  # committed: the announcement is gone with it
            if (request_id is not None or kind in _RESUMED) and "dpdesk project settle" in str(exc):
                # a decided request shows its recorded entry, a batch resumes: running it again is safe
                raise Unsettled(
                    f"{exc}, then this command again (it shows what was recorded and draws nothing twice)"
                ) from None
            raise
        except sqlite3.IntegrityError as exc:
            db.clear_in_flight(conn)
            raise RequestStateError(
                f"request {request_id!r} already has a decision in the ledger ({exc})"
            ) from None
        except BaseException:
            db.clear_in_flight(conn)
            raise
        finally:
            remove_sqlite(conn)
        checkpoint("tx:settled")
        self.file.receipt([(entry.seq, entry.hash)], "recorded")
        return entry


def keyed_source_table(conn: sqlite3.Connection) -> bool:
    """Whether the file's source table holds keyed bindings (format 8 on)."""
    return any(r[1] == "key_id" for r in conn.execute("PRAGMA table_info(source)"))


def write_source(conn: sqlite3.Connection, s: SourceBinding) -> None:
    columns = ["location", "table_name", "fingerprint_method", "fingerprint", "row_count", "out_of_domain"]
    values: list[Any] = [
        s.location,
        s.table,
        s.fingerprint_method,
        s.fingerprint,
        s.row_count,
        s.out_of_domain,
    ]
    columns.append("bound_at")
    values.append(s.bound_at)
    if keyed_source_table(conn):
        columns += ["key_id", "salt"]
        values += [s.key_id, s.salt]
    elif s.keyed:
        raise StoreError("a keyed source binding needs project format 8")
    conn.execute(
        f"INSERT INTO source (id, {', '.join(columns)}) VALUES (1, {', '.join('?' * len(columns))}) "
        f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in columns)}",
        values,
    )
