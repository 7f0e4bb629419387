"""Closing a project writes its ledger-view cache on a worker; quitting finishes it, or skips it when asked.

A real window (offscreen) on a real demo project with a few releases; ``view_cache.MIN_ROWS`` is lowered
so its short view is worth caching (a long project's takes ~20 s of CPU, benchmarks/bench_gui_exports.py).
``Project.save_view_cache`` is wrapped only to see where it runs and what progress it reports; with
``hold`` the worker waits at its first report until the test lets it go or the window cancels it.
"""

from __future__ import annotations

import threading

import pytest

from .conftest import WAIT, wait_assessed


@pytest.fixture
def project_path(tmp_path, monkeypatch):
    from dpdesk.appdata.demo import demo_project
    from dpdesk.gui.runtime.scripted import work_through
    from dpdesk.gui.runtime.session import ProjectSession
    from dpdesk.store import view_cache

    monkeypatch.setattr(view_cache, "MIN_ROWS", 1)
    path, _ = demo_project(tmp_path / "data")
    s = ProjectSession(path)
    work_through(s, ("q01", "q02", "q03"))
    s.close(save_cache=False)
    assert not view_cache.cache_path(path).exists()
    return path


class SaveSpy:
    def __init__(self, monkeypatch, hold: bool = False) -> None:
        from dpdesk.store.project import Project

        self.original, self.hold = Project.save_view_cache, hold
        self.threads: list[bool] = []  # for each call: on the GUI thread?
        self.progress: list[float] = []
        self.reached, self.go = threading.Event(), threading.Event()
        spy = self

        def save(project, *, progress=None, cancelled=None):
            spy.threads.append(threading.current_thread() is threading.main_thread())

            def report(f: float) -> None:
                spy.progress.append(f)
                if progress is not None:
                    progress(f)
                if spy.hold and not spy.reached.is_set():
                    spy.reached.set()
                    # held until the test lets it go or the window asks it to stop, whichever comes first
                    for _ in range(int(WAIT / 10)):
                        if spy.go.wait(0.01) or (cancelled is not None and cancelled()):
                            break

            return spy.original(project, progress=report, cancelled=cancelled)

        monkeypatch.setattr(Project, "save_view_cache", save)


def _open(qtbot, settings, path):
    from dpdesk.gui.app.main_window import MainWindow

    win = MainWindow(settings)
    qtbot.addWidget(win)
    win.show()
    win.open_project(str(path))
    wait_assessed(qtbot, win)  # the view was read (and its History factored)
    return win


def _lock_free(path) -> bool:
    from dpdesk.store.project import Project

    Project.open(path, "w").close(save_cache=False)  # raises while the window still holds the project
    return True


def test_closing_writes_the_cache_on_a_worker_with_progress(
    qtbot, settings, dialogs, monkeypatch, project_path
):
    from dpdesk.store import view_cache

    spy = SaveSpy(monkeypatch)
    win = _open(qtbot, settings, project_path)
    win.close_project()
    assert (
        win.session is None and win.closing.is_running()
    )  # the pages are gone; the cache is written meanwhile
    qtbot.waitUntil(lambda: not win.closing.is_running(), timeout=WAIT)
    assert spy.threads == [False]  # once, off the GUI thread (closing the project then has nothing to write)
    assert spy.progress and spy.progress == sorted(spy.progress) and spy.progress[-1] == pytest.approx(1.0)
    assert view_cache.cache_path(project_path).exists() and _lock_free(project_path)
    assert win.isVisible() and not dialogs.errors


def test_quitting_waits_for_the_cache_and_a_second_close_skips_it(
    qtbot, settings, dialogs, monkeypatch, project_path
):
    from dpdesk.store import view_cache

    spy = SaveSpy(monkeypatch, hold=True)
    win = _open(qtbot, settings, project_path)
    win.close()
    qtbot.waitUntil(spy.reached.is_set, timeout=WAIT)
    assert win.isVisible() and win.closing.isVisibleTo(win)  # waits for the cache, showing it
    win.close()  # asked again: skip it
    assert win.isVisible()  # until the worker has stopped
    spy.go.set()
    qtbot.waitUntil(lambda: not win.isVisible(), timeout=WAIT)
    assert spy.threads == [False] and _lock_free(project_path)
    folder = project_path.parent
    assert not view_cache.cache_path(project_path).exists()  # skipped: nothing written, no temporary left
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
    assert not dialogs.errors


def test_quitting_finishes_the_cache(qtbot, settings, dialogs, monkeypatch, project_path):
    from dpdesk.store import view_cache

    spy = SaveSpy(monkeypatch)
    win = _open(qtbot, settings, project_path)
    win.close()
    qtbot.waitUntil(lambda: not win.isVisible(), timeout=WAIT)
    assert (
        spy.threads == [False] and view_cache.cache_path(project_path).exists() and _lock_free(project_path)
    )


def test_reopening_the_project_while_its_cache_is_written_skips_the_cache(
    qtbot, settings, dialogs, monkeypatch, project_path
):
    from dpdesk.store import view_cache

    spy = SaveSpy(monkeypatch, hold=True)
    win = _open(qtbot, settings, project_path)
    win.close_project()
    qtbot.waitUntil(spy.reached.is_set, timeout=WAIT)
    # the worker is held until the window asks it to stop: it goes on while the window waits for it
    assert win.open_project(str(project_path))  # the file is free again: its cache write was skipped
    assert not win.closing.is_running() and win.session is not None and not dialogs.errors
    assert not view_cache.cache_path(project_path).exists()
    wait_assessed(qtbot, win)
    win.close()  # quitting writes the cache this time (nothing holds the worker any more)
    qtbot.waitUntil(lambda: not win.isVisible(), timeout=WAIT)
    assert view_cache.cache_path(project_path).exists()
