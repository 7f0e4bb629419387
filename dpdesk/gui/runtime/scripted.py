"""Scripted runs of the window (screenshots, the standalone views, the self-test): wait, and decide.

Tests use ``qtbot.waitUntil`` instead of :func:`wait_until`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

# The demo requests worked through before screenshots are taken, so that every page has something to show.
SCRIPTED = ("q01", "q02", "q03", "q04", "q05", "q06", "q07", "q08", "q09", "q11", "q12", "q13", "q14", "q34")


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Process events until ``condition()`` holds or ``timeout`` seconds pass; whether it held."""
    from PySide6.QtWidgets import QApplication

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        QApplication.processEvents()
        if condition():
            return True
        time.sleep(0.01)
    return False


def work_through(session, request_ids: Sequence[str]) -> None:
    """Decide the pending ones of ``request_ids`` as the engine says (a :class:`ProjectSession`): the
    release path the window uses, run inline (a script has no event loop to keep alive)."""
    for rid in request_ids:
        if session.request(rid).status != "pending":
            continue
        a = session.state.plan(session.request(rid))
        if a.decision == "reject":
            session.reject(rid, a.reason)
        else:
            try:
                session.release_job(a)()
            finally:
                session.released()
