"""The project file (SQLite): settings, data binding, request queue and the hash-chained privacy ledger.

``Project`` is the entry point (:mod:`dpdesk.store.project`); it is imported on first use so that
``import dpdesk.store`` stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["STATUSES", "Project", "Release", "VerifyReport"]

# A request's status: queued, then decided once (a fresh or inferred answer, or a refusal). Defined here,
# not in store/requests.py, so that argparse and the GUI can list them without importing the engine.
STATUSES = ("pending", "answered", "rejected")


def __getattr__(name: str) -> Any:
    if name == "Project":
        from dpdesk.store.project import Project

        return Project
    if name == "Release":
        from dpdesk.store.release import Release

        return Release
    if name == "VerifyReport":
        from dpdesk.store.verify import VerifyReport

        return VerifyReport
    raise AttributeError(f"module 'dpdesk.store' has no attribute {name!r}")
