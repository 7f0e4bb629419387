"""Files written whole or not at all, and only where a file belongs.

An export (the ledger CSV, the audit report, a synthetic or released table, a history, a reply letter) is
written to a temporary file in the target's own folder and renamed over the target only when it is
complete, so a failure or a cancel midway leaves no half-written file, and an older file under that name
stays as it was. The rename is atomic because both names are in one folder (one file system).

A rename replaces whatever has the target's name, so the target is looked at first
(:func:`check_target`): an existing *regular file* is replaced; anything else under that name — a folder, a
FIFO, a device such as ``/dev/full``, a socket — is refused in one line and left alone, and so is a
*symbolic link*: dpdesk never replaces a link by a file, nor writes through one into a place the curator
did not name; it says so and names the link's target, to be given instead if that is what was meant.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from dpdesk.engine.errors import Cancelled
from dpdesk.store.errors import StoreError

__all__ = ["check_target", "write_atomically"]

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def check_target(path: str | os.PathLike[str]) -> Path:
    """``path`` when an export may be written there (nothing there yet, or a regular file to replace);
    a one-line :class:`~dpdesk.store.errors.StoreError` otherwise (see the module docstring)."""
    path = Path(path)
    if not path.name or path.name in (".", ".."):
        raise StoreError(f"{path}: not a file name")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise StoreError(f"cannot write {path}: the folder {path.parent} does not exist") from None
        return path
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise StoreError(
            f"{path} is a symbolic link (to {os.readlink(path)}): dpdesk does not write through or replace "
            "links; give the file's own path"
        )
    if not stat.S_ISREG(st.st_mode):
        what = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise StoreError(f"{path} is {what}, not a file: dpdesk writes exports only as regular files")
    return path


def write_atomically(
    path: str | os.PathLike[str], write: Callable[[Path], None], cancelled: Callable[[], bool] | None = None
) -> Path:
    """Call ``write(tmp)`` on a fresh temporary file beside ``path``, then rename it to ``path``.

    ``path`` is checked first (:func:`check_target`) and again just before the rename (the write may take
    long). Any exception ``write`` raises (:class:`~dpdesk.engine.errors.Cancelled` included) removes the
    temporary file and propagates; ``cancelled()`` is asked once more just before the rename. The file
    gets the permissions of a file the user creates (the umask applies), not a private temporary's.
    """
    path = check_target(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.part")
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        write(tmp)
        if cancelled is not None and cancelled():
            raise Cancelled("cancelled: nothing was written")
        check_target(path)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
