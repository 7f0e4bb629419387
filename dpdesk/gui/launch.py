"""Start the desktop app: ``dpdesk`` / ``dpdesk --demo`` / ``dpdesk PROJECT`` / ``dpdesk --screenshot DIR``.

``main(argv)`` is what :mod:`dpdesk.cli` calls when no subcommand is given. ``--screenshot DIR``
renders every page of a freshly made demo project (with a few requests already worked through)
to PNG files, offscreen, and exits. :func:`run_view` backs each view module's
``if __name__ == "__main__":`` block: it shows that one view over a throwaway demo project.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

ORG = "dpdesk"
APP = "dpdesk"


def _ensure_platform(headless: bool) -> None:
    if headless and not os.environ.get("QT_QPA_PLATFORM"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    if not os.environ.get("XDG_RUNTIME_DIR"):
        d = tempfile.mkdtemp(prefix="dpdesk-xdg-")
        os.chmod(d, 0o700)
        os.environ["XDG_RUNTIME_DIR"] = d


def application():
    """The QApplication (created once) with dpdesk's names, icon and exception dialogs."""
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from dpdesk.gui.dialogs import install_excepthook
    from dpdesk.gui.paths import resource

    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    try:
        app.setWindowIcon(QIcon(str(resource("icons", "dpdesk.svg"))))
    except FileNotFoundError:
        pass
    install_excepthook()
    _quiet_offscreen()
    return app


_previous_handler = None


def _quiet_offscreen() -> None:
    """Drop the offscreen plugin's harmless 'propagateSizeHints' notice (PLATFORM.md); pass the rest on."""
    global _previous_handler
    from PySide6.QtCore import qInstallMessageHandler

    if _previous_handler is not None:
        return

    def handler(mode, context, message):  # noqa: ANN001
        if "propagateSizeHints" in message:
            return
        if callable(_previous_handler):
            _previous_handler(mode, context, message)
        else:
            sys.stderr.write(message + "\n")

    _previous_handler = qInstallMessageHandler(handler) or True


def settings_at(path: str | None):
    """QSettings in an INI file at ``path`` (tests, screenshots) or the platform's usual place."""
    from PySide6.QtCore import QSettings

    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings(ORG, APP)


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Process events until ``condition()`` holds (for scripted runs; tests use qtbot.waitUntil)."""
    from PySide6.QtWidgets import QApplication

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        QApplication.processEvents()
        if condition():
            return True
        time.sleep(0.01)
    return False


def work_through(session, request_ids: Sequence[str]) -> None:
    """Decide requests as the engine says (used by screenshots and the standalone views)."""
    for rid in request_ids:
        if session.request(rid).status != "pending":
            continue
        a = session.project.assess(rid)
        if a.decision == "reject":
            session.reject(rid, a.reason)
        else:
            session.answer(rid, a.decision)


SCRIPTED = ("q01", "q02", "q03", "q04", "q05", "q06", "q07", "q08", "q09", "q11", "q12", "q13", "q14", "q34")


def screenshot(directory: str, settings_path: str | None = None) -> int:
    """Render each page of a demo project to ``directory``/*.png."""
    from dpdesk.gui.demo import create_demo_project
    from dpdesk.gui.main_window import MainWindow

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    app = application()
    tmp = Path(tempfile.mkdtemp(prefix="dpdesk-shots-"))
    win = MainWindow(settings_at(settings_path or str(tmp / "settings.ini")), demo_folder=tmp)
    win.resize(1440, 920)
    win.show()
    path = create_demo_project(tmp)
    win.start.set_recent([str(path)])
    shots: list[str] = []

    def grab(name: str) -> None:
        wait_until(lambda: False, 0.3)
        win.grab().save(str(out / f"{name}.png"))
        shots.append(name)

    win.show_page("start")
    grab("start")
    win.open_project(str(path))
    work_through(win.session, SCRIPTED)
    win.show_page("data")
    wait_until(lambda: not win.data.runner.is_running() and win.data.source is not None)
    win.data.build_cube()
    wait_until(lambda: win.data.cube is not None)
    grab("data")
    win.show_page("requests")
    win.requests.select_request("q37")
    wait_until(lambda: win.requests.answer.assessment is not None)
    win.requests.budget.preview.setChecked(True)
    grab("requests-fresh")
    win.requests.select_request("q25")
    wait_until(lambda: win.requests.answer.assessment is not None)
    grab("requests-infer")
    win.requests.select_request("q32")
    wait_until(lambda: win.requests.answer.assessment is not None)
    win.requests.budget.mode.setCurrentIndex(1)
    win.requests.budget.row_attr.setCurrentIndex(2)
    win.requests.budget.col_attr.setCurrentIndex(0)
    grab("requests-slice")
    win.show_page("audit")
    win.audit.verify()
    win.audit.table.selectRow(1)
    grab("audit")
    win.close()
    app.processEvents()
    print(f"wrote {', '.join(s + '.png' for s in shots)} to {out}")
    return 0


def run_view(name: str) -> None:
    """Show one view over a throwaway demo project (the view modules' ``__main__``)."""
    from PySide6.QtWidgets import QApplication

    from dpdesk.gui.demo import create_demo_project
    from dpdesk.gui.session import ProjectSession

    app = application()
    tmp = Path(tempfile.mkdtemp(prefix="dpdesk-view-"))
    session = ProjectSession(create_demo_project(tmp))
    work_through(session, SCRIPTED[:8])
    if name in ("posterior", "answer"):
        from dpdesk.gui.answer_panel import AnswerPanel

        w = AnswerPanel(session)
        w.set_request("q10")
    elif name == "budget":
        from dpdesk.gui.budget_panel import BudgetPanel

        w = BudgetPanel(session)
    elif name == "requests":
        from dpdesk.gui.requests_page import RequestsPage

        w = RequestsPage(session)
    elif name == "audit":
        from dpdesk.gui.audit_page import AuditPage

        w = AuditPage(session)
    elif name == "query":
        from dpdesk.gui.query_builder import QueryBuilderDialog

        w = QueryBuilderDialog(session.schema)
    elif name == "start":
        from dpdesk.gui.start_page import StartPage

        w = StartPage()
    elif name in ("data", "schema"):
        from dpdesk.gui.data_page import DataPage

        w = DataPage()
        w.set_session(session)
    else:
        raise SystemExit(f"unknown view {name!r}")
    w.resize(1100, 800)
    w.show()
    QApplication.instance().exec()
    session.close()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dpdesk", description="dpdesk desktop app")
    p.add_argument("project", nargs="?", help="a project file (*.dpdesk) to open")
    p.add_argument("--demo", action="store_true", help="open a fresh copy of the bundled demo project")
    p.add_argument("--screenshot", metavar="DIR", help="render each page of the demo project to DIR/*.png and exit")
    p.add_argument("--settings", metavar="INI", help="keep window settings in this INI file")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    headless = bool(args.screenshot) or not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                                             or sys.platform in ("win32", "darwin"))
    if headless and not args.screenshot and not os.environ.get("QT_QPA_PLATFORM"):
        print("dpdesk: no display found. Run under a desktop session, under Xvfb (xvfb-run dpdesk --demo), "
              "or set QT_QPA_PLATFORM=offscreen to run without showing a window.", file=sys.stderr)
        return 2
    _ensure_platform(headless)
    if args.screenshot:
        return screenshot(args.screenshot, args.settings)
    from dpdesk.gui.main_window import MainWindow

    app = application()
    win = MainWindow(settings_at(args.settings))
    win.show()
    if args.demo:
        win.open_demo()
    elif args.project:
        win.open_project(args.project)
    return int(app.exec())
