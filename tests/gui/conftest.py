"""Fixtures for the GUI tests: real windows on real project files in temporary folders.

Message boxes are intercepted through :mod:`dpdesk.gui.dialogs` (never by sleeping): errors and
notices are recorded, confirmations answer yes. Settings live in a temporary INI file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

# How long a test waits for the GUI to reach a state, in milliseconds: a bound on a hang, not a speed
# requirement — a loaded machine may take many times a quiet one's seconds, and a test that waits for
# something that never comes still fails (here, or at pytest-timeout's limit per test, pyproject.toml).
WAIT = 120_000


class Dialogs:
    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []
        self.infos: list[tuple[str, str]] = []
        self.confirms: list[tuple[str, str]] = []
        self.spends: list[tuple[str, str]] = []  # the spend confirmations (also in ``confirms``)
        self.confirm_answer = True
        self.asked: list[tuple[str, str, str]] = []
        self.text_answer: str | None = ""  # "": keep the offered text; None: cancel
        self.choices: list[tuple[str, list[str]]] = []
        self.choice: int | None = 0  # index chosen; None: cancel


@pytest.fixture
def dialogs(monkeypatch) -> Dialogs:
    from dpdesk.gui import dialogs as mod

    rec = Dialogs()
    rec.real = {
        name: getattr(mod, name) for name in ("choose", "confirm_spend", "confirm")
    }  # for tests of them
    monkeypatch.setattr(
        mod, "show_error", lambda parent, title, message, detail="": rec.errors.append((title, message))
    )
    monkeypatch.setattr(mod, "show_info", lambda parent, title, message: rec.infos.append((title, message)))

    def confirm(parent, title, message):
        rec.confirms.append((title, message))
        return rec.confirm_answer

    monkeypatch.setattr(mod, "confirm", confirm)

    def confirm_spend(parent, heading, body):
        rec.spends.append((heading, body))
        return confirm(parent, "Spend privacy budget", f"{heading}\n\n{body}")

    monkeypatch.setattr(mod, "confirm_spend", confirm_spend)

    def ask_text(parent, title, label, text=""):
        rec.asked.append((title, label, text))
        return None if rec.text_answer is None else (rec.text_answer or text)

    monkeypatch.setattr(mod, "ask_text", ask_text)

    def choose(parent, title, message, options):
        rec.choices.append((message, list(options)))
        return rec.choice

    monkeypatch.setattr(mod, "choose", choose)
    return rec


@pytest.fixture
def settings(tmp_path: Path):
    from PySide6.QtCore import QSettings

    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def wait_assessed(qtbot, window, request_id: str | None = None, timeout: int = WAIT):
    panel = window.requests.answer
    qtbot.waitUntil(
        lambda: (
            panel.assessment is not None
            and not panel.runner.is_running()
            and (request_id is None or panel.assessment.request_id == request_id)
        ),
        timeout=timeout,
    )
    return panel.assessment


def wait_released(qtbot, window, timeout: int = WAIT) -> None:
    """Wait until the answer panel's release (run off the GUI thread) was recorded or refused."""
    panel = window.requests.answer
    qtbot.waitUntil(lambda: not panel.release_runner.is_running(), timeout=timeout)


@pytest.fixture
def demo_window(qtbot, tmp_path: Path, settings, dialogs):
    """The main window with a fresh demo project opened through the Start page's Open demo button."""
    from PySide6.QtCore import Qt

    from dpdesk.gui.app.main_window import MainWindow

    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    qtbot.mouseClick(win.start.demo_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.session is not None, timeout=WAIT)
    wait_assessed(qtbot, win)
    yield win
    if win.session is not None:
        win.close()
