"""Files written whole or not at all.

An export (the ledger CSV, the audit report, a synthetic or released table) is written to a temporary
file in the target's own folder and renamed over the target only when it is complete, so a failure or a
cancel midway leaves no half-written file, and an older file under that name stays as it was. The rename
is atomic because both names are in one folder (one file system).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

from dpdesk.engine.errors import Cancelled

__all__ = ["write_atomically"]


def write_atomically(
    path: str | os.PathLike[str], write: Callable[[Path], None], cancelled: Callable[[], bool] | None = None
) -> Path:
    """Call ``write(tmp)`` on a fresh temporary file beside ``path``, then rename it to ``path``.

    Any exception ``write`` raises (:class:`~dpdesk.engine.errors.Cancelled` included) removes the
    temporary file and propagates; ``cancelled()`` is asked once more just before the rename. The file
    gets the permissions of a file the user creates (the umask applies), not a private temporary's.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.part")
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    try:
        write(tmp)
        if cancelled is not None and cancelled():
            raise Cancelled("cancelled: nothing was written")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
