"""Drive the real window through the curator's workflow on a real demo project file."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from dpdesk.appdata.bundled import resource
from dpdesk.engine.budget.accounting import preview
from dpdesk.gui.widgets.heatmap_view import project_2d
from dpdesk.store.project import Project

from .conftest import WAIT, wait_assessed, wait_released


def select(qtbot, win, rid):
    win.requests.select_request(rid)
    return wait_assessed(qtbot, win, rid)


def test_open_demo_copies_bundle_and_lists_requests(demo_window, tmp_path, qtbot):
    win = demo_window
    path = win.session.path
    assert path.is_relative_to(tmp_path / "data")  # in the data folder, not in resources/
    assert (path.parent / "adult.parquet").read_bytes() == resource("demo", "adult.parquet").read_bytes()
    assert win.session.project.source.location == str(path.parent / "adult.parquet")
    assert win.requests.model.rowCount() == 39
    assert all(r.status == "pending" for r in win.session.requests())
    assert win.tabs.currentWidget() is win.requests
    assert win.requests.budget.gauge.remaining == 1.0
    # Open demo again: the same copy, untouched, not another folder in the data folder.
    qtbot.mouseClick(win.start.demo_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.session is not None and win.start.demo_btn.isEnabled(), timeout=WAIT)
    assert win.session.path == path and "reopened" in win.start.status.text()
    assert list((tmp_path / "data").glob("demo-*")) == [path.parent]


def test_build_cube_in_background(demo_window, qtbot):
    win = demo_window
    data = win.data
    qtbot.waitUntil(lambda: data.source is not None and not data.runner.is_running(), timeout=WAIT)
    assert data.model.rowCount() > 0 and data.preview_badge.isVisibleTo(data)
    assert data.preview_badge.text() == "PRIVATE"
    qtbot.mouseClick(data.build_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: data.cube is not None, timeout=WAIT)
    reference = win.session.project.cube()  # the store's own cube of the bound source
    assert np.array_equal(data.cube.counts, reference.counts)
    assert data.cube.out_of_domain == reference.out_of_domain == 60
    assert f"{reference.total:,} records" in data.cube_info.text()
    assert data.cube_badge.isVisibleTo(data)


def test_fresh_answer_changes_ledger_heatmap_and_budget_by_engine_values(demo_window, qtbot, dialogs):
    win = demo_window
    a = select(qtbot, win, "q01")
    assert a.decision == "spend" and not a.estimable
    panel, budget = win.requests.answer, win.requests.budget
    assert panel.spend_btn.isEnabled() and not panel.infer_btn.isVisible()
    before = win.session.project.history().cell_costs.copy()
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    assert (
        dialogs.confirms
        and f"{a.budget.system_cost:.6g} → {a.budget.system_cost_after:.6g}" in dialogs.confirms[-1][1]
    )
    entry = win.session.ledger()[-1]
    assert (entry.kind, entry.request_id, entry.payload["alpha"]) == ("fresh", "q01", a.cost)
    assert win.session.request("q01").status == "answered"
    # the store's recomputed costs are what the panel shows, and they are the engine's preview
    with Project.open(win.session.path, "r") as ro:
        after = ro.history().cell_costs
        report = ro.verify()
    assert not np.array_equal(after, before)
    np.testing.assert_allclose(after, a.budget.cell_costs_after, rtol=1e-12, atol=1e-15)
    budget.preview.setChecked(False)
    assert np.array_equal(budget.shown_costs, after)
    mat, _ = project_2d(after, win.session.schema.shape, 0, 1, "max", {})
    assert np.array_equal(budget.heatmap.matrix, mat)
    engine = preview(after, 1.0)
    assert budget.gauge.remaining == engine.remaining == report.remaining
    assert engine.remaining == 1.0 - a.budget.system_cost_after or np.isclose(
        engine.remaining, a.budget.remaining_after
    )
    assert "Released for q01" in panel.result.text()
    audit_rows = win.audit.model.rowCount()
    assert audit_rows == 1 and win.audit.curve[-1][1] == report.system_cost


def test_later_request_answered_from_history_at_zero_cost(demo_window, qtbot):
    win = demo_window
    panel = win.requests.answer
    for rid in ("q01", "q02"):
        select(qtbot, win, rid)
        qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
        wait_released(qtbot, win)
    spent = win.session.budget()
    a = select(qtbot, win, "q03")  # count(sex=[Female, Male]) = q01 + q02
    assert a.decision == "infer" and a.estimable and a.confidence_at_eps >= 0.95
    assert panel.infer_btn.isEnabled() and not panel.spend_btn.isEnabled()
    assert panel.plot.mode in ("bars", "steps")
    # the panel names the posterior method that ran and the error it states
    from dpdesk.gui.panels.assessment_text import METHOD_WORDS

    assert a.method is not None and panel.fields["method"].text().startswith(METHOD_WORDS[a.method])
    assert f"error ≤ {a.error_bound:.1e}" in panel.fields["method"].text()
    # Monte Carlo states its bound and is never called exact (issue 12 item 4)
    panel.method.setCurrentText("mc")
    qtbot.waitUntil(
        lambda: (
            panel.assessment is not None and panel.assessment.method == "mc" and not panel.runner.is_running()
        ),
        timeout=WAIT,
    )
    shown = panel.fields["method"].text()
    assert shown.startswith(METHOD_WORDS["mc"]) and "exact" not in shown.lower() and "0.999" in shown
    panel.method.setCurrentText("fft")
    qtbot.waitUntil(
        lambda: (
            panel.assessment is not None
            and panel.assessment.method == a.method
            and not panel.runner.is_running()
        ),
        timeout=WAIT,
    )
    qtbot.mouseClick(panel.infer_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    entry = win.session.ledger()[-1]
    assert entry.kind == "inferred" and entry.request_id == "q03"
    assert entry.payload["estimate"] == a.estimate.estimate
    assert win.session.budget().system_cost == spent.system_cost  # free
    assert win.requests.budget.gauge.remaining == spent.remaining


def test_reject_records_refusal_and_spends_nothing(demo_window, qtbot):
    win = demo_window
    select(qtbot, win, "q10")
    qtbot.mouseClick(win.requests.answer.reject_btn, Qt.MouseButton.LeftButton)
    entry = win.session.ledger()[-1]
    assert (entry.kind, entry.request_id) == ("rejected", "q10")
    assert win.session.request("q10").status == "rejected"
    assert win.session.budget().system_cost == 0.0


def test_overspending_request_is_refused(demo_window, qtbot):
    win = demo_window
    a = select(qtbot, win, "q34")
    panel = win.requests.answer
    assert a.decision == "reject" and a.budget.system_cost_after > 1.0
    # every cell of count(income="<=50K") ties, so the reason names them all, not one picked among equals
    q34 = win.session.request("q34")
    cells = int(np.count_nonzero(q34.query.dense()))
    assert f"exceed the total budget in all {cells} cells of {q34.query_text}" in panel.reason.text()
    assert (
        not panel.spend_btn.isEnabled() and not panel.infer_btn.isEnabled() and panel.reject_btn.isEnabled()
    )
    qtbot.keySequence(win.requests, QKeySequence("Ctrl+Shift+S"))  # the spend shortcut does nothing
    assert win.session.ledger() == []
    qtbot.keySequence(win.requests, QKeySequence("Ctrl+Shift+R"))
    assert win.session.ledger()[-1].kind == "rejected"
    assert win.session.budget().system_cost == 0.0


def test_keyboard_next_previous_and_release(demo_window, qtbot):
    win = demo_window
    select(qtbot, win, "q01")
    qtbot.keySequence(win.requests, QKeySequence("Ctrl+Down"))
    assert wait_assessed(qtbot, win, "q02").request.id == "q02"
    qtbot.keySequence(win.requests, QKeySequence("Ctrl+Up"))
    wait_assessed(qtbot, win, "q01")
    qtbot.keySequence(win.requests, QKeySequence("Ctrl+Shift+S"))
    wait_released(qtbot, win)
    assert win.session.request("q01").status == "answered"


def test_malformed_table_gives_a_dialog_not_a_crash(demo_window, qtbot, dialogs, tmp_path):
    win = demo_window
    win.close_project()
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"PAR1 this is not really parquet \x00\x01\x02")
    win.data.open_table(str(bad))
    qtbot.waitUntil(lambda: bool(dialogs.errors), timeout=WAIT)
    title, message = dialogs.errors[-1]
    assert "broken.parquet" in message and "try again" in message.lower()
    assert win.data.source is None and win.isVisible()


def test_close_and_reopen_shows_the_same_state(demo_window, qtbot, settings, tmp_path):
    from dpdesk.gui.app.main_window import MainWindow

    win = demo_window
    panel = win.requests.answer
    for rid in ("q01", "q02"):
        select(qtbot, win, rid)
        qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
        wait_released(qtbot, win)
    select(qtbot, win, "q03")
    qtbot.mouseClick(panel.infer_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    select(qtbot, win, "q34")
    qtbot.mouseClick(panel.reject_btn, Qt.MouseButton.LeftButton)
    panel.method.setCurrentText("direct")
    path = str(win.session.path.resolve())
    statuses = [(r.id, r.status) for r in win.session.requests()]
    ledger = [e.hash for e in win.session.ledger()]
    remaining = win.requests.budget.gauge.remaining
    win.close()
    again = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(again)
    again.show()
    assert again.recent()[0] == path and again.start.recent.count() >= 1
    again.start.recent.itemActivated.emit(again.start.recent.item(0))
    assert again.session is not None
    wait_assessed(qtbot, again)
    assert [(r.id, r.status) for r in again.session.requests()] == statuses
    assert [e.hash for e in again.session.ledger()] == ledger
    assert again.requests.budget.gauge.remaining == remaining
    assert again.requests.answer.method.currentText() == "direct"  # layout/settings persisted
    assert again.audit.verify().ok
    again.close()


def test_a_release_whose_ledger_moved_is_refused_and_assessed_again_in_view(demo_window, qtbot, dialogs):
    win = demo_window
    panel = win.requests.answer
    shown = select(qtbot, win, "q01")
    assert shown.decision == "spend"
    # the ledger moves behind the panel's back (as another window or a script on this session would)
    project = win.session.project
    project.release(project.assess("q02"))
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    assert "Not released:" in panel.result.text() and "assess it again" in panel.result.text()
    assert win.session.project.entry_for("q01") is None and not dialogs.errors
    again = wait_assessed(qtbot, win, "q01")
    assert again is not shown and again.basis.ledger_head == project.head()[1] != shown.basis.ledger_head
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)  # the new assessment goes through
    wait_released(qtbot, win)
    entry = win.session.project.entry_for("q01")
    assert entry.payload["alpha"] == again.spend_alpha and entry.prev_hash == again.basis.ledger_head
    assert "Reply:" in panel.result.text() and entry.hash in panel.result.text()
