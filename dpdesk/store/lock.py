"""The single-writer lock: an exclusive ``flock`` on a sidecar ``PATH.lock`` file.

Only a process holding the lock may write the project. The lock file records the holder (pid, host,
start time) so that a second writer's error names it. The kernel releases the lock when the holder
dies, even by SIGKILL, so a crash never leaves a project locked. The lock file is never deleted:
deleting it while another process waits on it would let two processes each lock a different file.
Read-only opening takes no lock. (SQLite's own ``BEGIN IMMEDIATE`` guards each transaction as well.)
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import time
from pathlib import Path

from dpdesk.store.errors import LockedError


def lock_path(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p.with_name(p.name + ".lock")


class WriterLock:
    """An acquired single-writer lock; :meth:`release` (or process exit) frees it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = lock_path(path)
        self._fd: int | None = None

    def acquire(self) -> WriterLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockedError(
                    f"{self.path.name[: -len('.lock')]} is open for writing by "
                    f"{describe_holder(self.path)}; open it read-only or wait"
                ) from None
            raise
        holder = (
            f"pid={os.getpid()} host={socket.gethostname()} since={time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n"
        )
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
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
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        text = ""
    fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
    if "pid" not in fields:
        return "another process"
    return f"pid {fields['pid']} on {fields.get('host', '?')} since {fields.get('since', '?')}"
