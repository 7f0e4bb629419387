"""The single-writer lock: an exclusive operating-system lock on a sidecar ``PATH.lock`` file.

Only a process holding the lock may write the project. The lock is ``filelock``'s descriptor lock, the
same primitive on every platform it supports: ``flock`` on Linux and macOS, ``LockFileEx`` on byte 0
on Windows. The operating system releases it when the holder dies, even by SIGKILL or a Windows
``TerminateProcess``, so a crash never leaves a project locked. The lock file records the holder (pid,
host, start time) from byte 1 on, where a Windows byte-0 lock does not stop another process reading
it, so that a second writer's error names the holder. The lock file is never deleted: deleting it
while another process waits on it would let two processes each lock a different file. Read-only
opening takes no lock. (SQLite's own ``BEGIN IMMEDIATE`` guards each transaction as well.)
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from filelock import lock_descriptor, unlock_descriptor

from dpdesk.store.errors import LockedError

# Byte 0 is the one Windows locks; the holder's words start after it.
_HOLDER_OFFSET = 1
_BINARY = getattr(os, "O_BINARY", 0)  # Windows opens descriptors in text mode unless told otherwise


def lock_path(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p.with_name(p.name + ".lock")


class WriterLock:
    """An acquired single-writer lock; :meth:`release` (or process exit) frees it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = lock_path(path)
        self._fd: int | None = None

    def acquire(self) -> WriterLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _BINARY, 0o644)
        try:
            locked = lock_descriptor(fd, blocking=False)
        except BaseException:
            os.close(fd)
            raise
        if not locked:
            os.close(fd)
            raise LockedError(
                f"{self.path.name[: -len('.lock')]} is open for writing by "
                f"{describe_holder(self.path)}; open it read-only or wait"
            )
        holder = (
            f"\npid={os.getpid()} host={socket.gethostname()} since={time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n"
        )
        try:  # who holds it, for the next one refused; a full disk leaves the note out, not the lock
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, holder.encode())
        except OSError:
            pass
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            finally:
                try:
                    unlock_descriptor(self._fd)
                finally:
                    os.close(self._fd)
                    self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def describe_holder(path: Path) -> str:
    """The holder recorded in a lock file, in words (``pid 123 on host h since ...``)."""
    try:
        with open(path, "rb") as f:
            f.seek(_HOLDER_OFFSET)
            text = f.read(4096).decode("utf-8", errors="replace").strip()
    except OSError:
        text = ""
    fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
    if "pid" not in fields:
        return "another process"
    return f"pid {fields['pid']} on {fields.get('host', '?')} since {fields.get('since', '?')}"
