"""Incoming requests as stored in the project file, and reading them from JSON or CSV files.

A request is a data user's question (a query, in its text form when it has one and always in its
coefficient form) with the accuracy requirement ``(ε, δ)``. Its status moves once, from ``pending``
to ``answered`` or ``rejected``, in the same transaction as the ledger entry that decides it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
import sqlite3
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpdesk.engine.answering.request import Request
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.jsontext import parse_json
from dpdesk.engine.limits import check_alpha, check_eps
from dpdesk.engine.queries.query import Query
from dpdesk.engine.queries.text import describe_query
from dpdesk.engine.registry import kind as kind_named
from dpdesk.engine.registry import read_request
from dpdesk.engine.schema import Schema
from dpdesk.store.canonical import canonical_json
from dpdesk.store.errors import StoreError

MEMBERS = ("query", "eps", "delta", "alpha", "requester", "id")
# a request file may also state its terms in the words the app speaks (engine/vocabulary.py): the member
# in the DP ecosystem's words → the stored field (a confidence is stored as its miss probability δ = 1 − C)
WORDED = {"accuracy": "eps", "confidence": "delta", "epsilon": "alpha"}
MAX_NAME = 200  # characters of a requester's name (it heads letters, file names and report rows)
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class StoredRequest:
    """One request in the queue, of any kind (:mod:`dpdesk.engine.registry`).

    ``query`` is what a count request asks, or the box (the cells) another kind reads; ``eps``/``delta``
    are the accuracy the requester asks for and ``alpha`` a per-cell budget they name, each None where
    the kind takes none (a count request always has ε and δ and never α).
    """

    id: str
    position: int
    requester: str
    query_text: str | None
    query: Query
    eps: float | None
    delta: float | None
    received: str
    status: str
    kind: str = "count"
    alpha: float | None = None

    def to_request(self) -> Request:
        """The engine's count request (assessed against history); other kinds have a release plan instead."""
        if self.kind != "count" or self.eps is None or self.delta is None:
            raise DpdeskError(
                f"request {self.id!r} is a {self.kind} request, not a count: it has a release plan "
                "of its own, not an assessment against history"
            )
        return Request(self.id, self.query, self.eps, self.delta, self.requester)

    def describe(self, schema: Schema | None = None) -> str:
        """The query as typed; a coefficient query by its cells' labels when the schema is given."""
        if self.query_text:
            return self.query_text
        return describe_query(self.query, schema) if schema is not None else json.dumps(self.query.to_json())

    def terms(self) -> str:
        """What the requester states besides the query: ``ε=50, δ=0.05``, ``α=0.5``, …"""
        return kind_named(self.kind).terms(self.eps, self.delta, self.alpha)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "requester": self.requester,
            "kind": self.kind,
            "query": self.query_text if self.query_text is not None else self.query.to_json(),
            "coefficients": self.query.to_json(),
            "eps": self.eps,
            "delta": self.delta,
            "alpha": self.alpha,
            "received": self.received,
            "status": self.status,
        }


@dataclass(frozen=True)
class NewRequest:
    """A checked request not yet stored (``id`` None means: number it)."""

    id: str | None
    requester: str
    query_text: str | None
    query: Query
    eps: float | None
    delta: float | None
    kind: str = "count"
    alpha: float | None = None


# What a decision depends on in a request, as stored: text columns as their bytes (so that a bit flip that
# leaves no valid UTF-8 still has a digest), numbers as stored. Status and position change as the queue
# moves; these do not once the request is decided.
_DIGESTED = (
    "CAST(id AS BLOB)",
    "CAST(requester AS BLOB)",
    "CAST(kind AS BLOB)",
    "CAST(query_text AS BLOB)",
    "CAST(query_json AS BLOB)",
    "eps",
    "delta",
    "alpha",
    "CAST(received AS BLOB)",
)


def _digest(values: tuple[Any, ...]) -> str:
    plain = [v.hex() if isinstance(v, bytes) else v for v in values]
    return hashlib.sha256(b"dpdesk-request-v1\0" + canonical_json(plain).encode("ascii")).hexdigest()


def _digest_columns(conn: sqlite3.Connection) -> str:
    have = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
    # a file of format 4 or older, read as it is: its requests are counts, without an α
    return ", ".join(
        c if c.removeprefix("CAST(").removesuffix(" AS BLOB)") in have else "NULL" for c in _DIGESTED
    )


def request_digest(conn: sqlite3.Connection, request_id: str) -> str | None:
    """The digest of request ``request_id`` as stored now (None: no such request). A ledger entry that
    decides a request records it, so ``verify`` notices a request edited after its decision."""
    row = conn.execute(
        f"SELECT {_digest_columns(conn)} FROM requests WHERE CAST(id AS BLOB) = CAST(? AS BLOB)",
        (request_id,),
    ).fetchone()
    return None if row is None else _digest(tuple(row))


def request_digests(conn: sqlite3.Connection, where: str = "") -> dict[str, str]:
    """Request id → digest of every request (``where``: an SQL condition on the requests table). Ids are
    read from their bytes (a damaged one reads with U+FFFD where its bytes are not UTF-8)."""
    return {
        bytes(row[0]).decode("utf-8", errors="replace"): _digest(tuple(row))
        for row in conn.execute(f"SELECT {_digest_columns(conn)} FROM requests {where}")
    }


def parse_number(value: Any, what: str) -> float:
    if isinstance(value, bool):
        raise DpdeskError(f"{what} ({value!r}) must be a number")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise DpdeskError(f"{what} ({value!r}) must be a number") from None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DpdeskError(f"{what} ({value!r}) must be a finite number")
    return float(value)


def _optional_number(value: Any, what: str) -> float | None:
    return (
        None if value is None or (isinstance(value, str) and not value.strip()) else parse_number(value, what)
    )


def check_id(request_id: Any) -> str:
    if not isinstance(request_id, str) or not ID_PATTERN.match(request_id):
        raise DpdeskError(
            f"request id {request_id!r} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return request_id


def make_request(
    schema: Schema,
    query: Any,
    eps: Any = None,
    delta: Any = None,
    requester: Any = "",
    request_id: Any = None,
    alpha: Any = None,
) -> NewRequest:
    """Check and parse one request of any kind (its text says which; JSON lists/objects are count
    coefficients). ``eps``/``delta``/``alpha`` as the kind takes them (:mod:`dpdesk.engine.registry`)."""
    eps, alpha = _optional_number(eps, "eps"), _optional_number(alpha, "alpha")
    read = read_request(
        schema,
        query,
        eps if eps is None or eps <= 0 else check_eps(eps),
        _optional_number(delta, "delta"),
        alpha if alpha is None or alpha <= 0 else check_alpha(alpha),
    )
    if requester is None:
        requester = ""
    if not isinstance(requester, str):
        raise DpdeskError(f"requester ({requester!r}) must be text")
    if len(requester) > MAX_NAME:
        raise DpdeskError(f"requester: a name of {len(requester):,} characters; at most {MAX_NAME} are kept")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in requester):
        raise DpdeskError(
            f"requester {requester[:40]!r}: control or formatting characters are not allowed in a name"
        )
    rid = (
        None
        if request_id in (None, "")
        else check_id(str(request_id) if isinstance(request_id, int) else request_id)
    )
    return NewRequest(
        rid, requester.strip(), read.text, read.cells, read.eps, read.delta, read.kind, read.alpha
    )


def _rows(reader: csv.DictReader[str], name: str) -> Iterator[tuple[int, dict[str | None, Any]]]:
    """The CSV's rows numbered as a spreadsheet numbers them (the header is row 1); a row the csv module
    cannot read (an unclosed quote, a field past its size limit) is one line naming it."""
    n = 1
    while True:
        n += 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise StoreError(f"{name} row {n}: {exc}") from None
        yield n, row


def stored_members(item: dict[str, Any], where: str) -> dict[str, Any]:
    """``item`` with its :data:`WORDED` members under the stored names (``confidence`` 0.95 or "95%" →
    ``delta`` 0.05, exactly); a term given under both names is refused."""
    from dpdesk.engine.vocabulary import delta_of_confidence

    out = {k: v for k, v in item.items() if k not in WORDED}
    for worded, stored in WORDED.items():
        value = item.get(worded)
        if value in (None, ""):
            continue
        if out.get(stored) not in (None, ""):
            raise StoreError(f"{where}: give {worded} or {stored}, not both")
        if worded == "confidence":
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise StoreError(f'{where}: confidence ({value!r}) must be a number, e.g. 0.95 or "95%"')
            try:
                value = delta_of_confidence(value)
            except ValueError as exc:
                raise StoreError(f"{where}: {exc}") from None
        out[stored] = value
    return out


def read_request_file(path: Path, schema: Schema) -> list[NewRequest]:
    """Requests from a JSON list of objects or a CSV with columns ``query[,eps,delta,alpha,requester,id]``
    (which of eps, delta, alpha a request needs depends on its kind; a count needs eps and delta), or
    the same terms in the app's words: ``accuracy`` (eps), ``confidence`` (0.95 or "95%": delta is
    1 − it) and ``epsilon`` (alpha).

    Errors name the file and the item (``requests.csv row 3: eps (0) must be ...``).
    """
    from dpdesk.store.inputs import read_text_file

    text = read_text_file(path, "request file", StoreError)
    items: list[dict[str, Any]]
    is_json = path.suffix.lower() == ".json" or text.lstrip().startswith("[")
    if is_json:
        data = parse_json(text, path.name, StoreError)
        if not isinstance(data, list):
            raise StoreError(f"{path.name}: must be a JSON list of requests")
        items = data
        label = "item"
        first = 0
    else:
        reader = csv.DictReader(io.StringIO(text))
        try:
            cols = [c.strip() for c in (reader.fieldnames or [])]
        except csv.Error as exc:
            raise StoreError(f"{path.name} row 1: {exc}") from None
        if "query" not in cols:
            raise StoreError(
                f"{path.name}: CSV needs a column query (and eps,delta,alpha,requester,id as the "
                "requests need them); missing 'query'"
            )
        unknown = [c for c in cols if c not in MEMBERS and c not in WORDED]
        if unknown:
            raise StoreError(f"{path.name}: unknown CSV column {unknown[0]!r}")
        items = []
        for n, row in _rows(reader, path.name):
            if None in row:  # csv puts the surplus fields of a row under the key None
                raise StoreError(
                    f"{path.name} row {n}: more fields than the header's {len(cols)} columns "
                    "(quote a query that contains commas)"
                )
            items.append({k.strip(): v for k, v in row.items() if k is not None})  # (None: refused above)
        label = "row"
        first = 2  # the header is row 1
    out = []
    for i, item in enumerate(items):
        where = f"{path.name} {label} {i + first if first else i}"
        if not isinstance(item, dict):
            raise StoreError(f"{where}: must be an object with query (and eps, delta or alpha)")
        if item.get("query") in (None, ""):
            raise StoreError(f"{where}: missing 'query'")
        extra = set(item) - set(MEMBERS) - set(WORDED)
        if extra:
            raise StoreError(f"{where}: unknown member {sorted(extra)[0]!r}")
        item = stored_members(item, where)
        try:
            out.append(
                make_request(
                    schema,
                    item["query"],
                    item.get("eps"),
                    item.get("delta"),
                    item.get("requester") or "",
                    item.get("id"),
                    item.get("alpha"),
                )
            )
        except DpdeskError as exc:
            raise StoreError(f"{where}: {exc}") from None
    if not out:
        raise StoreError(f"{path.name}: no requests in the file")
    return out
