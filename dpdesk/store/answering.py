"""The curator's answering settings kept in the project file (format 2): spend policy and known bounds.

Both are choices, not privacy parameters: they can change at any time, and every ledger entry they
affect records the setting it was made under (``policy`` and ``needed_alpha`` on fresh entries,
``prior`` on inferred ones), so changing them rewrites nothing. No row means the default: the greedy
spend rule and the flat prior. A format-1 file opened read-only has neither table and reads as the
defaults.
"""

from __future__ import annotations

import sqlite3

from dpdesk.engine.budget.policy import SpendPolicy
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


def _row(conn: sqlite3.Connection, sql: str):
    try:
        return conn.execute(sql).fetchone()
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
