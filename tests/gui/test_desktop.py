"""dpdesk as a desktop program: a project path on the command line, macOS open events, ``--help``.

The command line is run in-process through :func:`dpdesk.cli.main`, up to the event loop, and the real
window it shows is inspected. The installed ``.deb`` runs the whole route, event loop included, the
way a file manager does in ``packaging/smoke_test.sh``.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    from dpdesk.appdata.demo import create_demo_project

    return create_demo_project(tmp_path / "data")


def _run_window(argv: list[str], qtbot, monkeypatch):
    """``cli.main(argv)`` up to its event loop; returns the window it showed, for the test to inspect.

    The event loop itself is not run: a ``QApplication.exec()`` that returns inside the test process
    leaves Qt's thread pool unusable for the tests after it (the real app exits when it returns).
    """
    from PySide6.QtWidgets import QApplication

    from dpdesk import cli
    from dpdesk.gui.app.main_window import MainWindow

    monkeypatch.setattr(QApplication, "exec", lambda *_: 0)
    before = set(QApplication.topLevelWidgets())
    assert cli.main(argv) == 0
    windows = [
        w
        for w in QApplication.topLevelWidgets()
        if w not in before and isinstance(w, MainWindow) and w.isVisible()
    ]
    assert len(windows) == 1, windows
    qtbot.addWidget(windows[0])
    return windows[0]


def test_a_project_path_opens_in_the_window(qtbot, project, tmp_path, dialogs, monkeypatch):
    ini = str(tmp_path / "settings.ini")
    win = _run_window([str(project), "--settings", ini], qtbot, monkeypatch)
    assert Path(win.session.path) == project and win.requests is not None
    win.close()
    # a bare file name in the working directory, as a file manager may pass it
    monkeypatch.chdir(project.parent)
    win = _run_window([project.name, "--settings", ini], qtbot, monkeypatch)
    assert str(project.resolve()) in win.windowTitle() and "Adult census demo" in win.windowTitle()
    win.close()
    assert not dialogs.errors


def test_a_missing_project_is_reported_in_the_window(qtbot, tmp_path, dialogs, monkeypatch):
    missing = tmp_path / "gone" / "P.dpdesk"
    win = _run_window([str(missing), "--settings", str(tmp_path / "s.ini")], qtbot, monkeypatch)
    assert win.session is None
    assert len(dialogs.errors) == 1 and str(missing) in dialogs.errors[0][1]
    win.close()


def test_commands_and_mistyped_commands_still_go_to_the_command_line(tmp_path, capsys, monkeypatch):
    from dpdesk import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(["verfy", "P.dpdesk"])
    assert exited.value.code == 2
    assert "invalid choice: 'verfy'" in capsys.readouterr().err
    # a file that happens to share a command's name is still the command
    monkeypatch.chdir(tmp_path)
    (tmp_path / "verify").write_text("")
    assert not cli.opens_window(["verify", "x.dpdesk"])
    assert cli.opens_window(["notes"]) is False  # no such file: a mistyped command, not a path
    (tmp_path / "notes").write_text("")
    assert cli.opens_window(["notes"])  # an existing file that is not a command: a project path


def test_help_lists_the_window_options_and_the_commands(capsys):
    from dpdesk import cli

    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for option in (
        "PROJECT",
        "--demo",
        "--self-test",
        "--screenshot DIR",
        "--settings INI",
        "verify",
        "answer",
    ):
        assert option in out, option


def test_macos_file_open_event_opens_the_project(qtbot, project, tmp_path, dialogs):
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QFileOpenEvent
    from PySide6.QtWidgets import QApplication

    from dpdesk.appdata.demo import create_demo_project
    from dpdesk.gui.app import launch

    app, win = launch.open_window(launch._parser().parse_args(["--settings", str(tmp_path / "s.ini")]))
    qtbot.addWidget(win)
    assert win.session is None
    QApplication.sendEvent(app, QFileOpenEvent(str(project)))
    assert win.session is not None and Path(win.session.path) == project
    # while running, a second document replaces the first, in the same window
    other = create_demo_project(tmp_path / "other")
    QApplication.sendEvent(app, QFileOpenEvent(QUrl.fromLocalFile(str(other))))
    assert Path(win.session.path) == other
    # a remote URL is no file: ignored, the open project stays
    QApplication.sendEvent(app, QFileOpenEvent(QUrl("https://example.org/P.dpdesk")))
    assert Path(win.session.path) == other and not dialogs.errors
    win.close()
