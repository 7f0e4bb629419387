"""*Zero-cost estimate…*: cross-validate off the GUI thread, show the biased estimate and its CV curve, record it."""

from __future__ import annotations

import numpy as np

from .conftest import WAIT
from .test_synthetic_dialog import _release_marginals


def test_estimate_of_the_selected_request_is_previewed_with_its_cv_curve_and_recorded_free(
    qtbot, demo_window, dialogs, tmp_path
):
    from dpdesk.gui.kinds.estimate_dialog import EstimateDialog

    win = demo_window
    session = win.session
    _release_marginals(session)
    costs = session.view().cell_costs.copy()
    rid = win.requests.answer.request_id
    assert rid is not None
    win.menu_actions["new_estimate"].trigger()
    d = win.estimate_dialog
    assert isinstance(d, EstimateDialog) and d.query.text() == session.request(rid).describe(session.schema)
    qtbot.waitUntil(d.isVisible, timeout=WAIT)
    d.preview_button.click()
    assert d.cancel_button.isEnabled()  # cross-validation runs off the GUI thread
    qtbot.waitUntil(lambda: d.plan is not None or "color:#c0392b" in d.result.toHtml(), timeout=WAIT)
    plan = d.plan
    assert plan is not None, d.result.toPlainText()
    text = d.result.toPlainText()
    assert (
        "BIASED (shrunk towards the prior)" in text
        and "5-fold cross-validation on the 26 released rows" in text
    )
    # issue 34 item 5: history determines count(sex="Female"): the error bound stated holds for it, and
    # no other number (its noise, the cross-validation's error) reads like its error
    half, words = plan.error_statement()
    assert f"error: within {words}" in text and "s.d." not in text and "resolution" not in text
    assert half >= abs(plan.value - float(plan.unbiased.estimate))
    assert "(cross-validation)" in text and plan.cv is not None
    curve = d.plot.getPlotItem().listDataItems()[0].getData()
    assert len(curve[0]) == int(np.sum(np.isfinite(plan.cv.mse)))  # the CV curve is drawn
    d.grab().save(str(tmp_path / "estimate_dialog.png"))
    d.record_button.click()
    assert dialogs.confirms and "meets no accuracy requirement" in dialogs.confirms[-1][1]
    qtbot.waitUntil(lambda: d.release is not None, timeout=WAIT)
    entry = session.ledger()[-1]
    assert entry.kind == "estimate" and float(entry.payload["estimate"]) == plan.value
    assert np.array_equal(session.view().cell_costs, costs)  # free
    assert session.verify().ok  # verify recomputed the estimate from the answers before it


def test_a_bad_query_is_one_line_in_the_dialog(qtbot, demo_window, dialogs):
    from dpdesk.gui.kinds.estimate_dialog import EstimateDialog
    from dpdesk.store.estimating import query_inputs

    s = demo_window.session
    _release_marginals(s)
    d = EstimateDialog(lambda q: query_inputs(s.project, q), text='count(age="nope")')
    qtbot.addWidget(d)
    d.preview_button.click()
    assert (
        "has no label 'nope'" in d.result.toPlainText() and d.plan is None and not d.record_button.isEnabled()
    )


def test_the_answer_panel_offers_the_estimate_for_a_request_history_cannot_estimate(
    qtbot, demo_window, dialogs
):
    from .conftest import wait_assessed

    win = demo_window
    s = win.session
    _release_marginals(s)  # age, sex and edu: nothing about the fourth attribute
    attr = s.schema.attributes[3]
    req = s.add_request(f'count({attr.name}="{attr.labels[0]}")', 50.0, 0.05)  # the queue redraws
    win.requests.select_request(req.id)
    a = wait_assessed(qtbot, win, req.id)
    panel = win.requests.answer
    assert not a.estimable and panel.estimate_btn.isVisible() and not panel.infer_btn.isVisible()
    panel.estimate_btn.click()
    assert win.estimate_dialog.isVisible() and win.estimate_dialog.query.text() == req.describe(s.schema)
    estimable = s.add_request(
        'count(sex="Female")'
        if "Female" in s.schema.attributes[1].labels
        else f'count({s.schema.names[1]}="{s.schema.attributes[1].labels[0]}")',
        500.0,
        0.05,
    )
    win.requests.select_request(estimable.id)
    assert wait_assessed(qtbot, win, estimable.id).estimable and not panel.estimate_btn.isVisible()
