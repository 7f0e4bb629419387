"""The project's data binding: open its source, rebuild the cube, check it is the data that was bound.

The store never reads tables itself: it asks :func:`dpdesk.sources.open_source` (imported when first
needed), checks the schema's columns exist, and keeps only the cube. What the project file keeps of the
data is a *keyed* fingerprint of that cube (:func:`dpdesk.sources.fingerprint.cube_fingerprint`, under
the curator's source key, :mod:`dpdesk.store.source_key`) with the key's public id and a random salt:
nothing another reader of the file can test a table against, and no row or out-of-domain count
(DESIGN §4). Checking it reads nothing the cube build did not already read.

A binding written by format 7 or older (``key_id`` None) holds the source's plain hash, its exact row
count and its out-of-domain count; it is checked the old way (the files hashed, the rows counted) until
``dpdesk project rebind`` replaces it with a keyed one. :meth:`SourceBinding.exposes` says what it shows.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpdesk.engine.cube import Cube, check_cells
from dpdesk.engine.schema import Schema
from dpdesk.engine.truncation import OrderKey
from dpdesk.store.errors import BindingError
from dpdesk.store.source_key import SourceKey, find_key, key_folder, own_key


@dataclass(frozen=True)
class SourceBinding:
    """Where the data lives and a fingerprint of what it was when bound (never the rows, never a count)."""

    location: str
    table: str | None
    fingerprint_method: str
    fingerprint: str
    row_count: int | None  # format 7 and older only (None in a keyed binding)
    out_of_domain: int | None  # format 7 and older only (None in a keyed binding)
    bound_at: str
    key_id: str | None = None  # the source key's public id (None: an unkeyed binding of format 7 or older)
    salt: str | None = None

    @property
    def keyed(self) -> bool:
        return self.key_id is not None

    def identity(self) -> dict[str, Any]:
        """The fields that say *which data* this is (what a rebind changes; the genesis hash covers the
        first binding's). An unkeyed binding keeps the members it was hashed with."""
        if not self.keyed:
            return {
                "location": self.location,
                "table": self.table,
                "fingerprint_method": self.fingerprint_method,
                "fingerprint": self.fingerprint,
                "row_count": self.row_count,
                "out_of_domain": self.out_of_domain,
            }
        return {
            "location": self.location,
            "table": self.table,
            "fingerprint_method": self.fingerprint_method,
            "fingerprint": self.fingerprint,
            "key_id": self.key_id,
            "salt": self.salt,
        }


def exposes(identity: dict[str, Any]) -> list[str]:
    """What a recorded binding (its identity) shows of the data to anyone who reads the file."""
    if identity.get("key_id") is not None:
        return []
    out = [f"an unkeyed fingerprint of the source ({identity.get('fingerprint_method')})"]
    if identity.get("row_count") is not None:
        out.append("its exact row count")
    if identity.get("out_of_domain") is not None:
        out.append("its out-of-domain count")
    return out


@dataclass(frozen=True)
class Snapshot:
    """The source as it is now: its cube (the one scan a command makes of it)."""

    cube: Cube


def open_table(location: str, table: str | None = None) -> Any:
    """The :mod:`dpdesk.sources` object for ``location``."""
    from dpdesk.sources import open_source

    return open_source(location, table=table)


def _where(location: str, table: str | None) -> str:
    return f"source {location}{f' table {table}' if table else ''}"


def order_key(key: SourceKey) -> OrderKey:
    """The keyed order in which a project's cube keeps a person's rows (the privacy unit's contribution
    bounds, :mod:`dpdesk.engine.truncation`): derived from the source key, so the same data bound with
    the same key always gives the same cube, and the key never leaves this machine."""
    return OrderKey.from_secret(key.secret)


def curator_order_key() -> OrderKey:
    """The order of this machine's own source key: what a project bound here now would use."""
    return order_key(own_key())


def bound_order_key(binding: SourceBinding, schema: Schema) -> OrderKey | None:
    """The order a project's cube is built in (None when one row is one person: nothing is chosen), or a
    one-line BindingError when the binding's key is not on this machine."""
    if schema.unit.rows_are_people:
        return None
    key = find_key(binding.key_id or "")
    if key is None:
        raise BindingError(
            f"{_where(binding.location, binding.table)}: cannot build the cube: its privacy unit keeps "
            f"each person's rows in an order keyed with source key {binding.key_id or '(none)'}, which this "
            f"machine does not have (copy {binding.key_id}.key from the machine that bound it into "
            f"{key_folder()}, or rebind the project here)"
        )
    return order_key(key)


def snapshot(
    location: str,
    table: str | None,
    schema: Schema,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    order: OrderKey | None = None,
) -> Snapshot:
    """Read the source now: check its columns against the schema and build the cube (a privacy unit's
    rows kept in the keyed ``order``: :func:`order_key`).

    ``progress(fraction)`` hears how far; ``cancelled()`` true stops it with the source's cancellation error.
    """
    check_cells(schema)  # before the source is opened: a cube that cannot be held in memory is refused
    where = _where(location, table)
    try:
        source = open_table(location, table)
        columns = set(source.columns())
    except OSError as exc:
        raise BindingError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    missing = [c for c in schema.columns() if c not in columns]
    if missing:
        raise BindingError(
            f"{where} has no column {missing[0]!r} "
            f"named by the schema (columns: {', '.join(sorted(columns))})"
        )
    try:
        cube = source.build_cube(schema, progress=progress, cancelled=cancelled, order_key=order)
    except OSError as exc:
        raise BindingError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    return Snapshot(cube)


def keyed_binding(
    location: str, table: str | None, cube: Cube, key: SourceKey, bound_at: str
) -> SourceBinding:
    """A new binding of ``cube``'s data: its fingerprint under ``key`` with a fresh salt."""
    from dpdesk.sources.fingerprint import CUBE_METHOD, cube_fingerprint

    salt = secrets.token_bytes(16)
    digest = cube_fingerprint(cube, key.secret, salt)
    return SourceBinding(location, table, CUBE_METHOD, digest, None, None, bound_at, key.key_id, salt.hex())


def unkeyed_binding(location: str, table: str | None, cube: Cube, bound_at: str) -> SourceBinding:
    """A binding as format 7 and older wrote it (the plain hash and the row count: a second pass over the
    source). Only a file of such a format is created with one (the tests' stand-in for an older dpdesk)."""
    fp = open_table(location, table).fingerprint()
    return SourceBinding(location, table, fp.method, fp.digest, fp.row_count, cube.out_of_domain, bound_at)


def changed(binding: SourceBinding, snap: Snapshot) -> str | None:
    """None when ``snap`` is the data ``binding`` fingerprinted, else why not (changed, or not checkable)."""
    where = _where(binding.location, binding.table)
    if not binding.keyed:
        fp = open_table(binding.location, binding.table).fingerprint()
        if (fp.method, fp.digest) == (binding.fingerprint_method, binding.fingerprint):
            return None
        return (
            f"{where} changed since it was bound on {binding.bound_at} "
            f"(fingerprint {binding.fingerprint[:12]}… is now {fp.digest[:12]}…)"
        )
    from dpdesk.sources.fingerprint import CUBE_METHOD, cube_fingerprint

    key = find_key(binding.key_id or "")
    if key is None or binding.fingerprint_method != CUBE_METHOD:
        return (
            f"{where}: cannot check it is the data bound on {binding.bound_at}: its fingerprint is keyed with "
            f"source key {binding.key_id}, which this machine does not have (copy {binding.key_id}.key from "
            f"the machine that bound it into {key_folder()})"
        )
    if cube_fingerprint(snap.cube, key.secret, bytes.fromhex(binding.salt or "")) == binding.fingerprint:
        return None
    return f"{where} changed since it was bound on {binding.bound_at} (its cube's keyed fingerprint differs)"
