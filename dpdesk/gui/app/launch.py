"""Start the desktop app: ``dpdesk`` / ``dpdesk --demo`` / ``dpdesk PROJECT`` / ``dpdesk --screenshot DIR``.

``main(argv)`` is what :mod:`dpdesk.cli` calls when no subcommand is given: it reads the options,
picks the Qt platform (offscreen for screenshots) and opens the main window.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence


def _ensure_platform(headless: bool) -> None:
    if headless and not os.environ.get("QT_QPA_PLATFORM"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    # Qt on Linux wants a private runtime folder; Windows and macOS have no such thing.
    if sys.platform.startswith("linux") and not os.environ.get("XDG_RUNTIME_DIR"):
        os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="dpdesk-xdg-")  # mode 0700 already


SCREENSHOT_SCREEN = (1920, 1080)  # the offscreen screen screenshots are taken on: every size shot fits it


def _screenshot_platform() -> None:
    """Offscreen on a screen as large as the largest shot (the plain offscreen screen is 800×800, and the
    window keeps inside its screen)."""
    if os.environ.get("QT_QPA_PLATFORM", "offscreen") != "offscreen":
        return  # a platform (or an offscreen configuration) the caller chose
    import json

    w, h = SCREENSHOT_SCREEN
    path = os.path.join(tempfile.mkdtemp(prefix="dpdesk-screen-"), "screen.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"screens": [{"name": "shots", "x": 0, "y": 0, "width": w, "height": h}]}, f)
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={path}"


def add_window_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The window's own options (also listed by ``dpdesk --help``; argparse only, no Qt)."""
    parser.add_argument(
        "--demo", action="store_true", help="open the bundled demo project (a copy in your data folder)"
    )
    parser.add_argument(
        "--screenshot",
        metavar="DIR",
        help="render each page of a demo project to DIR/*.png, offscreen, and exit",
    )
    parser.add_argument("--settings", metavar="INI", help="keep window settings in this INI file")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dpdesk", description="dpdesk desktop app")
    p.add_argument("project", nargs="?", help="a project file (*.dpdesk) to open")
    add_window_arguments(p)
    return p


def open_window(args: argparse.Namespace):
    """The application and its shown main window, with ``args.project`` (or the demo) opening.

    Documents the platform hands over later (macOS Finder sends a ``QFileOpenEvent``, not a command
    line) open in this window too.
    """
    from dpdesk.gui.app.application import application, settings_at
    from dpdesk.gui.app.file_open import FileOpenHandler
    from dpdesk.gui.app.main_window import MainWindow

    app = application()
    win = MainWindow(settings_at(args.settings))
    FileOpenHandler.install(app, win.open_project, owner=win)
    win.show()
    if args.demo:
        win.open_demo()
    elif args.project:
        win.open_project(os.path.abspath(args.project))  # the title and recent list name the real place
    return app, win


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    headless = bool(args.screenshot) or not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform in ("win32", "darwin")
    )
    if headless and not args.screenshot and not os.environ.get("QT_QPA_PLATFORM"):
        print(
            "dpdesk: no display found. Run under a desktop session, under Xvfb (xvfb-run dpdesk --demo), "
            "or set QT_QPA_PLATFORM=offscreen to run without showing a window.",
            file=sys.stderr,
        )
        return 2
    if args.screenshot:
        _screenshot_platform()
    _ensure_platform(headless)
    if args.screenshot:
        from dpdesk.gui.app.screenshots import screenshot

        return screenshot(args.screenshot, args.settings)
    app, _win = open_window(args)
    return int(app.exec())
