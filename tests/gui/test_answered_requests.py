"""Answered and rejected requests show what the ledger recorded; a rejection carries the curator's note."""

from __future__ import annotations

from PySide6.QtCore import Qt

from .conftest import WAIT, wait_assessed, wait_released


def test_answered_request_shows_its_release_not_a_live_decision(demo_window, qtbot):
    win = demo_window
    panel = win.requests.answer
    win.requests.select_request("q01")
    wait_assessed(qtbot, win, "q01")
    assert panel.decision.text() == "NEEDS A FRESH ANSWER"
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    win.requests.select_request("q02")
    wait_assessed(qtbot, win, "q02")
    win.requests.select_request("q01")
    wait_assessed(qtbot, win, "q01")
    entry = win.session.project.entry_for("q01")
    assert panel.decision.text() == "ANSWERED — FRESH"
    reason = panel.reason.text()
    assert f"Released {entry.released:.6g}" in reason and f"ledger entry #{entry.seq}" in reason
    assert f"ε = {float(entry.payload['alpha']):.4g}" in reason and entry.time[:10] in reason
    assert "already decided" in panel.fields["cost"].text()
    # issue 34 item 3: one interval for the released answer, with its confidence; the posterior fields and
    # the plot are history's now (which includes the release), and say so
    req = win.session.request("q01")
    lo, hi = (round(v) for v in entry.payload["interval"])
    assert f"in [{lo}, {hi}] (±{req.eps:g} at {100 * (1 - req.delta):g} % confidence)" in reason
    assert reason.count("[") == 1
    form = panel.form
    assert form.labelForField(panel.fields["interval"]).text() == "History's credible interval now"
    assert form.labelForField(panel.fields["estimate"]).text() == "History's estimate now"
    assert "history's posterior now" in panel.plot.plotItem.titleLabel.text
    assert (
        not panel.spend_btn.isEnabled()
        and not panel.infer_btn.isEnabled()
        and not panel.reject_btn.isEnabled()
    )
    win.requests.select_request("q02")  # pending again: the ordinary labels
    wait_assessed(qtbot, win, "q02")
    assert form.labelForField(panel.fields["interval"]).text() == "Credible interval"
    assert not panel.plot.plotItem.titleLabel.isVisible()


def test_reject_with_a_note_and_cancel_rejects_nothing(demo_window, qtbot, dialogs):
    win = demo_window
    panel = win.requests.answer
    win.requests.select_request("q10")
    wait_assessed(qtbot, win, "q10")
    dialogs.text_answer = None
    qtbot.mouseClick(panel.reject_btn, Qt.MouseButton.LeftButton)
    assert win.session.ledger() == [] and win.session.request("q10").status == "pending"
    dialogs.text_answer = "Outside our data-sharing agreement; please ask for the regional total."
    qtbot.mouseClick(panel.reject_btn, Qt.MouseButton.LeftButton)
    entry = win.session.ledger()[-1]
    assert (entry.kind, entry.request_id) == ("rejected", "q10")
    assert entry.payload["reason"] == dialogs.text_answer
    wait_assessed(qtbot, win)
    win.requests.select_request("q10")
    wait_assessed(qtbot, win, "q10")
    assert panel.decision.text() == "REJECTED" and dialogs.text_answer in panel.reason.text()


def test_a_spend_below_the_most_spent_cell_explains_why_remaining_stays(demo_window, qtbot):
    win = demo_window
    panel = win.requests.answer
    win.requests.select_request("q01")  # count(sex="Female"): raises the system cost
    a = wait_assessed(qtbot, win, "q01")
    assert (
        a.budget.system_cost_after > a.budget.system_cost
        and "does not change" not in panel.fields["cost"].text()
    )
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    win.requests.select_request("q02")  # count(sex="Male"): other cells, no higher than the Female ones
    a = wait_assessed(qtbot, win, "q02")
    assert a.decision == "spend" and a.budget.system_cost_after == a.budget.system_cost
    assert "remaining budget does not change" in panel.fields["cost"].text()
    before = win.requests.budget.gauge.remaining
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    assert win.requests.budget.gauge.remaining == before
    assert "remaining budget does not change" in panel.result.text()
    assert "largest per-cell cost" in panel.result.text()


def test_answer_all_free_releases_exactly_the_free_requests_each_ledgered(demo_window, qtbot, dialogs):
    from dpdesk.store.project import Project

    win = demo_window
    panel = win.requests.answer
    for rid in ("q01", "q02", "q04"):  # history for sex and income
        win.requests.select_request(rid)
        wait_assessed(qtbot, win, rid)
        qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
        wait_released(qtbot, win)
    before = win.session.ledger()
    costs = win.session.cell_costs().copy()
    # the decisions the engine makes now, request by request, on a read-only copy of the moment
    with Project.open(win.session.path, "r") as ro:
        free = [r.id for r in ro.requests("pending") if ro.assess(r.id).decision == "infer"]
    assert free  # e.g. q03 = count(sex in [Female, Male]) and q05 from q04
    win.menu_actions["answer_all_free"].trigger()
    qtbot.waitUntil(lambda: not win.requests.free_runner.is_running(), timeout=WAIT)
    assert dialogs.confirms[-1][0] == "Answer all free requests"
    new = win.session.ledger()[len(before) :]
    assert [e.request_id for e in new] == free and all(e.kind == "inferred" for e in new)
    assert (win.session.cell_costs() == costs).all()  # free: nothing spent
    assert all(win.session.request(r).status == "answered" for r in free)
    assert (
        dialogs.infos[-1][0] == "Free requests answered"
        and f"Released {len(free)} free answer" in dialogs.infos[-1][1]
    )
    assert win.session.verify().ok
