"""The one y/N question the CLI asks before anything is spent."""

from __future__ import annotations

import sys


def confirmed(question: str, refusal: str = "not released (not confirmed)") -> bool:
    """Ask ``question [y/N]`` on stderr; only ``y``/``yes`` confirms (end of input means no).

    A refusal prints ``refusal`` on stderr, so a caller just returns its exit code.
    """
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    line = sys.stdin.readline() if sys.stdin is not None and not sys.stdin.closed else ""
    if line.strip().lower() in ("y", "yes"):
        return True
    print(refusal, file=sys.stderr)
    return False
