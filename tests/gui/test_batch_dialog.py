"""*Release ▸ Plan batch…*: plan selected pending requests off the GUI thread, show the plan, release it
through store/batch.py on one confirmation — on a real offscreen window over the demo project (issue 19)."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel

from dpdesk.gui.kinds.batch_dialog import HEADERS, row_cells

from .conftest import WAIT

COL = {name: i for i, name in enumerate(HEADERS)}


def _select(page, ids):
    sm = page.table.selectionModel()
    sm.clearSelection()
    for row in range(page.proxy.rowCount()):
        if page.request_at(row) in ids:
            sm.select(
                page.proxy.index(row, 0),
                QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows,
            )


def _planned(qtbot, d):
    qtbot.waitUntil(lambda: d.plan is not None and not d.runner.is_running(), timeout=WAIT)
    return d.plan


def test_a_batch_no_better_than_one_by_one_says_so_once(demo_window, qtbot):
    """ "One by one" means today's rules, request after request: a plan that is that names it once and is
    not compared with itself, and says why the batch does not save."""
    from dpdesk.gui.kinds.batch_dialog import BatchDialog

    d = BatchDialog(demo_window.session, ["q29", "q30", "q31", "q35"], "fft", demo_window)
    qtbot.addWidget(d)
    d.show()
    plan = _planned(qtbot, d)
    assert plan.strategy == "one by one"
    text = d.summary.text().replace("&#x27;", "'")
    assert text.startswith("<b>one by one (today's rules)</b>") and text.lower().count("one by one") == 1
    assert plan.why().startswith("No saving") and plan.why() in text


def test_plan_batch_of_selected_requests_then_release_answers_them(demo_window, qtbot, dialogs, tmp_path):
    from dpdesk.store.batch import plan_pending

    win, ids = demo_window, ["q02", "q03", "q34"]
    page = win.requests
    _select(page, ids)
    assert page.selected_ids() == ids
    win.menu_actions["plan_batch"].trigger()
    d = page.batch_dialog
    d.resize(900, 640)
    plan = _planned(qtbot, d)
    expected = plan_pending(
        win.session.project, ids
    )  # the same plan, made here on the GUI thread's connection
    assert [p.id for p in plan.requests] == ids and plan.to_json() | {
        "elapsed_ms": 0
    } == expected.to_json() | {"elapsed_ms": 0}
    table = [[d.table.item(r, c).text() for c in range(len(HEADERS))] for r in range(d.table.rowCount())]
    assert table == [row_cells(expected, p) for p in expected.requests]
    by_id = {row[0]: row for row in table}
    # issue 34 item 6: a request that is not free shows the α it would spend alone (never a "0" that is
    # only the system cost not moving), and what the batch does for it
    q02 = expected.requests[0]
    assert (
        q02.alone_alpha > 0
        and by_id["q02"][COL["alone today spends"]] == f"α = {q02.alone_alpha:.4g} on its cells"
    )
    assert by_id["q02"][COL["with the batch"]] == "free after the batch's measurements"
    assert by_id["q02"][COL["asks"]] == "±60 at 95 % confidence"
    q34 = expected.requests[2]
    assert q34.status == "uncovered" and by_id["q34"][COL["alone today spends"]].startswith("refused")
    # one by one is one number (the requests already free counted, as the plan's own count is), and a
    # sentence says why the batch saves or not
    assert expected.strategy == "one by one" and expected.answered == expected.one_by_one_answered
    assert f"Answers {expected.answered} of 3." in d.summary.text()
    assert expected.why() in d.summary.text().replace("&#x27;", "'")
    assert f"offer ±{q34.offer_eps:.4g} at δ 0.01" in by_id["q34"][COL["if not covered"]]
    assert (
        f"system cost {expected.system_cost:.4g} now → {expected.system_cost_after:.4g} after"
        in d.summary.text()
    )
    assert abs(d.heatmap.matrix.max() - expected.cell_costs_after.max()) < 1e-12
    d.grab().save(str(tmp_path / "batch_dialog.png"))
    before = len(win.session.ledger())
    assert d.release_button.isEnabled()
    d.release_button.click()
    assert dialogs.confirms and "answer q02, q03 from them" in dialogs.confirms[-1][1]
    assert "q34 stay pending" in dialogs.confirms[-1][1]
    qtbot.waitUntil(lambda: d.outcome is not None, timeout=WAIT)
    plan_entry, *new = win.session.ledger()[before:]  # the plan is recorded before its first measurement
    n = len(expected.measurements)
    assert plan_entry.kind == "batch" and len(plan_entry.payload["measurements"]) == n
    assert [e.kind for e in new[:n]] == ["measurement"] * n and len(new) == n + 2
    assert [e.request_id for e in new[n:]] == ["q02", "q03"]
    assert [win.session.request(i).status for i in ids] == ["answered", "answered", "pending"]
    assert (
        dialogs.infos[-1][0] == "Batch released"
        and "answered q02, q03; q34 still pending" in dialogs.infos[-1][1]
    )
    assert win.session.verify().ok


def test_uncoverable_plan_cannot_be_released_and_a_stale_plan_is_refused_spending_nothing(
    demo_window, qtbot, dialogs
):
    from dpdesk.gui.kinds.batch_dialog import BatchDialog

    win = demo_window
    before = len(win.session.ledger())
    d = BatchDialog(win.session, ["q34"])  # ±2 at δ = 0.01: no budget covers it
    qtbot.addWidget(d)
    plan = _planned(qtbot, d)
    assert plan.ids("uncovered") == ("q34",) and not plan.measurements and not d.release_button.isEnabled()
    assert "offer ±" in d.table.item(0, COL["if not covered"]).text()
    d.release()
    assert not dialogs.confirms and len(win.session.ledger()) == before

    d2 = BatchDialog(win.session, ["q02", "q03"])
    qtbot.addWidget(d2)
    _planned(qtbot, d2)
    win.session.reject("q05", "out of scope")  # the ledger moves after planning: the plan is stale
    d2.release_button.click()
    qtbot.waitUntil(lambda: not d2.runner.is_running(), timeout=WAIT)
    assert "plan the batch again" in d2.summary.text() and d2.outcome is None
    assert [e.kind for e in win.session.ledger()[before:]] == ["rejected"]
    assert win.session.request("q02").status == "pending" and win.session.verify().ok


def test_cancel_midway_keeps_the_recorded_measurements_audited_and_says_so(
    demo_window, qtbot, dialogs, monkeypatch
):
    import threading

    from dpdesk.engine.planning.release import MeasurementPlan
    from dpdesk.gui.kinds.batch_dialog import BatchDialog

    win, ids = demo_window, ["q02", "q03", "q04", "q05"]
    before = len(win.session.ledger())
    d = BatchDialog(win.session, ids)
    qtbot.addWidget(d)
    plan = _planned(qtbot, d)
    n = len(plan.measurements)
    assert n >= 3, plan.to_json()
    # hold the second measurement's draw (OpenDP's, on the worker thread) until the curator has cancelled
    drawing, go = threading.Event(), threading.Event()
    draw = MeasurementPlan.draw

    def held(self, cube, sampler, **kwargs):
        if self.index == 1:
            drawing.set()
            assert go.wait(WAIT / 1000)
        return draw(self, cube, sampler, **kwargs)

    monkeypatch.setattr(MeasurementPlan, "draw", held)
    d.release_button.click()
    assert dialogs.confirms
    qtbot.waitUntil(drawing.is_set, timeout=WAIT)
    d.cancel_button.click()  # cancel is checked before each measurement: the one being drawn is recorded
    assert "Cancelling" in d.summary.text() and not d.cancel_button.isEnabled()
    go.set()
    qtbot.waitUntil(lambda: not d.runner.is_running(), timeout=WAIT)
    plan_entry, *new = win.session.ledger()[before:]  # the plan, recorded before its first measurement
    assert plan_entry.kind == "batch"
    assert [e.kind for e in new] == ["measurement", "measurement"]  # recorded, and nothing else
    assert [e.payload["batch"]["index"] for e in new] == [0, 1] and all(e.request_id is None for e in new)
    assert [win.session.request(i).status for i in ids] == ["pending"] * 4
    text = d.summary.text()
    assert f"Cancelled after 2 of {n} measurement(s): the 2 recorded stay in the ledger" in text
    assert "requests stay pending" in text and d.outcome is None and not d.release_button.isEnabled()
    charges = win.session.project.view().largest_charges()
    assert all(charges[e.seq] > 0 for e in new)  # charged like every release
    report = win.session.verify()
    assert report.ok and dict(report.kinds)["measurement"] == 2, report
