"""DuckDB's spill folders: one per operation in the temp folder, named after the process that made it,
and swept when that process is gone (a process killed mid-count cannot remove its own)."""

from __future__ import annotations

import os
import tempfile

__all__ = ["SPILL_PREFIX", "sweep_spill_folders"]

SPILL_PREFIX = "dpdesk-duckdb-"  # + the owner's pid + "-": DuckDB's spill folder for one operation


def sweep_spill_folders(folder: str | None = None) -> None:
    """Remove the spill folders that processes killed before they could clean up left in the temp folder.

    A folder is named after the process that made it and removed only when that process no longer exists
    and the folder is this user's (a live process's folder, or another user's, is never touched).
    """
    import shutil

    base = folder or tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(base) if n.startswith(SPILL_PREFIX)]
    except OSError:
        return
    for name in names:
        pid_text = name[len(SPILL_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        path = os.path.join(base, name)
        try:
            if not _own_folder(path) or _process_exists(int(pid_text)):
                continue
        except (OSError, OverflowError):  # no such folder, or a process we may not ask about
            continue
        shutil.rmtree(path, ignore_errors=True)


def _own_folder(path: str) -> bool:
    """True for a real folder (not a link) this user owns; on Windows the temp folder is the user's own."""
    if os.path.islink(path) or not os.path.isdir(path):
        return False
    getuid = getattr(os, "getuid", None)  # POSIX only
    return getuid is None or os.lstat(path).st_uid == getuid()


def _process_exists(pid: int) -> bool:
    """Whether a process with this id is running, without signalling it.

    ``os.kill(pid, 0)`` asks the question on POSIX; on Windows it would end the process, so there the
    process is opened for query and its exit code read (259 is STILL_ACTIVE).
    """
    if os.name != "nt":
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's live process
            return True
        return True
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return False
    try:
        code = ctypes.c_ulong()
        ok = kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        return bool(ok) and code.value == 259
    finally:
        kernel32.CloseHandle(handle)
