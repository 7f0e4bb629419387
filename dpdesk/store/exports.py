"""What a project file gives an auditor or a script, as one service: the audit record :func:`verify`
reads (the file's contents exactly as stored), the verification itself, and the DESIGN §6 history
export. (The HTML report and the ledger CSV are :mod:`.audit_export`'s, from a project.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dpdesk.store import ledger, receipts
from dpdesk.store.file import ProjectFile
from dpdesk.store.ledger_book import LedgerBook
from dpdesk.store.queue import RequestQueue
from dpdesk.store.requests import request_digests
from dpdesk.store.verify import AuditRecord, VerifyReport, verify

__all__ = ["Exports"]


class Exports:
    """The audit record, verify and the history export of one open project file."""

    def __init__(
        self,
        file: ProjectFile,
        queue: RequestQueue,
        book: LedgerBook,
        settings: Callable[[], dict[str, Any]],
        source: Callable[[], dict[str, Any]],
    ) -> None:
        self.file, self.queue, self.book = file, queue, book
        self.settings, self.source = (
            settings,
            source,
        )  # the fixed settings and the binding's identity, as stored

    def audit_record(self) -> AuditRecord:
        """The file's settings, ledger, head, requests and binding as stored (for :func:`verify`).

        Text that is not UTF-8 (a damaged or hand-edited file) is read as its bytes here, for verify to name
        the entry or request, where every other reading refuses the file.
        """
        conn = self.file.connection
        head = conn.execute("SELECT seq, hash FROM ledger_head WHERE id = 1").fetchone()
        strict = conn.text_factory
        conn.text_factory = _text_or_bytes
        try:
            rows = tuple(ledger.raw_rows(conn))
            statuses = {
                bytes(rid).decode("utf-8", errors="replace"): status
                for rid, status in conn.execute("SELECT CAST(id AS BLOB), status FROM requests")
            }
        finally:
            conn.text_factory = strict
        return AuditRecord(
            self.settings(),
            self.file.schema,
            self.file.genesis,
            rows,
            tuple(head) if head else None,
            statuses,
            self.source(),
            request_digests(conn),
        )

    def verify(
        self,
        extends: Sequence[str] = (),
        *,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> VerifyReport:
        """Audit the file (:mod:`dpdesk.store.verify`); ``extends``: ledger heads it must still contain
        (besides every head in this machine's receipt log, :mod:`dpdesk.store.receipts`);
        ``progress``/``cancelled``: see :func:`~dpdesk.store.verify.verify`."""
        return verify(
            self.audit_record(),
            extends,
            receipts=receipts.heads(self.file.genesis),
            progress=progress,
            cancelled=cancelled,
        )

    def history(self) -> dict[str, Any]:
        """The DESIGN §6 history object: fresh rows' query, α, answer (and family) plus the schema, and a
        zCDP project's accounting (``dpdesk assess --history`` then accounts in ρ as the project does)."""
        out = self.book.history().to_json(total_budget=float(self.file.total_budget), schema=self.file.schema)
        if self.file.accounting is not None:
            out["accounting"] = self.file.accounting.to_json()
        return out


def _text_or_bytes(data: bytes) -> str | bytes:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data
