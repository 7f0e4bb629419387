"""Test-only crash points along the release path.

With ``DPDESK_TEST_KILL_AT=N`` in the environment the process kills itself (SIGKILL; TerminateProcess on Windows) at the N-th checkpoint
it passes, so a fault-injection test can stop ``dpdesk answer`` anywhere before, inside or after the
commit of a fresh answer. Checkpoints are explicit :func:`checkpoint` calls between steps and, while a
ledger transaction runs, SQLite's progress handler (every few virtual-machine instructions). With
``DPDESK_TEST_CHECKPOINT_LOG=FILE`` each checkpoint passed is appended to FILE (its number and label),
which lets a test count them. ``DPDESK_TEST_KILL_AT_LABEL=LABEL:N`` kills at the N-th checkpoint named
LABEL instead (``answer:committed:5``: right after the fifth release's commit). Without these variables
every call is a cheap no-op.
"""

from __future__ import annotations

import os
import signal
import sqlite3

# SQLite virtual-machine instructions between progress-handler checkpoints in a ledger transaction
# (``DPDESK_TEST_SQLITE_STEP`` overrides it).
SQLITE_STEP = 10

_KILL_AT = 0
_KILL_LABEL: tuple[str, int] | None = None
_LOG: str | None = None
ACTIVE = False
_count = 0
_labels: dict[str, int] = {}


def configure() -> None:
    """(Re)read the test variables from the environment and restart the count (a forked test child)."""
    global _KILL_AT, _KILL_LABEL, _LOG, ACTIVE, _count, SQLITE_STEP
    _KILL_AT = int(os.environ.get("DPDESK_TEST_KILL_AT", "0") or 0)
    label, _, nth = (os.environ.get("DPDESK_TEST_KILL_AT_LABEL") or "").rpartition(":")
    _KILL_LABEL = (label, int(nth)) if label and nth.isdigit() else None
    SQLITE_STEP = max(1, int(os.environ.get("DPDESK_TEST_SQLITE_STEP", "10") or 10))
    _LOG = os.environ.get("DPDESK_TEST_CHECKPOINT_LOG") or None
    ACTIVE = bool(_KILL_AT or _LOG or _KILL_LABEL)
    _count = 0
    _labels.clear()


configure()


def checkpoint(label: str) -> None:
    """Pass one crash point (no-op unless a fault-injection test enabled it)."""
    global _count
    if not ACTIVE:
        return
    _count += 1
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as f:
            f.write(f"{_count} {label}\n")
    _labels[label] = _labels.get(label, 0) + 1
    if _count == _KILL_AT or (_KILL_LABEL is not None and (label, _labels[label]) == _KILL_LABEL):
        # A crash: nothing runs after it. SIGKILL on Linux and macOS; Windows has no SIGKILL, and its
        # os.kill with any other signal is TerminateProcess, which is the same abrupt end.
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))


def install_sqlite(conn: sqlite3.Connection) -> None:
    """Make SQLite's progress handler a stream of checkpoints on ``conn`` (only when active)."""
    if ACTIVE:
        conn.set_progress_handler(_sqlite_tick, SQLITE_STEP)


def remove_sqlite(conn: sqlite3.Connection) -> None:
    if ACTIVE:
        conn.set_progress_handler(None, 0)


def _sqlite_tick() -> int:
    checkpoint("sqlite")
    return 0
