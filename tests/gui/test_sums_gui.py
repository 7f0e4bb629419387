"""The demo's mean and sum (issue 36) on a real offscreen window: q38, a mean, is planned fresh in the
answer panel (its words, the heatmap's preview: α_S + α_C on each female cell), released through the one
release path; q39, the related sum, is then answered from history for free, and the requester's letter
states both."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from .conftest import WAIT, wait_assessed, wait_released


def test_the_demo_mean_is_answered_fresh_and_the_related_sum_free(demo_window, qtbot, dialogs):
    win = demo_window
    panel = win.requests.answer
    win.requests.select_request("q38")
    plan = wait_assessed(qtbot, win, "q38")
    assert plan.decision == "spend" and panel.decision.text() == "NEEDS A FRESH ANSWER"
    text = panel.plan_view.text.text()
    assert "a sum at ε = 0.08207 and a count of values at ε = 0.0826" in text
    assert f"ε = {plan.alpha:.6g}" in panel.spend_btn.text() and panel.spend_btn.isEnabled()
    schema = win.session.schema
    female = np.zeros(schema.shape, dtype=bool)
    female[:, schema.attribute("sex").labels.index("Female")] = True
    budget = win.requests.budget
    budget.preview.setChecked(True)  # the heatmap previews the costs after it: both releases on each cell
    expected = np.where(female.reshape(-1), plan.price.alpha_sum + plan.price.alpha_count, 0.0)
    np.testing.assert_allclose(budget.shown_costs, expected, rtol=1e-12, atol=1e-15)
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    entry = win.session.project.entry_for("q38")
    assert entry.kind == "mean" and "answer q38: mean " in panel.plan_view.text.text()
    np.testing.assert_allclose(win.session.cell_costs(), expected, rtol=1e-12, atol=1e-15)

    win.requests.select_request("q39")
    a = wait_assessed(qtbot, win, "q39")
    assert a.decision == "infer"
    assert a.estimate.estimate == pytest.approx(entry.payload["sum_answer"])  # the mean's sum row
    qtbot.mouseClick(panel.infer_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    assert win.session.project.entry_for("q39").kind == "inferred"
    np.testing.assert_allclose(win.session.cell_costs(), expected, rtol=1e-12, atol=1e-15)  # free

    win.requests.select_request("q38")
    qtbot.waitUntil(lambda: panel.decision.text().startswith("ANSWERED"), timeout=WAIT)
    assert "assuming at least 10000 values in the box" in panel.reason.text()
    letters = {acc.requester: acc for acc in win.session.accounts()}
    from dpdesk.store.letters import letter_text

    letter = letter_text(letters["ministry-labour"], "demo")
    assert "Released: mean " in letter and "the true value lies in this interval" in letter
