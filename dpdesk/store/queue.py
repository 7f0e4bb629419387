"""The request queue of a project file: requests of any kind, each read by its kind (the registry), kept in
order, changed only while pending (an answered or rejected request is part of the record).

A queue of thousands of index-list queries is parsed once, not on every read: the parsed query of each
request is kept by the digest of what is stored (shared with a sibling connection's queue).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from dpdesk.engine.queries.query import Query, product_form, query_from_json
from dpdesk.engine.queries.text import parse_query
from dpdesk.store import db
from dpdesk.store.canonical import canonical_json, utc_now
from dpdesk.store.errors import RequestStateError, StoreError
from dpdesk.store.file import ProjectFile
from dpdesk.store.requests import NewRequest, StoredRequest, make_request, read_request_file

__all__ = ["REQUEST_COLUMNS", "RequestQueue"]

REQUEST_COLUMNS = "id, position, requester, query_text, query_json, eps, delta, received, status, kind, alpha"


class RequestQueue:
    """The requests of one open project file (see the module docstring)."""

    def __init__(
        self, file: ProjectFile, parsed: dict[str, tuple[bytes, str | None, str, Query]] | None = None
    ) -> None:
        self.file = file
        # request id -> (digest of its stored query JSON, text, kind, parsed query)
        self.parsed: dict[str, tuple[bytes, str | None, str, Query]] = {} if parsed is None else parsed
        columns = {r[1] for r in file.connection.execute("PRAGMA table_info(requests)")}
        # a file of format 4 or older opened read-only holds count requests only, without kind or α
        self.columns = (
            REQUEST_COLUMNS if "kind" in columns else REQUEST_COLUMNS.replace("kind, alpha", "'count', NULL")
        )

    def statuses(self) -> dict[str, str]:
        """Request id → status, for every request (what verify compares with the ledger)."""
        return dict(self.file.connection.execute("SELECT id, status FROM requests").fetchall())

    def requests(self, status: str | None = None) -> list[StoredRequest]:
        sql = f"SELECT {self.columns} FROM requests"
        args: tuple[str, ...] = ()
        if status is not None:
            sql += " WHERE status = ?"
            args = (status,)
        return [self._from_row(r) for r in self.file.connection.execute(sql + " ORDER BY position", args)]

    def request(self, request_id: str) -> StoredRequest:
        row = self.file.connection.execute(
            f"SELECT {self.columns} FROM requests WHERE id = ?", (request_id,)
        ).fetchone()
        if row is None:
            raise RequestStateError(f"{self.file.path.name}: no request with id {request_id!r}")
        return self._from_row(row)

    def _from_row(self, row: tuple[Any, ...]) -> StoredRequest:
        rid, pos, requester, text, qjson, eps, delta, received, status, kind, alpha = row
        digest = hashlib.blake2b(qjson.encode(), digest_size=20).digest()
        known = self.parsed.get(rid)
        if known is not None and known[:3] == (digest, text, kind):
            q = known[3]
        else:
            if text is not None and kind == "count":
                # the count the text names, as the product-form terms it was parsed into when queued (query_json
                # holds the same coefficients cell by cell: a sum of boxes there is ~10⁵ cells to read and to
                # meet every history row with, where its terms factor over the attributes)
                q = parse_query(text, self.file.schema)
            else:
                q = product_form(
                    query_from_json(json.loads(qjson), self.file.schema.n_cells, self.file.schema.shape)
                )
            self.parsed[rid] = (digest, text, kind, q)
        return StoredRequest(rid, pos, requester, text, q, eps, delta, received, status, kind, alpha)

    def add(
        self,
        query: object,
        eps: object = None,
        delta: object = None,
        requester: str = "",
        request_id: str | None = None,
        alpha: object = None,
    ) -> StoredRequest:
        """Queue one request of any kind (engine/registry.py): a count (query text with this project's
        schema, or JSON coefficients) with its ``eps`` and ``delta``; ``max(...)``/``argmax(...)`` with an
        accuracy ``eps``, ``delta`` or a budget ``alpha``; ``posterior(...)`` priced in its text or by them."""
        new = make_request(self.file.schema, query, eps, delta, requester, request_id, alpha)
        return self._insert([new])[0]

    def import_file(self, path: str | os.PathLike[str]) -> list[StoredRequest]:
        """Queue every request of a JSON or CSV file, all or none."""
        return self._insert(read_request_file(Path(path), self.file.schema))

    def edit(
        self,
        request_id: str,
        query: object,
        eps: object = None,
        delta: object = None,
        requester: str = "",
        alpha: object = None,
    ) -> StoredRequest:
        """Change a *pending* request (an answered or rejected one is part of the record and never changes)."""
        self.file.require_writer()
        new = make_request(self.file.schema, query, eps, delta, requester, request_id, alpha)
        with db.transaction(self.file.connection):
            changed = self.file.connection.execute(
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

    def delete(self, request_id: str) -> None:
        """Remove a *pending* request from the queue (nothing about it was ever released or recorded)."""
        self.file.require_writer()
        with db.transaction(self.file.connection):
            if not self.file.connection.execute(
                "DELETE FROM requests WHERE id = ? AND status = 'pending'", (request_id,)
            ).rowcount:
                self._refuse_change(request_id, "deleted")

    def _refuse_change(self, request_id: str, what: str) -> None:
        status = self.request(request_id).status  # raises for an unknown id
        raise RequestStateError(f"request {request_id!r} is {status}: only a pending request can be {what}")

    def _insert(self, items: list[NewRequest]) -> list[StoredRequest]:
        self.file.require_writer()
        ids = [r.id for r in items if r.id is not None]
        if len(set(ids)) != len(ids):
            raise RequestStateError(f"request id {next(i for i in ids if ids.count(i) > 1)!r} appears twice")
        received = utc_now()
        with db.transaction(self.file.connection):
            (pos,) = self.file.connection.execute(
                "SELECT coalesce(max(position), 0) FROM requests"
            ).fetchone()
            out_ids = []
            for new in items:
                pos += 1
                rid = new.id
                if rid is None:
                    n = pos
                    while (
                        self.file.connection.execute(
                            "SELECT 1 FROM requests WHERE id = ?", (f"r{n}",)
                        ).fetchone()
                        or f"r{n}" in ids
                    ):
                        n += 1
                    rid = f"r{n}"
                elif self.file.connection.execute("SELECT 1 FROM requests WHERE id = ?", (rid,)).fetchone():
                    raise RequestStateError(
                        f"{self.file.path.name}: a request with id {rid!r} already exists"
                    )
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
                if self.columns != REQUEST_COLUMNS:  # a file still at format 4 or older: counts only
                    if new.kind != "count":
                        raise StoreError(
                            f"{self.file.path.name}: a {new.kind} request needs project format 5"
                        )
                    del row["kind"], row["alpha"]
                self.file.connection.execute(
                    f"INSERT INTO requests ({', '.join(row)}, status) "
                    f"VALUES ({', '.join('?' * len(row))}, 'pending')",
                    tuple(row.values()),
                )
                out_ids.append(rid)
        return [self.request(r) for r in out_ids]
