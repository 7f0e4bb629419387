"""Run dpdesk with what Windows lacks taken away: ``python as_windows.py ARGS`` is ``dpdesk ARGS``.

Windows' Python has no ``fcntl``, ``pwd``, ``grp``, ``termios``, ``resource`` (and the other modules in
:data:`POSIX_MODULES`), no ``os.pwrite``, ``os.fork``, ``os.getuid`` ... (:data:`POSIX_OS_NAMES`) and no
``signal.SIGKILL``, ``SIGPIPE`` ... (:data:`POSIX_SIGNALS`). This script removes them from the running
interpreter (a module set to ``None`` in ``sys.modules`` cannot be imported; a deleted attribute is
an ``AttributeError``), then runs the dpdesk command line. ``--import-all`` instead imports every
module of the ``dpdesk`` package and prints how many.

The file-lock library is imported first, before the removal: it picks its platform's primitive when
it loads (``msvcrt``/``LockFileEx`` on Windows, ``fcntl`` here), as it does on Windows; dpdesk itself
never sees ``fcntl``.
"""

from __future__ import annotations

import os
import signal
import sys

import filelock  # noqa: F401  (see the module docstring)

POSIX_MODULES = ("fcntl", "pwd", "grp", "termios", "tty", "pty", "resource", "syslog", "crypt", "spwd", "nis")
POSIX_OS_NAMES = (
    "pwrite", "pread", "pwritev", "preadv", "fork", "forkpty", "getuid", "geteuid", "getgid", "getegid",
    "setsid", "setpgrp", "getpgid", "killpg", "chown", "lchown", "fchown", "mkfifo", "mknod", "sync",
    "statvfs", "fstatvfs", "getloadavg", "sysconf", "nice", "posix_fadvise", "sched_getaffinity", "O_DIRECTORY",
    "O_NOFOLLOW", "O_CLOEXEC",
)  # fmt: skip
POSIX_SIGNALS = (
    "SIGKILL",
    "SIGPIPE",
    "SIGHUP",
    "SIGALRM",
    "SIGUSR1",
    "SIGUSR2",
    "SIGCHLD",
    "SIGQUIT",
    "SIGSTOP",
)


def take_away() -> list[str]:
    """Remove what Windows lacks; the names removed."""
    gone = []
    for name in POSIX_MODULES:
        sys.modules[name] = None  # type: ignore[assignment]
        gone.append(name)
    for module, names in ((os, POSIX_OS_NAMES), (signal, POSIX_SIGNALS)):
        for name in names:
            if hasattr(module, name):
                delattr(module, name)
                gone.append(f"{module.__name__}.{name}")
    return gone


def import_all() -> int:
    import importlib
    import pkgutil

    import dpdesk

    names = [
        m.name for m in pkgutil.walk_packages(dpdesk.__path__, "dpdesk.") if not m.name.endswith("__main__")
    ]
    for name in names:
        importlib.import_module(name)
    return len(names)


if __name__ == "__main__":
    take_away()
    if sys.argv[1:] == ["--import-all"]:
        print(f"imported {import_all()} dpdesk modules")
        raise SystemExit(0)
    from dpdesk.cli import main

    raise SystemExit(main(sys.argv[1:]))
