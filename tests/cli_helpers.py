"""The ``dpdesk`` command line run in this process: what it printed and its exit code.

Starting a Python process and importing numpy, scipy, pandas and DuckDB costs a second or more, so the
CLI tests call :func:`dpdesk.cli.main` directly; ``tests/test_entry_points.py`` runs the installed
entry points once each in a real process.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Ran:
    """What one command did: the same fields as :class:`subprocess.CompletedProcess`."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(env: dict[str, str] | None, cwd: Path | None) -> Iterator[None]:
    saved_env, saved_cwd, saved_stdin = dict(os.environ), os.getcwd(), sys.stdin
    try:
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        sys.stdin = saved_stdin


def run_dpdesk(
    *args: object, input: str | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Ran:
    """``dpdesk ARGS`` through :func:`dpdesk.cli.main`; ``input`` is what stdin holds (else nothing)."""
    from dpdesk.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _environment(env, cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        sys.stdin = io.StringIO(input or "")
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse: --help, --version and usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Ran(int(code), out.getvalue(), err.getvalue())
