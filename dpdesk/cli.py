"""The ``dpdesk`` command line.

With no arguments ``dpdesk`` opens the desktop app (options such as ``--demo`` or ``--screenshot DIR``
go to :mod:`dpdesk.gui.launch`); ``--self-test`` runs :mod:`dpdesk.selftest`; with a subcommand it
runs that command. Each
subcommand lives in its own module under :mod:`dpdesk.commands` and provides ``register(subparsers)``
(cheap: argparse only) and a ``run(args) -> int`` set as the parser's default ``func``.

Bad input never produces a traceback: a :class:`~dpdesk.engine.errors.DpdeskError` or an ``OSError``
becomes one line on stderr, ``dpdesk: error: ...``, and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from dpdesk import __version__
from dpdesk.engine.errors import DpdeskError

# Subcommand modules in dpdesk.commands, in the order they appear in --help.
COMMAND_MODULES = ("assess", "project", "requests", "answer", "release", "verify", "export", "cube")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default also exits 2; keep it to one line
        self.exit(2, f"dpdesk: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dpdesk", description="Answer counting queries under differential privacy.")
    parser.add_argument("--version", action="version", version=f"dpdesk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(f"dpdesk.commands.{name}").register(sub)
    return parser


def fail(message: str) -> int:
    print(f"dpdesk: error: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--self-test" in argv or "--startup-probe" in argv:
        from dpdesk import selftest

        return int(selftest.main(argv))
    if not argv or argv[0].startswith("--") and argv[0] not in ("--help", "--version"):
        from dpdesk.gui.launch import main as open_window

        return int(open_window(argv))
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except DpdeskError as exc:
        return fail(str(exc))
    except OSError as exc:
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        return fail(f"{exc.strerror or exc}{where}")
    except KeyboardInterrupt:
        return fail("interrupted")


if __name__ == "__main__":
    raise SystemExit(main())
