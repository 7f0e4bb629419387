"""The curator's answering settings kept in the project file: spend policy and known bounds (format 2),
and the batch plans' look-ahead (format 7).

Both are choices, not privacy parameters: they can change at any time, and every ledger entry they
affect records the setting it was made under (``policy`` and ``needed_alpha`` on fresh entries,
``prior`` on inferred ones), so changing them rewrites nothing. No row means the default: the greedy
spend rule and the flat prior. A format-1 file opened read-only has neither table and reads as the
defaults.

The look-ahead is a choice of how batch plans spend (:func:`dpdesk.store.batch.plan_pending`): with a
share set, a batch plan first measures, on cells nobody has paid for yet, a strategy for the queue's
requests (public inputs only), spending that share of those cells' room. No row means off; a file of
an older format opened read-only reads as off. The measurements' entries name the strategy they belong
to, so changing the setting rewrites nothing either.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.store.canonical import utc_now

# assess/answer arguments meaning "whatever the project stores"
FROM_PROJECT = "project"

TABLES = (
    """CREATE TABLE spend_policy (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        floor REAL NOT NULL CHECK (floor >= 0 AND floor <= 1),
        cap REAL NOT NULL CHECK (cap > 0 AND cap <= 1 AND floor <= cap),
        changed TEXT NOT NULL
    )""",
    # the table size the curator *declares* public (never read off the data)
    """CREATE TABLE known_bounds (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        table_size REAL NOT NULL CHECK (table_size > 0),
        changed TEXT NOT NULL
    )""",
)


# format 7: the batch plans' look-ahead share (store/batch.py)
LOOK_AHEAD_TABLES = (
    """CREATE TABLE look_ahead (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        share REAL NOT NULL CHECK (share > 0 AND share <= 1),
        changed TEXT NOT NULL
    )""",
)


def check_share(share: object, where: str = "look-ahead share") -> float:
    """``share`` as a float in (0, 1], or a one-line :class:`DpdeskError` naming ``where``."""
    if (
        isinstance(share, bool)
        or not isinstance(share, (int, float))
        or not math.isfinite(share)
        or not 0 < share <= 1
    ):
        raise DpdeskError(
            f"{where} ({share!r}) must be a fraction in (0, 1] of the room left on unspent cells"
        )
    return float(share)


def _row(conn: sqlite3.Connection, sql: str) -> tuple[Any, ...] | None:
    try:
        row: tuple[Any, ...] | None = conn.execute(sql).fetchone()
        return row
    except sqlite3.OperationalError:  # a format-1 file opened read-only
        return None


def read_policy(conn: sqlite3.Connection) -> SpendPolicy | None:
    row = _row(conn, "SELECT floor, cap FROM spend_policy WHERE id = 1")
    return SpendPolicy(floor=float(row[0]), cap=float(row[1])) if row else None


def write_policy(conn: sqlite3.Connection, policy: SpendPolicy | None) -> None:
    """Inside the caller's transaction: store ``policy`` (None or a neutral policy clears it)."""
    conn.execute("DELETE FROM spend_policy")
    if policy is not None and not policy.neutral:
        conn.execute("INSERT INTO spend_policy VALUES (1, ?, ?, ?)", (policy.floor, policy.cap, utc_now()))


def read_prior(conn: sqlite3.Connection) -> BoundedPrior | None:
    row = _row(conn, "SELECT table_size FROM known_bounds WHERE id = 1")
    return BoundedPrior(float(row[0])) if row else None


def write_prior(conn: sqlite3.Connection, prior: BoundedPrior | None) -> None:
    """Inside the caller's transaction: store the declared table size (None: the flat prior)."""
    conn.execute("DELETE FROM known_bounds")
    if prior is not None:
        conn.execute("INSERT INTO known_bounds VALUES (1, ?, ?)", (float(prior.table_size), utc_now()))


def read_look_ahead(conn: sqlite3.Connection) -> float | None:
    row = _row(conn, "SELECT share FROM look_ahead WHERE id = 1")
    return float(row[0]) if row else None


def write_look_ahead(conn: sqlite3.Connection, share: float | None) -> None:
    """Inside the caller's transaction: store the look-ahead ``share`` (None: off)."""
    conn.execute("DELETE FROM look_ahead")
    if share is not None:
        conn.execute("INSERT INTO look_ahead VALUES (1, ?, ?)", (check_share(share), utc_now()))
