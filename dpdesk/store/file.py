"""What every service of a project is given: the one open project file (its connection, its fixed
settings, whether it is open for writing). :class:`~dpdesk.store.project.Project` implements it; the
services (:mod:`.queue`, :mod:`.ledger_book`, :mod:`.releasing`, :mod:`.watching`, :mod:`.exports`,
:mod:`.answering`) read and write the file only through it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.cube import Cube
from dpdesk.engine.schema import Schema

__all__ = ["ProjectFile"]


class ProjectFile(Protocol):
    """One open project file, as its services see it."""

    @property
    def path(self) -> Path: ...
    @property
    def mode(self) -> str: ...  # "r" (read-only) or "w" (the single writer)
    @property
    def schema(self) -> Schema: ...
    @property
    def genesis(self) -> str: ...  # the genesis hash the ledger chains from
    @property
    def total_budget(self) -> float: ...
    @property
    def delta_cap(self) -> float: ...
    @property
    def accounting(self) -> ZcdpAccounting | None: ...  # None: pure ε
    @property
    def test_project(self) -> bool: ...
    @property
    def format_version(self) -> int: ...  # the file's format (``PRAGMA user_version``)
    @property
    def connection(self) -> sqlite3.Connection: ...

    def require_writer(self) -> None:
        """Raise ``ReadOnlyError`` unless the file is open for writing."""
        ...

    def cube(self) -> Cube:
        """The cube of the bound source (refused when the source vanished or changed)."""
        ...

    def receipt(self, heads: Sequence[tuple[int, str]], what: str) -> None:
        """Keep ``heads`` of the ledger in the curator's receipt log (:mod:`dpdesk.store.receipts`)."""
        ...
