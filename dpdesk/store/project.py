"""A dpdesk project: one SQLite file holding the settings, the data binding, the request queue and
the hash-chained privacy ledger.

Releases go through the one release path of :mod:`dpdesk.store.releasing` (``assess`` → the curator
confirms → ``release(assessment)``); budget figures are always recomputed from the ledger through the
ledger view (:mod:`dpdesk.store.view`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dpdesk.engine.budget.accounting import check_delta_cap, check_total_budget
from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.limits import check_table_size
from dpdesk.engine.queries.query import product_form, query_from_json
from dpdesk.engine.queries.text import parse_query
from dpdesk.engine.schema import Schema
from dpdesk.store import answering, db, ledger, receipts
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
from dpdesk.store.canonical import canonical_json, genesis_hash, utc_now
from dpdesk.store.checkpoints import checkpoint, install_sqlite, remove_sqlite
from dpdesk.store.errors import (
    BindingError,
    ReadOnlyError,
    RequestStateError,
    StoreError,
)
from dpdesk.store.ledger import LedgerEntry
from dpdesk.store.lock import WriterLock
from dpdesk.store.releasing import Releasing
from dpdesk.store.requests import (
    NewRequest,
    StoredRequest,
    make_request,
    read_request_file,
    request_digest,
    request_digests,
)
from dpdesk.store.source_key import own_key
from dpdesk.store.verify import AuditRecord, VerifyReport, verify
from dpdesk.store.watching import Watching

NEIGHBOUR_MODEL = "add/remove one record"
REQUESTS_CHAINED = 10  # the format from which a deciding entry records its request's digest (store/db.py)


def neighbour_model(schema: Schema) -> str:
    """The neighbouring tables the project's guarantees are about (one record, or one person's rows)."""
    if schema.unit.rows_are_people:
        return NEIGHBOUR_MODEL
    return f"add/remove one person: {schema.unit.describe()}"


REQUEST_COLUMNS = "id, position, requester, query_text, query_json, eps, delta, received, status, kind, alpha"


class Project(Releasing, Watching):
    """An open project file. Use :meth:`create` or :meth:`open`; close with :meth:`close` or ``with``."""

    _parent: Project | None = None  # a sibling's parent (:meth:`sibling`): the one that writes the cache

    def __init__(self, path: Path, conn: sqlite3.Connection, mode: str, lock: WriterLock | None) -> None:
        self.path = path
        self.mode = mode
        self._conn = conn
        self._lock = lock
        self._snapshot: Snapshot | None = None
        # request id -> (digest of its stored query JSON, text, kind, parsed query): a queue of thousands of
        # index-list queries is parsed once, not on every read of the queue (shared with siblings)
        self._queries: dict[str, tuple[bytes, str | None, str, Any]] = {}
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
        columns = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
        # a file of format 4 or older opened read-only holds count requests only, without kind or α
        self._request_columns = (
            REQUEST_COLUMNS if "kind" in columns else REQUEST_COLUMNS.replace("kind, alpha", "'count', NULL")
        )
        try:
            self.schema = Schema.from_dict(json.loads(self._schema_json))
        except (ValueError, TypeError) as exc:
            raise StoreError(f"{path.name}: the stored schema is unreadable ({exc})") from None

    # -- opening and creating --------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str], mode: str = "r") -> Project:
        """Open a project: ``"r"`` read-only (no lock, never writes), ``"w"`` as the single writer."""
        if mode not in ("r", "w"):
            raise ValueError(f"mode ({mode!r}) must be 'r' or 'w'")
        path = Path(path)
        lock = WriterLock(path).acquire() if mode == "w" and path.is_file() else None
        try:
            db.check_header(path)  # raw bytes only: a file we cannot parse is never opened for writing
            ro = db.connect_readonly(path)
            try:
                version = db.validate(ro, path)
            except BaseException:
                ro.close()
                raise
            if mode == "r":
                return cls(path, ro, mode, None)
            ro.close()
            conn = db.connect_writer(path)
            if version < db.FORMAT_VERSION:
                db.migrate(conn, version)
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
    ) -> Project:
        """Create a project bound to a source and open it for writing. Nothing is written on error.

        ``delta_cap`` bounds every cell's δ (the sum over the (α, δ) releases charging it); 0 allows
        only pure α-DP releases. Like the total budget it is fixed for the project's life.
        """
        path = Path(path)
        if path.exists() or path.is_symlink():
            raise StoreError(f"{path}: already exists (a project is never overwritten)")
        if not path.parent.is_dir():
            raise StoreError(f"{path}: cannot create it — the folder {path.parent} does not exist")
        check_total_budget(total_budget)
        check_delta_cap(delta_cap)
        if not isinstance(name, str) or not name.strip():
            raise DpdeskError("project name must be non-empty text")
        schema = schema if isinstance(schema, Schema) else Schema.from_dict(schema)
        key = own_key() if db.FORMAT_VERSION >= db.KEYED_SOURCE_FORMAT or schema.unit.column else None
        order = order_key(key) if key is not None and schema.unit.column else None
        snap = snapshot(source_location, source_table, schema, order=order)
        created = utc_now()
        if key is not None and db.FORMAT_VERSION >= db.KEYED_SOURCE_FORMAT:
            initial = keyed_binding(source_location, source_table, snap.cube, key, created)
        else:  # a file of an older format (only the tests make one): bound as that format did
            initial = unkeyed_binding(source_location, source_table, snap.cube, created)
        settings = {
            "name": name.strip(),
            "total_budget": float(total_budget),
            "neighbour_model": neighbour_model(schema),
            "schema": schema.to_dict(),
            "test_project": bool(test_project),
            "created": created,
            "initial_source": initial.identity(),
        }
        if delta_cap:
            settings["delta_cap"] = float(delta_cap)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.creating")
        try:
            conn = sqlite3.connect(str(tmp), isolation_level=None)
            try:
                conn.execute("PRAGMA synchronous = FULL")
                db.initialise(conn)
                with db.transaction(conn):
                    conn.execute(
                        "INSERT INTO project (id, name, total_budget, neighbour_model, schema_json, test_project, "
                        "created, initial_source_json, genesis_hash) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            settings["name"],
                            settings["total_budget"],
                            settings["neighbour_model"],
                            canonical_json(schema.to_dict()),
                            int(test_project),
                            created,
                            canonical_json(initial.identity()),
                            genesis_hash(settings),
                        ),
                    )
                    if delta_cap:  # format 4 on (the column's default, 0, is a pure project)
                        conn.execute("UPDATE project SET delta_cap = ? WHERE id = 1", (float(delta_cap),))
                    _write_source(conn, initial)
                conn.execute("PRAGMA journal_mode = WAL")
            finally:
                conn.close()
            db.fsync(tmp)
            db.publish(tmp, path)  # atomic and never clobbers a file created meanwhile
            db.fsync_dir(path)
        except FileExistsError:
            raise StoreError(f"{path}: already exists (a project is never overwritten)") from None
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot create it ({exc}); nothing was written") from None
        finally:
            for leftover in (tmp, Path(f"{tmp}-journal"), Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
                if leftover.exists():
                    leftover.unlink()
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
        sib._view = self._view  # one ledger view for both (it locks while it grows); no SQL on this thread
        sib._queries = self._queries  # parsed request queries (keyed by the digest of what is stored)
        sib._parent = self
        return sib

    def close(self, save_cache: bool = True) -> None:
        """Close the file (and release its writer lock). Unless ``save_cache`` is False, the ledger-view
        cache is written first when it is worth it (:meth:`save_view_cache`; never by a sibling: its
        parent's view is the same, and the parent writes it when it closes)."""
        parent = self._parent
        if parent is not None and parent._snapshot is None:
            parent._snapshot = self._snapshot
        if parent is not None and parent._view is None:  # a view a worker loaded serves the parent too
            parent._view = self._view
        try:
            try:
                if save_cache and parent is None:
                    self.save_view_cache()  # derived and optional: a failure here never keeps the file from closing
            except (DpdeskError, OSError, sqlite3.Error, MemoryError):
                pass
            self._conn.close()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- settings and binding --------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The fixed settings the ledger's genesis hash covers (as stored now)."""
        return {
            "name": self.name,
            "total_budget": float(self.total_budget),
            "neighbour_model": self.neighbour_model,
            "schema": json.loads(self._schema_json),
            "test_project": self.test_project,
            "created": self.created,
            "initial_source": json.loads(self._initial_source_json),
        } | ({"delta_cap": self.delta_cap} if self.delta_cap else {})

    @property
    def spend_policy(self) -> SpendPolicy | None:
        """The curator's spend policy (None: the greedy rule — spend exactly what a request needs)."""
        return answering.read_policy(self._conn)

    def set_spend_policy(self, policy: SpendPolicy | None) -> None:
        """Set (or with None clear) the spend policy used by :meth:`assess` and :meth:`answer`."""
        self._require_writer()
        with db.transaction(self._conn):
            answering.write_policy(self._conn, policy)

    @property
    def prior(self) -> BoundedPrior | None:
        """The known-bounds prior from the table size the curator declared (None: the flat prior)."""
        return answering.read_prior(self._conn)

    def set_prior(self, prior: BoundedPrior | None) -> None:
        """Declare (or with None withdraw) a public table size; inferences then use the bounded prior."""
        if prior is not None:
            check_table_size(prior.table_size)  # a whole number of records, within what is computed exactly
        self._require_writer()
        with db.transaction(self._conn):
            answering.write_prior(self._conn, prior)

    @property
    def source(self) -> SourceBinding:
        keyed = _keyed_source_table(self._conn)
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

    # -- requests --------------------------------------------------------------------------------
    def requests(self, status: str | None = None) -> list[StoredRequest]:
        sql = f"SELECT {self._request_columns} FROM requests"
        args: tuple[Any, ...] = ()
        if status is not None:
            sql += " WHERE status = ?"
            args = (status,)
        return [self._request_from_row(r) for r in self._conn.execute(sql + " ORDER BY position", args)]

    def request(self, request_id: str) -> StoredRequest:
        row = self._conn.execute(
            f"SELECT {self._request_columns} FROM requests WHERE id = ?", (request_id,)
        ).fetchone()
        if row is None:
            raise RequestStateError(f"{self.path.name}: no request with id {request_id!r}")
        return self._request_from_row(row)

    def _request_from_row(self, row: tuple[Any, ...]) -> StoredRequest:
        rid, pos, requester, text, qjson, eps, delta, received, status, kind, alpha = row
        digest = hashlib.blake2b(qjson.encode(), digest_size=20).digest()
        known = self._queries.get(rid)
        if known is not None and known[:3] == (digest, text, kind):
            q = known[3]
        else:
            if text is not None and kind == "count":
                # the count the text names, as the product-form terms it was parsed into when queued (query_json
                # holds the same coefficients cell by cell: a sum of boxes there is ~10⁵ cells to read and to
                # meet every history row with, where its terms factor over the attributes)
                q = parse_query(text, self.schema)
            else:
                q = product_form(query_from_json(json.loads(qjson), self.schema.n_cells, self.schema.shape))
            self._queries[rid] = (digest, text, kind, q)
        return StoredRequest(rid, pos, requester, text, q, eps, delta, received, status, kind, alpha)

    def add_request(
        self,
        query: Any,
        eps: Any = None,
        delta: Any = None,
        requester: str = "",
        request_id: str | None = None,
        alpha: Any = None,
    ) -> StoredRequest:
        """Queue one request of any kind (engine/registry.py): a count (query text with this project's
        schema, or JSON coefficients) with its ``eps`` and ``delta``; ``max(...)``/``argmax(...)`` with an
        accuracy ``eps``, ``delta`` or a budget ``alpha``; ``posterior(...)`` priced in its text or by them."""
        new = make_request(self.schema, query, eps, delta, requester, request_id, alpha)
        return self._insert_requests([new])[0]

    def import_requests(self, path: str | os.PathLike[str]) -> list[StoredRequest]:
        """Queue every request of a JSON or CSV file, all or none."""
        return self._insert_requests(read_request_file(Path(path), self.schema))

    def edit_request(
        self,
        request_id: str,
        query: Any,
        eps: Any = None,
        delta: Any = None,
        requester: str = "",
        alpha: Any = None,
    ) -> StoredRequest:
        """Change a *pending* request (an answered or rejected one is part of the record and never changes)."""
        self._require_writer()
        new = make_request(self.schema, query, eps, delta, requester, request_id, alpha)
        with db.transaction(self._conn):
            changed = self._conn.execute(
                "UPDATE requests SET requester = ?, kind = ?, query_text = ?, query_json = ?, eps = ?, delta = ?, "
                "alpha = ? WHERE id = ? AND status = 'pending'",
                (
                    new.requester,
                    new.kind,
                    new.query_text,
                    canonical_json(new.query.to_json()),
                    new.eps,
                    new.delta,
                    new.alpha,
                    request_id,
                ),
            ).rowcount
            if not changed:
                self._refuse_change(request_id, "edited")
        return self.request(request_id)

    def delete_request(self, request_id: str) -> None:
        """Remove a *pending* request from the queue (nothing about it was ever released or recorded)."""
        self._require_writer()
        with db.transaction(self._conn):
            if not self._conn.execute(
                "DELETE FROM requests WHERE id = ? AND status = 'pending'", (request_id,)
            ).rowcount:
                self._refuse_change(request_id, "deleted")

    def _refuse_change(self, request_id: str, what: str) -> None:
        status = self.request(request_id).status  # raises for an unknown id
        raise RequestStateError(f"request {request_id!r} is {status}: only a pending request can be {what}")

    def _insert_requests(self, items: list[NewRequest]) -> list[StoredRequest]:
        self._require_writer()
        ids = [r.id for r in items if r.id is not None]
        if len(set(ids)) != len(ids):
            raise RequestStateError(f"request id {next(i for i in ids if ids.count(i) > 1)!r} appears twice")
        received = utc_now()
        with db.transaction(self._conn):
            (pos,) = self._conn.execute("SELECT coalesce(max(position), 0) FROM requests").fetchone()
            out_ids = []
            for new in items:
                pos += 1
                rid = new.id
                if rid is None:
                    n = pos
                    while (
                        self._conn.execute("SELECT 1 FROM requests WHERE id = ?", (f"r{n}",)).fetchone()
                        or f"r{n}" in ids
                    ):
                        n += 1
                    rid = f"r{n}"
                elif self._conn.execute("SELECT 1 FROM requests WHERE id = ?", (rid,)).fetchone():
                    raise RequestStateError(f"{self.path.name}: a request with id {rid!r} already exists")
                row = {
                    "id": rid,
                    "position": pos,
                    "requester": new.requester,
                    "kind": new.kind,
                    "query_text": new.query_text,
                    "query_json": canonical_json(new.query.to_json()),
                    "eps": new.eps,
                    "delta": new.delta,
                    "alpha": new.alpha,
                    "received": received,
                }
                if self._request_columns != REQUEST_COLUMNS:  # a file still at format 4 or older: counts only
                    if new.kind != "count":
                        raise StoreError(f"{self.path.name}: a {new.kind} request needs project format 5")
                    del row["kind"], row["alpha"]
                self._conn.execute(
                    f"INSERT INTO requests ({', '.join(row)}, status) "
                    f"VALUES ({', '.join('?' * len(row))}, 'pending')",
                    tuple(row.values()),
                )
                out_ids.append(rid)
        return [self.request(r) for r in out_ids]

    # -- the ledger and what is recomputed from it -----------------------------------------------
    def ledger(self) -> list[LedgerEntry]:
        """All entries in sequence order (decoded, not verified: use :meth:`verify` for that)."""
        return [ledger.decode(r) for r in ledger.raw_rows(self._conn)]

    def entry_for(self, request_id: str) -> LedgerEntry | None:
        """The ledger entry that decided ``request_id`` (a release of any kind, or a refusal), if any."""
        row = self._conn.execute(
            "SELECT seq, time, kind, request_id, payload, prev_hash, hash FROM ledger WHERE request_id = ?",
            (request_id,),
        ).fetchone()
        return ledger.decode(ledger.RawRow(*row)) if row else None

    def reject(self, request_id: str, reason: str = "") -> LedgerEntry:
        """Record the refusal of a pending request (spends nothing)."""
        self._require_writer()
        req = self.request(request_id)
        done = self.entry_for(request_id)
        if done is not None or req.status != "pending":
            raise RequestStateError(
                f"request {request_id!r} is already {req.status}"
                + (f" (ledger entry {done.seq})" if done else "")
            )
        return self._record(
            "rejected", request_id, {"reason": reason or "rejected by the curator"}, "rejected"
        )

    def rebind(self) -> LedgerEntry:
        """Accept the source's current data: record the old and new bindings in the ledger.

        The new binding is keyed with this machine's source key (:mod:`dpdesk.store.source_key`); it holds
        no count. A rebind also replaces an unkeyed binding of format 7 or older, data changed or not.
        """
        self._require_writer()
        old = self.source
        self._snapshot = None
        if _keyed_source_table(self._conn):
            key = own_key()  # the cube is rebuilt in this key's order: the one the new binding names
            order = order_key(key) if self.schema.unit.column else None
            self._snapshot = snap = snapshot(old.location, old.table, self.schema, order=order)
            new = keyed_binding(old.location, old.table, snap.cube, key, utc_now())
        else:  # a file of an older format (only the tests write one)
            snap = self.snapshot()
            new = unkeyed_binding(old.location, old.table, snap.cube, utc_now())
        payload = {"previous": old.identity(), "current": new.identity()}
        return self._record("rebind", None, payload, None, source=new)

    def _record(
        self,
        kind: str,
        request_id: str | None,
        payload: dict[str, Any],
        status: str | None,
        source: SourceBinding | None = None,
    ) -> LedgerEntry:
        """Append one entry (and the request's new status) in one fsync'd transaction."""
        conn = self._conn
        install_sqlite(conn)
        try:
            with db.transaction(conn):
                checkpoint("tx:begun")
                if request_id is not None and self.format_version >= REQUESTS_CHAINED:
                    # what the decision depends on goes under the chain with it
                    payload = {**payload, "request_digest": request_digest(conn, request_id)}
                entry = ledger.append(
                    conn, self.genesis, time=utc_now(), kind=kind, request_id=request_id, payload=payload
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
                    _write_source(conn, source)
                checkpoint("tx:committing")
        except sqlite3.IntegrityError as exc:
            raise RequestStateError(
                f"request {request_id!r} already has a decision in the ledger ({exc})"
            ) from None
        finally:
            remove_sqlite(conn)
        checkpoint("tx:committed")
        self.receipt([(entry.seq, entry.hash)], "recorded")
        return entry

    def receipt(self, heads: Sequence[tuple[int, str]], what: str) -> None:
        """Keep ``heads`` of this project's ledger in the curator's receipt log (:mod:`dpdesk.store.receipts`),
        outside the file, so that ``verify`` can later tell when the file falls behind one of them."""
        receipts.record(self.genesis, heads, what, self.path)

    def _require_writer(self) -> None:
        if self.mode != "w":
            raise ReadOnlyError(f"{self.path.name} is open read-only")

    # -- audit -----------------------------------------------------------------------------------
    def verify(
        self,
        extends: Sequence[str] = (),
        *,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> VerifyReport:
        """Audit the file (:mod:`dpdesk.store.verify`); ``extends``: ledger heads it must still contain
        (besides every head in this machine's receipt log, :mod:`dpdesk.store.receipts`);
        ``progress``/``cancelled``: see :func:`~dpdesk.store.verify.verify`."""
        return verify(
            self.audit_record(),
            extends,
            receipts=receipts.heads(self.genesis),
            progress=progress,
            cancelled=cancelled,
        )

    def audit_record(self) -> AuditRecord:
        """The file's settings, ledger, head, requests and binding as stored (for :func:`verify`).

        Text that is not UTF-8 (a damaged or hand-edited file) is read as its bytes here, for verify to name
        the entry or request, where every other reading refuses the file.
        """
        conn = self._conn
        head = conn.execute("SELECT seq, hash FROM ledger_head WHERE id = 1").fetchone()
        strict = conn.text_factory
        conn.text_factory = _text_or_bytes
        try:
            rows = tuple(ledger.raw_rows(conn))
            statuses = {
                bytes(rid).decode("utf-8", errors="replace"): status
                for rid, status in conn.execute("SELECT CAST(id AS BLOB), status FROM requests")
            }
        finally:
            conn.text_factory = strict
        return AuditRecord(
            self.settings(),
            self.schema,
            self.genesis,
            rows,
            tuple(head) if head else None,
            statuses,
            self.source.identity(),
            request_digests(conn),
        )

    def export_history(self) -> dict[str, Any]:
        """The DESIGN §6 history object: fresh rows' query, α, answer (and family) plus the schema."""
        return self.history().to_json(total_budget=float(self.total_budget), schema=self.schema)

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection (for tests of the file format; do not write through it)."""
        return self._conn


def _keyed_source_table(conn: sqlite3.Connection) -> bool:
    """Whether the file's source table holds keyed bindings (format 8 on)."""
    return any(r[1] == "key_id" for r in conn.execute("PRAGMA table_info(source)"))


def _text_or_bytes(data: bytes) -> str | bytes:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def _write_source(conn: sqlite3.Connection, s: SourceBinding) -> None:
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
    if _keyed_source_table(conn):
        columns += ["key_id", "salt"]
        values += [s.key_id, s.salt]
    elif s.keyed:
        raise StoreError("a keyed source binding needs project format 8")
    conn.execute(
        f"INSERT INTO source (id, {', '.join(columns)}) VALUES (1, {', '.join('?' * len(columns))}) "
        f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in columns)}",
        values,
    )
