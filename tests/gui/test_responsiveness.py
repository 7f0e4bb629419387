"""Long tasks run off the GUI thread, and the GUI thread turns its event loop while they run.

Checked without a clock, so a loaded machine cannot fail them: the task's own progress reports record
the thread they come from, and the first one from the middle of the task (a fraction strictly between
0 and 1) waits until the GUI thread has shown it — the runner's 50 ms poll emitted it on the GUI
thread while the task was still running (:class:`MidTask`). Were the work on the GUI thread, that
wait could not end: it gives up after ``PATIENCE`` seconds and the test fails. A release also checks
that its ledger entry is written on the worker. How long the GUI thread may pause between two events
during these tasks is a speed figure, measured by ``benchmarks/bench_gui_responsiveness.py``.
"""

from __future__ import annotations

import threading

import pytest

from .conftest import WAIT, wait_assessed, wait_released

ROWS = 3_000_000
PATIENCE = 120.0  # seconds a mid-task report waits to be shown: only a task on the GUI thread reaches it


class MidTask:
    """Watches one :class:`~dpdesk.gui.runtime.tasks.TaskRunner`'s task through ``TaskState.progress``.

    Records the thread of every progress report of the runner's current task; holds its first report
    of a fraction in (0, 1) until the runner has emitted such a fraction on the GUI thread.
    """

    def __init__(self, monkeypatch, runner) -> None:
        from dpdesk.gui.runtime.tasks import TaskState

        self.gui = threading.get_ident()
        self.runner = runner
        self.threads: list[int] = []
        self.reported: list[float] = []
        self.shown = threading.Event()  # the runner emitted a fraction in (0, 1) on the GUI thread
        self.held: bool | None = None  # None: no mid-task report yet; then whether it was shown in time
        runner.sigProgress.connect(self._emitted)
        original = TaskState.progress
        watch = self

        def progress(state, fraction: float) -> None:
            original(state, fraction)
            if state is not watch.runner._state:
                return  # another view's task
            watch.threads.append(threading.get_ident())
            watch.reported.append(float(fraction))
            if watch.held is None and 0.0 < fraction < 1.0:
                watch.held = watch.shown.wait(PATIENCE)

        monkeypatch.setattr(TaskState, "progress", progress)

    def _emitted(self, fraction: float) -> None:
        if threading.get_ident() == self.gui and 0.0 < fraction < 1.0:
            self.shown.set()

    def check(self) -> None:
        assert self.threads, "the task reported no progress"
        assert self.gui not in self.threads, "the task ran on the GUI thread"
        assert self.held is not None, f"the task reported no fraction between 0 and 1: {self.reported}"
        assert self.held, "the GUI thread did not show the task's progress while the task ran"


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path_factory.mktemp("big") / "big.csv"
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT 17 + (random() * 73)::INTEGER AS age,
                               CASE WHEN random() < 0.5 THEN 'Female' ELSE 'Male' END AS sex,
                               1 + (random() * 98)::INTEGER AS hours,
                               CASE WHEN random() < 0.25 THEN '>50K' ELSE '<=50K' END AS income
                        FROM range({ROWS})) TO '{path}' (HEADER, DELIMITER ',')""")
    con.close()
    return path


def test_cube_build_over_millions_of_rows_runs_on_a_worker(qtbot, big_csv, dialogs, monkeypatch):
    from dpdesk.gui.pages.data_page import DataPage

    page = DataPage()
    qtbot.addWidget(page)
    page.show()
    page.open_table(str(big_csv))
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    page.editor.set_attribute("age", "age", "numeric", [17, 25, 35, 45, 55, 65, 91])
    page.editor.set_attribute("sex", "sex", "categorical", ["Female", "Male"])
    page.editor.set_attribute("hours", "hours", "numeric", [1, 20, 35, 41, 50, 100])
    page.editor.set_attribute("income", "income", "categorical", ["<=50K", ">50K"])
    watch = MidTask(monkeypatch, page.runner)
    page.build_cube()
    qtbot.waitUntil(lambda: page.cube is not None, timeout=WAIT)
    assert not dialogs.errors
    assert page.cube.total + page.cube.out_of_domain == ROWS
    watch.check()


def test_cancel_stops_a_cube_build(qtbot, big_csv, dialogs):
    from dpdesk.gui.pages.data_page import DataPage
    from dpdesk.gui.runtime.tasks import TaskRunner

    page = DataPage()
    qtbot.addWidget(page)
    page.open_table(str(big_csv))
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    page.editor.set_attribute("sex", "sex", "categorical", ["Female", "Male"])
    page.build_cube()
    assert page.cancel_btn.isEnabled()
    page.cancel_btn.click()
    assert not page.runner.is_running() and not page.cancel_btn.isEnabled()
    # the cancelled worker ends (its result, if any, is dropped when it reaches the GUI thread)
    assert TaskRunner.pool().waitForDone(int(WAIT))
    qtbot.wait(50)  # deliver whatever the worker posted to the GUI thread
    assert page.cube is None and not dialogs.errors


def test_monte_carlo_posterior_runs_on_a_worker(demo_window, qtbot, monkeypatch):
    win = demo_window
    from dpdesk.engine.inference import posterior as posterior_module
    from dpdesk.gui.runtime.scripted import work_through

    # at least 2·10⁶ samples, drawn in chunks of at most 2·10⁵ on the worker, each reporting its progress:
    # the demo's own sample size can be a single chunk, whose only report is the last (1.0)
    monkeypatch.setattr(posterior_module, "_MC_FLOOR", 2_000_000)

    work_through(win.session, ("q01", "q02", "q04", "q06", "q07", "q11", "q12", "q13"))
    panel = win.requests.answer
    win.requests.select_request("q14")  # count(hours="50-99") = q12 + q13 (and q11)
    wait_assessed(qtbot, win, "q14")
    watch = MidTask(monkeypatch, panel.runner)
    panel.method.setCurrentText("mc")
    a = wait_assessed(qtbot, win, "q14", timeout=WAIT)
    assert a.method == "mc" and a.posterior is not None
    watch.check()


def test_a_release_over_millions_of_rows_runs_on_a_worker(
    qtbot, big_csv, tmp_path, settings, dialogs, monkeypatch
):
    """The first fresh answer scans and fingerprints the 3 M-row table, draws from OpenDP and writes its
    ledger entry: all on the worker, with the scan's progress on the panel's bar meanwhile."""
    from PySide6.QtCore import Qt

    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.store import Project, ledger

    schema = {
        "attributes": [
            {"name": "age", "column": "age", "kind": "numeric", "edges": [17, 25, 35, 45, 55, 65, 91]},
            {"name": "sex", "column": "sex", "kind": "categorical", "values": ["Female", "Male"]},
            {"name": "income", "column": "income", "kind": "categorical", "values": ["<=50K", ">50K"]},
        ]
    }
    path = tmp_path / "big.dpdesk"
    with Project.create(path, name="big", schema=schema, source_location=str(big_csv), total_budget=1.0) as p:
        p.add_request('count(sex="Female", income=">50K")', 500.0, 0.05)
    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    assert win.open_project(str(path))
    a = wait_assessed(qtbot, win, "r1", timeout=WAIT)
    assert a.decision == "spend"
    panel = win.requests.answer
    watch = MidTask(monkeypatch, panel.release_runner)
    bar: list[int] = []  # the panel's progress bar whenever the runner reports
    panel.release_runner.sigProgress.connect(lambda _f: bar.append(panel.progress.value()))
    appended: list[int] = []  # the thread of each ledger entry written
    real_append = ledger.append

    def append(*args, **kwargs):
        appended.append(threading.get_ident())
        return real_append(*args, **kwargs)

    monkeypatch.setattr(ledger, "append", append)
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    assert panel.progress.isVisible() and not panel.cancel_btn.isVisible()
    wait_released(qtbot, win, timeout=WAIT)
    assert not dialogs.errors
    entry = win.session.project.entry_for("r1")
    assert (
        entry is not None
        and entry.payload["alpha"] == a.spend_alpha
        and entry.payload["sampler"].startswith("opendp")
    )
    watch.check()
    assert any(0 < v < panel.progress.maximum() for v in bar), f"the bar showed no progress: {bar}"
    assert len(appended) == 1 and appended[0] != watch.gui, "the ledger entry was written on the GUI thread"
