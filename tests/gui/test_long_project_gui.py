"""A long project opens without reading its ledger on the GUI thread (timings: benchmarks/bench_gui_open.py).

The demo project, after a few releases, is treated as long (``session.LARGE_LEDGER`` = 0) so the worker
path the window takes for thousands of entries runs here on a real window and a real project file.
"""

from __future__ import annotations

import threading

from .conftest import WAIT, wait_assessed, wait_released


def test_a_long_ledger_is_read_and_extended_off_the_gui_thread(
    qtbot, tmp_path, settings, dialogs, monkeypatch
):
    from dpdesk.appdata.demo import demo_project
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.gui.runtime import session as session_mod
    from dpdesk.gui.runtime.scripted import work_through
    from dpdesk.store import view as view_mod

    path, _ = demo_project(tmp_path / "data")
    s = session_mod.ProjectSession(path)
    work_through(s, ("q01", "q02", "q03"))
    first_pending = s.project.requests("pending")[0].id
    n_requests = len(s.requests())
    s.close()
    monkeypatch.setattr(session_mod, "LARGE_LEDGER", 0)
    on_gui_thread: list[bool] = []  # for each ledger entry the view takes: was it on the GUI thread?
    add = view_mod.LedgerView.add

    def recording_add(self, entry):
        on_gui_thread.append(threading.current_thread() is threading.main_thread())
        return add(self, entry)

    monkeypatch.setattr(view_mod.LedgerView, "add", recording_add)
    win = MainWindow(settings)
    qtbot.addWidget(win)
    win.show()
    win.open_project(str(path))
    session = win.session
    assert session.large and not session.loaded  # the window is up before the ledger is read
    assert win.requests.counts.text() == "Reading the ledger…"
    assert win.budget_label.text().endswith("reading the ledger…")
    a = wait_assessed(qtbot, win)
    assert session.loaded and a.request_id == first_pending
    qtbot.waitUntil(
        lambda: win.requests.model.rowCount() == n_requests, timeout=WAIT
    )  # the queue, from a worker
    assert win.requests.statuses[first_pending] == "pending"
    assert (
        win.requests.table.currentIndex().isValid()
        and win.requests.request_at(win.requests.current_row()) == first_pending
    )
    assert win.audit.model.rowCount() == 0  # the Audit page reads its table when it is first shown
    win.show_page("audit")
    qtbot.waitUntil(
        lambda: win.audit.model.rowCount() == 3 and not win.audit.runner.is_running(), timeout=WAIT
    )
    assert win.audit.curve[-1][1] == session.budget().system_cost > 0

    win.show_page("requests")
    panel = win.requests.answer
    decided = panel.assessment.decision
    (panel.release_inferred if decided == "infer" else panel.spend_and_release)()
    wait_released(qtbot, win)
    assert not dialogs.errors
    qtbot.waitUntil(lambda: win.requests.statuses.get(first_pending) == "answered", timeout=WAIT)
    win.show_page("audit")
    qtbot.waitUntil(
        lambda: win.audit.model.rowCount() == 4 and not win.audit.runner.is_running(), timeout=WAIT
    )
    assert len(on_gui_thread) == 4 and not any(on_gui_thread)  # every entry was taken on a worker
    win.close()
