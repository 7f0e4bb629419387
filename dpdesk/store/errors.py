"""The store's exception types: all are :class:`~dpdesk.engine.errors.DpdeskError`, one line each."""

from __future__ import annotations

from dpdesk.engine.errors import DpdeskError


class StoreError(DpdeskError):
    """The project file cannot be opened, read or written as asked."""


class NotAProjectError(StoreError):
    """The file is not a dpdesk project (garbage, truncated, another SQLite database, a newer format)."""


class LockedError(StoreError):
    """Another process holds the project's single-writer lock."""


class ReadOnlyError(StoreError):
    """A write was attempted on a project opened read-only."""


class RequestStateError(StoreError):
    """A request is unknown, already answered or rejected, or cannot be answered now."""


class BindingError(StoreError):
    """The project's data source vanished or changed since it was bound."""


class MissingLogError(StoreError):
    """The main file names a ledger entry in flight but its write-ahead log (``P-wal``) is missing."""


class Unsettled(StoreError):
    """A change is committed to the write-ahead log but could not yet be written into the main file."""


class DrawDiscarded(StoreError):
    """A fresh draw could not be recorded durably, so it was discarded without being shown."""


class StaleAssessment(RequestStateError):
    """The ledger or the answering settings changed since the assessment: assess again, nothing was released."""


class PersonLevelUnavailable(StoreError):
    """The project protects people with several rows each, and this release kind is not yet priced per
    person: it is refused rather than priced per row."""
