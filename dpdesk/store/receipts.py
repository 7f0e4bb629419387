"""The receipt log: every ledger head dpdesk recorded or handed out on this machine, kept outside the file.

A project file is self-contained, so whoever can write it can delete its newest entries and fix the
``ledger_head`` row, or put an older copy back (a backup, a sync conflict): the hash chain still holds and
``verify`` alone cannot tell. Each witness dpdesk hands out — a release's entry hash, printed by
``answer``, ``batch``, ``release``, written in a reply letter, shown by ``verify`` or ``project info`` —
and each entry it records is therefore also appended here, in the curator's per-user data folder
(``$DPDESK_DATA_DIR``, else the platform's, e.g. ``~/.local/share/dpdesk``; ``$DPDESK_RECEIPTS_DIR`` names
the log's folder itself), one file per project keyed by its identity, the genesis hash: ``receipts/<genesis>.log``, one JSON line per head::

    {"seq": 12, "hash": "3f2a…", "time": "2026-11-28T…", "what": "recorded", "file": "/home/…/p.dpdesk"}

:func:`heads` reads them back for ``verify``, which then checks the file still holds every one: a file
that ends before a head this machine once had (entries removed, an older copy restored) or holds another
entry at its place (rewritten, or a copy that went its own way) fails, named. The log holds only hashes,
sequence numbers and times — nothing about the data — and losing it loses only this check. Writing it is
best effort: a receipt that cannot be written never stops a release that is already recorded.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dpdesk.store.canonical import utc_now
from dpdesk.store.source_key import data_folder

__all__ = ["Receipt", "folder", "heads", "log_path", "record"]

_GENESIS = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Receipt:
    """One head of a project's ledger this machine recorded or handed out."""

    seq: int
    hash: str
    time: str
    what: str  # "recorded", "verified", "shown", "letter", "reply"
    file: str


def folder() -> Path:
    """The receipt logs' folder: ``receipts`` in the per-user data folder (:func:`~dpdesk.store.source_key.data_folder`),
    or ``$DPDESK_RECEIPTS_DIR`` when set."""
    given = os.environ.get("DPDESK_RECEIPTS_DIR")
    return Path(given) if given else data_folder() / "receipts"


def log_path(genesis: str) -> Path:
    """The receipt log of the project whose ledger starts from ``genesis``."""
    if not _GENESIS.match(genesis):
        raise ValueError(f"genesis ({genesis!r}) must be 64 lowercase hex digits")
    return folder() / f"{genesis}.log"


def record(genesis: str, heads: Iterable[tuple[int, str]], what: str, file: str | os.PathLike[str]) -> bool:
    """Append ``heads`` ((seq, hash) pairs) to the project's log; False when it could not be written (no such
    folder can be made, a full disk): the caller carries on — see the module docstring.

    The line is handed to the operating system, which keeps it through a crash of the process; it is not
    fsync'd (that doubled the time of recording a small entry), so a power cut may lose the newest lines —
    the check of those heads, never anything of the project, whose commits are fsync'd.
    """
    when, where = utc_now(), str(Path(file).resolve())
    text = "".join(
        json.dumps({"seq": int(seq), "hash": str(h), "time": when, "what": what, "file": where}) + "\n"
        for seq, h in heads
        if seq > 0
    )
    if not text:
        return True
    try:
        path = log_path(genesis)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, text.encode("utf-8"))  # one append: whole lines even with two writers
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return False
    return True


def heads(genesis: str) -> list[Receipt]:
    """Every receipt of the project (oldest first); lines that do not read as one are skipped."""
    try:
        text = log_path(genesis).read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return []
    out = []
    for line in text.splitlines():
        try:
            obj = json.loads(line)
            out.append(
                Receipt(
                    int(obj["seq"]), str(obj["hash"]), str(obj["time"]), str(obj["what"]), str(obj["file"])
                )
            )
        except (ValueError, KeyError, TypeError):
            continue
    return out
