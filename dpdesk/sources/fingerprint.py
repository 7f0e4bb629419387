"""Content fingerprints of source files, streamed so a 50 GB dataset hashes in constant memory.

One file: the SHA-256 of its bytes. Several files (a glob): the SHA-256 of the sorted list of
``relative-name<TAB>sha256-of-content`` lines, so renaming, adding or removing a file changes the
fingerprint but moving the whole folder does not. Row counts come from the source that owns the files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

from dpdesk.sources.base import CancelCheck, Progress, check_cancelled, report

CHUNK_BYTES = 1 << 20


def _hash_file(
    path: str, done: int, total: int, progress: Progress, cancelled: CancelCheck
) -> tuple[str, int]:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            check_cancelled(cancelled, "fingerprint")
            block = f.read(CHUNK_BYTES)
            if not block:
                break
            h.update(block)
            done += len(block)
            report(progress, done / total if total else 1.0)
    return h.hexdigest(), done


def hash_files(
    paths: Sequence[str], root: str | None = None, *, progress: Progress = None, cancelled: CancelCheck = None
) -> tuple[str, str]:
    """``(method, hex digest)`` for ``paths``: ``"sha256"`` for one file, ``"sha256-files"`` for several.

    Names in the multi-file digest are relative to ``root`` (the glob's fixed directory).
    """
    total = sum(os.path.getsize(p) for p in paths)
    done = 0
    if len(paths) == 1:
        digest, _ = _hash_file(paths[0], 0, total, progress, cancelled)
        return "sha256", digest
    listing = hashlib.sha256()
    named = sorted((os.path.relpath(p, root) if root else os.path.basename(p), p) for p in paths)
    for name, path in named:
        digest, done = _hash_file(path, done, total, progress, cancelled)
        listing.update(f"{name}\t{digest}\n".encode("utf-8", "surrogateescape"))
    report(progress, 1.0)
    return "sha256-files", listing.hexdigest()
