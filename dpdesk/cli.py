"""The ``dpdesk`` command line.

With no arguments ``dpdesk`` opens the desktop app; so does a project path (``dpdesk P.dpdesk``, what a
file manager runs for a double-click) and the window's own options such as ``--demo`` or
``--screenshot DIR`` (all handed to :mod:`dpdesk.gui.app.launch`). ``--self-test`` runs
:mod:`dpdesk.selftest`; with a subcommand it runs that command. ``dpdesk --help`` lists both the
window's options and the commands. Each
subcommand lives in its own module under :mod:`dpdesk.commands` and provides ``register(subparsers)``
(cheap: argparse only) and a ``run(args) -> int`` set as the parser's default ``func``.

Bad input never produces a traceback: a :class:`~dpdesk.engine.errors.DpdeskError` or an ``OSError``
becomes one line on stderr, ``dpdesk: error: ...``, and exit code 2.
"""

from __future__ import annotations

import os

# One BLAS thread unless the user chose otherwise, set before numpy is first imported (OpenBLAS reads it
# once, at load). dpdesk's linear algebra is small triangular solves and matrix-vector products, which
# multithreaded OpenBLAS slows down when other work shares the cores (see docs/performance.md, "BLAS
# threads"). Every entry point — the commands, the window, the packaged executable — comes through here.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import sqlite3  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402

from dpdesk import __version__  # noqa: E402
from dpdesk.engine.errors import DpdeskError  # noqa: E402

# Subcommand modules in dpdesk.commands, in the order they appear in --help.
COMMAND_MODULES = (
    "assess",
    "project",
    "requests",
    "watch",
    "answer",
    "release",
    "batch",
    "synth",
    "verify",
    "export",
    "cube",
)


class _Parser(argparse.ArgumentParser):
    command_names: frozenset[str] = frozenset()  # the subcommands' names (set by build_parser)

    def error(self, message: str) -> None:  # argparse's default also exits 2; keep it to one line
        self.exit(2, f"dpdesk: error: {message}\n")


USAGE = """dpdesk [PROJECT] [--demo] [--screenshot DIR] [--settings INI]
       dpdesk --self-test [--verbose]
       dpdesk COMMAND ...       (dpdesk COMMAND --help for its options)"""


def build_parser(*, window_help: bool = False) -> _Parser:
    """The command-line parser; with ``window_help`` also the window's options, for ``--help`` only.

    The window's options are parsed by :mod:`dpdesk.gui.app.launch` (``main`` hands them over before this
    parser runs); here they are only listed, so that ``dpdesk --help`` shows everything ``dpdesk`` does.
    """
    parser = _Parser(
        prog="dpdesk",
        usage=USAGE if window_help else None,
        description="Answer counting queries under differential privacy. "
        "Without a COMMAND, dpdesk opens its window.",
    )
    parser.add_argument("--version", action="version", version=f"dpdesk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(f"dpdesk.commands.{name}").register(sub)
    parser.command_names = frozenset(sub.choices)
    if window_help:
        group = parser.add_argument_group("the window (without a COMMAND)")
        group.add_argument(
            "project",
            metavar="PROJECT",
            nargs="?",
            help="a project file (*.dpdesk) to open, as a double-click in the file manager does",
        )
        from dpdesk.gui.app.launch import add_window_arguments  # argparse only: no Qt imported

        add_window_arguments(group)
        group.add_argument(
            "--self-test",
            action="store_true",
            help="check this installation end to end on a throwaway demo project (offscreen) "
            "and exit 0 if it works; --verbose shows each step",
        )
    return parser


def opens_window(argv: Sequence[str]) -> bool:
    """Whether this command line is for the window rather than a subcommand.

    The window takes no arguments, its own ``--options``, or a project path first: whatever a file
    manager passes for a double-click (``dpdesk %f`` on Linux, ``dpdesk.exe "%1"`` on Windows). A first
    argument is a path, not a subcommand, when it names a ``*.dpdesk`` file, has a directory part, or
    is an existing file that is not also a command's name; anything else goes to the command parser,
    so a mistyped command still gets its "invalid choice" error.
    """
    if not argv:
        return True
    first = argv[0]
    if first in ("-h", "--help", "--version"):
        return False
    if first.startswith("-"):
        return True
    if first.lower().endswith(".dpdesk") or os.sep in first or "/" in first:
        return True
    return os.path.isfile(first) and first not in build_parser().command_names


def fail(message: str) -> int:
    print(f"dpdesk: error: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # a reader that went away shows here, not as a traceback at exit
        return code
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """The reader of the output went away (``dpdesk … --json | head``): stop quietly, as ``cat`` does.

    Nothing is lost that was recorded: a release is in the ledger before it is printed. Python flushes
    stdout once more at exit and would report the broken pipe again, so stdout is pointed at the null
    device first. Portable: no SIGPIPE handler (Windows has none); exit code 1, Python's advice.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout replaced by an object without a descriptor
        pass
    return 1


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--self-test" in argv or "--startup-probe" in argv:
        from dpdesk import selftest

        return int(selftest.main(argv))
    if opens_window(argv):
        from dpdesk.gui.app.launch import main as open_window

        try:
            return int(open_window(argv))
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.split(".")[0] in ("PySide6", "pyqtgraph"):
                return fail(
                    f"the window needs {exc.name.split('.')[0]}, which is not installed "
                    "(pip install 'dpdesk[gui]'); the commands work without it (dpdesk --help)"
                )
            raise
    if argv and argv[0] in ("-h", "--help"):
        build_parser(window_help=True).print_help()
        return 0
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        raise  # an OSError, but not the curator's: main() ends quietly
    except DpdeskError as exc:
        return fail(str(exc))
    except OSError as exc:
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        return fail(f"{exc.strerror or exc}{where}")
    except sqlite3.Error as exc:  # the project file could not be written (a full disk, a failing device)
        return fail(_database_error(args, exc))
    except KeyboardInterrupt:
        return fail("interrupted")


def _database_error(args: argparse.Namespace, exc: sqlite3.Error) -> str:
    """One line for an SQLite error the store did not word itself: the project file it concerns and what
    SQLite said. A transaction that fails is rolled back whole, so what the command had not yet recorded
    was not recorded; what it recorded before stays (a batch's bought measurements are resumed as planned)."""
    from pathlib import Path

    from dpdesk.store.db import disk_full_note

    path = getattr(args, "path", None) or getattr(args, "project", None)
    if not isinstance(path, (str, os.PathLike)):
        return f"the project file: {exc}"
    return (
        f"{Path(path).name}: {exc}{disk_full_note(Path(path))} — the change under way was not recorded; "
        "run the command again once that is fixed"
    )


if __name__ == "__main__":
    raise SystemExit(main())
