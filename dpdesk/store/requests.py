"""Incoming requests as stored in the project file, and reading them from JSON or CSV files.

A request is a data user's question (a query, in its text form when it has one and always in its
coefficient form) with the accuracy requirement ``(ε, δ)``. Its status moves once, from ``pending``
to ``answered`` or ``rejected``, in the same transaction as the ledger entry that decides it.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpdesk.engine.budget.accounting import check_requirement
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.jsontext import parse_json
from dpdesk.engine.queries.query import Query
from dpdesk.engine.queries.text import describe_query, query_from_input
from dpdesk.engine.schema import Schema
from dpdesk.engine.answering.request import Request
from dpdesk.store.errors import StoreError

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class StoredRequest:
    """One request in the queue."""

    id: str
    position: int
    requester: str
    query_text: str | None
    query: Query
    eps: float
    delta: float
    received: str
    status: str

    def to_request(self) -> Request:
        return Request(self.id, self.query, self.eps, self.delta, self.requester)

    def describe(self, schema: Schema | None = None) -> str:
        """The query as typed; a coefficient query by its cells' labels when the schema is given."""
        if self.query_text:
            return self.query_text
        return describe_query(self.query, schema) if schema is not None else json.dumps(self.query.to_json())

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "requester": self.requester,
            "query": self.query_text if self.query_text is not None else self.query.to_json(),
            "coefficients": self.query.to_json(),
            "eps": self.eps,
            "delta": self.delta,
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
    eps: float
    delta: float


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


def check_id(request_id: Any) -> str:
    if not isinstance(request_id, str) or not ID_PATTERN.match(request_id):
        raise DpdeskError(
            f"request id {request_id!r} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return request_id


def make_request(
    schema: Schema, query: Any, eps: Any, delta: Any, requester: Any = "", request_id: Any = None
) -> NewRequest:
    """Check and parse one request: text queries with the schema, JSON lists/objects as coefficients."""
    eps_f = parse_number(eps, "eps")
    delta_f = parse_number(delta, "delta")
    check_requirement(eps_f, delta_f)
    q = query_from_input(query, schema.n_cells, schema.shape, schema)
    text = q.text
    if requester is None:
        requester = ""
    if not isinstance(requester, str):
        raise DpdeskError(f"requester ({requester!r}) must be text")
    rid = None if request_id in (None, "") else check_id(str(request_id) if isinstance(request_id, int) else request_id)
    return NewRequest(rid, requester.strip(), text, q, eps_f, delta_f)


def read_request_file(path: Path, schema: Schema) -> list[NewRequest]:
    """Requests from a JSON list of objects or a CSV with columns ``query,eps,delta[,requester,id]``.

    Errors name the file and the item (``requests.csv row 3: eps (0) must be ...``).
    """
    text = path.read_text(encoding="utf-8-sig")
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
        cols = [c.strip() for c in (reader.fieldnames or [])]
        missing = [c for c in ("query", "eps", "delta") if c not in cols]
        if missing:
            raise StoreError(f"{path.name}: CSV needs columns query,eps,delta[,requester,id]; missing {missing[0]!r}")
        unknown = [c for c in cols if c not in ("query", "eps", "delta", "requester", "id")]
        if unknown:
            raise StoreError(f"{path.name}: unknown CSV column {unknown[0]!r}")
        items = []
        for n, row in enumerate(reader, start=2):
            if None in row:  # csv puts the surplus fields of a row under the key None
                raise StoreError(f"{path.name} row {n}: more fields than the header's {len(cols)} columns "
                                 "(quote a query that contains commas)")
            items.append({k.strip(): v for k, v in row.items()})
        label = "row"
        first = 2  # the header is row 1
    out = []
    for i, item in enumerate(items):
        where = f"{path.name} {label} {i + first if first else i}"
        if not isinstance(item, dict):
            raise StoreError(f"{where}: must be an object with query, eps, delta")
        for key in ("query", "eps", "delta"):
            if item.get(key) in (None, ""):
                raise StoreError(f"{where}: missing {key!r}")
        extra = set(item) - {"query", "eps", "delta", "requester", "id"}
        if extra:
            raise StoreError(f"{where}: unknown member {sorted(extra)[0]!r}")
        try:
            out.append(make_request(schema, item["query"], item["eps"], item["delta"], item.get("requester") or "",
                                    item.get("id")))
        except DpdeskError as exc:
            raise StoreError(f"{where}: {exc}") from None
    if not out:
        raise StoreError(f"{path.name}: no requests in the file")
    return out
