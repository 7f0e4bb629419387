"""Writing a new project file: the source read and bound (keyed with this machine's source key; a
person-level project's cube built in the key's order), the project row, the fixed settings the genesis
hash covers and the first source binding, into a temporary file that is fsync'd and then linked into
place — atomically, and never over a file created meanwhile. Nothing is left behind on error."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from dpdesk.engine.budget.accounting import check_delta_cap, check_total_budget
from dpdesk.engine.budget.mode import MODES, ZcdpAccounting, accounting_from_json
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.schema import Schema
from dpdesk.store import db
from dpdesk.store.binding import Snapshot, SourceBinding, keyed_binding, order_key, snapshot, unkeyed_binding
from dpdesk.store.canonical import canonical_json, genesis_hash, utc_now
from dpdesk.store.errors import StoreError
from dpdesk.store.ledger_book import write_source
from dpdesk.store.source_key import own_key

__all__ = [
    "NEIGHBOUR_MODEL",
    "accounting_asked",
    "create_file",
    "neighbour_model",
    "read_accounting",
    "write_new",
]

NEIGHBOUR_MODEL = "add/remove one record"


def neighbour_model(schema: Schema) -> str:
    """The neighbouring tables the project's guarantees are about (one record, or one person's rows)."""
    if schema.unit.rows_are_people:
        return NEIGHBOUR_MODEL
    return f"add/remove one person: {schema.unit.describe()}"


def create_checked(
    path: Path,
    name: str,
    schema: Schema | dict[str, Any],
    source: tuple[str, str | None],
    total_budget: float,
    test_project: bool,
    delta_cap: float,
    accounting: str,
    delta: float | None,
) -> Snapshot:
    """Check a new project's inputs, then bind its source and write its file (:func:`create_file`);
    nothing is written on error."""
    if path.exists() or path.is_symlink():
        raise StoreError(f"{path}: already exists (a project is never overwritten)")
    if not path.parent.is_dir():
        raise StoreError(f"{path}: cannot create it — the folder {path.parent} does not exist")
    check_total_budget(total_budget)
    check_delta_cap(delta_cap)
    if not isinstance(name, str) or not name.strip():
        raise DpdeskError("project name must be non-empty text")
    zcdp = accounting_asked(accounting, delta, total_budget)
    schema = schema if isinstance(schema, Schema) else Schema.from_dict(schema)
    return create_file(
        path,
        name.strip(),
        schema,
        source,
        total_budget,
        test_project,
        delta_cap,
        None if zcdp is None else zcdp.to_json(),
    )


def create_file(
    path: Path,
    name: str,
    schema: Schema,
    source: tuple[str, str | None],
    total_budget: float,
    test_project: bool,
    delta_cap: float,
    accounting: dict[str, Any] | None = None,
) -> Snapshot:
    """Bind the source ``(location, table)`` and write a new project file at ``path``; the source as read
    (its cube) is returned for the project opened next."""
    location, table = source
    key = own_key() if db.FORMAT_VERSION >= db.KEYED_SOURCE_FORMAT or schema.unit.column else None
    order = order_key(key) if key is not None and schema.unit.column else None
    snap = snapshot(location, table, schema, order=order)
    created = utc_now()
    if key is not None and db.FORMAT_VERSION >= db.KEYED_SOURCE_FORMAT:
        initial = keyed_binding(location, table, snap.cube, key, created)
    else:  # a file of an older format (only the tests make one): bound as that format did
        initial = unkeyed_binding(location, table, snap.cube, created)
    settings: dict[str, Any] = {
        "name": name,
        "total_budget": float(total_budget),
        "neighbour_model": neighbour_model(schema),
        "schema": schema.to_dict(),
        "test_project": bool(test_project),
        "created": created,
        "initial_source": initial.identity(),
    }
    if delta_cap:
        settings["delta_cap"] = float(delta_cap)
    if accounting is not None:  # zCDP (pure ε is left out: the genesis of every older project holds)
        settings["accounting"] = dict(accounting)
    write_new(path, settings, schema, initial)
    return snap


def write_new(path: Path, settings: dict[str, Any], schema: Schema, initial: SourceBinding) -> None:
    """Create the project file at ``path`` holding ``settings`` (what the genesis hash covers)."""
    test_project, created = settings["test_project"], settings["created"]
    delta_cap = settings.get("delta_cap", 0.0)
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
                if "accounting" in settings:  # format 11 on (NULL: pure ε)
                    conn.execute(
                        "UPDATE project SET accounting_json = ? WHERE id = 1",
                        (canonical_json(settings["accounting"]),),
                    )
                write_source(conn, initial)
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


def accounting_asked(mode: str, delta: float | None, total: float) -> ZcdpAccounting | None:
    """The accounting a new project is made with (None: pure ε), checked before anything is written."""
    if mode == "pure":
        if delta is not None:
            raise DpdeskError("--delta is the δ of a zCDP project's total (ε, δ): it needs --accounting zcdp")
        return None
    if mode != "zcdp":
        raise DpdeskError(f"accounting ({mode!r}) must be one of {', '.join(MODES)}")
    if delta is None:
        raise DpdeskError("a zCDP project states its total as (ε, δ): give --delta D (e.g. 1e-6)")
    return ZcdpAccounting(float(total), delta)


def read_accounting(conn: sqlite3.Connection, path: Path, total: float) -> ZcdpAccounting | None:
    """The stored accounting (format 11's column; an older file, or NULL, is pure ε)."""
    try:
        row = conn.execute("SELECT accounting_json FROM project WHERE id = 1").fetchone()
    except sqlite3.OperationalError:  # a file of format 10 or older, opened read-only
        return None
    if row is None or row[0] is None:
        return None
    try:
        return accounting_from_json(json.loads(row[0]), total)
    except (ValueError, TypeError, KeyError, DpdeskError) as exc:
        raise StoreError(f"{path.name}: the stored accounting is unreadable ({exc})") from None
