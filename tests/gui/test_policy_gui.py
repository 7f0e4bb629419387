"""The spend policy from the Budget panel: stored in the project, applied to assessments and releases."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.gui.dialogs.policy_dialog import SpendPolicyDialog
from dpdesk.store.project import Project

from .conftest import WAIT, wait_assessed, wait_released


def test_policy_dialog_edits_and_checks_the_fractions(qtbot):
    dlg = SpendPolicyDialog(None)
    qtbot.addWidget(dlg)
    assert dlg.policy() is None and not dlg.floor.isEnabled()  # greedy until the curator turns it on
    dlg.enabled.setChecked(True)
    dlg.floor.setValue(20.0)
    dlg.cap.setValue(40.0)
    assert dlg.policy() == SpendPolicy(floor=0.2, cap=0.4)
    dlg.floor.setValue(60.0)  # floor above cap: refused in place, OK disabled
    ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled() and "must not exceed" in dlg.problem.text()
    dlg.floor.setValue(10.0)
    assert ok.isEnabled() and dlg.problem.text() == ""


def test_budget_panel_sets_the_policy_and_the_release_follows_it(demo_window, qtbot, monkeypatch, dialogs):
    win = demo_window
    win.requests.select_request("q01")
    plain = wait_assessed(qtbot, win, "q01")
    assert plain.decision == "spend" and plain.policy == "greedy"
    budget = win.requests.budget
    assert "greedy" in budget.policy_label.text()

    def curator(dlg):  # what the curator types into the modal dialog
        dlg.enabled.setChecked(True)
        dlg.floor.setValue(25.0)
        dlg.cap.setValue(50.0)
        return SpendPolicyDialog.DialogCode.Accepted

    monkeypatch.setattr(SpendPolicyDialog, "exec", curator)
    qtbot.mouseClick(budget.policy_btn, Qt.MouseButton.LeftButton)
    assert "at least 25%" in budget.policy_label.text()
    with Project.open(win.session.path, "r") as ro:
        assert ro.spend_policy == SpendPolicy(floor=0.25, cap=0.5)
    # the panel re-assesses under the policy: same need, a quarter of the (untouched) budget spent
    qtbot.waitUntil(
        lambda: (
            win.requests.answer.assessment is not None and win.requests.answer.assessment.policy != "greedy"
        ),
        timeout=WAIT,
    )
    paced = win.requests.answer.assessment
    assert paced.needed_alpha == pytest.approx(plain.spend_alpha)
    assert paced.spend_alpha == pytest.approx(0.25 * paced.headroom) and paced.spend_alpha > plain.spend_alpha
    assert "raised by the spend policy" in win.requests.answer.fields["fresh"].text()
    qtbot.mouseClick(win.requests.answer.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    assert (
        "the spend policy" in dialogs.confirms[-1][1]
        and f"{plain.spend_alpha:.6g}" in dialogs.confirms[-1][1]
    )
    entry = win.session.ledger()[-1]
    assert entry.kind == "fresh" and entry.payload["alpha"] == pytest.approx(paced.spend_alpha)
    assert entry.payload["policy"] == paced.policy and entry.payload["needed_alpha"] == pytest.approx(
        plain.spend_alpha
    )


def test_known_bounds_from_the_answer_panel(demo_window, qtbot, monkeypatch):
    from dpdesk.engine.inference.prior import BoundedPrior
    from dpdesk.gui.dialogs.prior_dialog import PriorDialog

    win = demo_window
    win.requests.select_request("q01")
    flat = wait_assessed(qtbot, win, "q01")
    panel = win.requests.answer
    assert flat.prior == "flat" and panel.fields["prior"].text() == "flat"

    def curator(dlg):
        assert not dlg.enabled.isChecked() and dlg.table_size.value() == 1.0  # nothing read off the data
        dlg.enabled.setChecked(True)
        dlg.table_size.setValue(100000)
        return PriorDialog.DialogCode.Accepted

    monkeypatch.setattr(PriorDialog, "exec", curator)
    qtbot.mouseClick(panel.prior_btn, Qt.MouseButton.LeftButton)
    with Project.open(win.session.path, "r") as ro:
        assert ro.prior == BoundedPrior(100000)
    qtbot.waitUntil(lambda: panel.assessment is not None and panel.assessment.prior != "flat", timeout=WAIT)
    assert panel.assessment.prior.startswith("bounded [0, ")
    assert panel.fields["prior"].text().startswith("known bounds: [0, ")
