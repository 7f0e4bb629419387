"""*Posterior of proportions…*: build the request, preview off the GUI thread, confirm — on a real offscreen dialog."""

from __future__ import annotations

import numpy as np

from dpdesk.engine.schema import Schema
from dpdesk.gui.widgets.models import LEDGER_HEADERS

from .conftest import WAIT

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {
                "name": "age",
                "column": "age",
                "kind": "numeric",
                "edges": [0, 30, 65, 90],
                "labels": ["0-30", "30-65", "65-90"],
            },
            {"name": "sex", "column": "sex", "kind": "categorical", "values": ["F", "M"]},
            {
                "name": "edu",
                "column": "edu",
                "kind": "categorical",
                "values": ["school", "college", "degree"],
            },
        ]
    }
)


def _dialog(qtbot, costs=None, total=1.0):
    from dpdesk.gui.kinds.posterior_dialog import PosteriorDialog

    costs = np.zeros(SCHEMA.n_cells) if costs is None else costs
    d = PosteriorDialog(SCHEMA, lambda: {"cell_costs": costs, "total_budget": total})
    qtbot.addWidget(d)
    d.resize(820, 760)
    d.show()
    return d


def _preview(qtbot, d):
    d.run_preview()
    qtbot.waitUntil(lambda: d.plan is not None or "color:#c0392b" in d.result.toHtml(), timeout=WAIT)
    return d.plan


def test_beta_preview_draws_curves_and_release_emits_exactly_the_previewed_plan(qtbot, dialogs, tmp_path):
    d = _dialog(qtbot)
    d.attribute.setCurrentText("sex")
    d.box.setText('age="65-90"')
    d.budget.setValue(0.6)
    d.reference.setValue(40)
    # the default names no mechanism: the engine chooses the more accurate at the size (issue 34 item 4)
    assert d.text.text() == 'posterior(sex | age="65-90"; prior=1; budget=0.6)'
    d.mechanism.setCurrentIndex(1)
    assert d.text.text() == 'posterior(sex | age="65-90"; prior=1; mechanism=global; budget=0.6)'
    assert not d.release_button.isEnabled()
    plan = _preview(qtbot, d)
    text = d.result.toPlainText()
    assert (
        "posterior of the shares of sex (2 categories: F, M) among age in {65-90}; prior Beta(1, 1)" in text
    )
    assert "ε = 0.6 on each of the box's 6 cells" in text  # 65-90 × {F, M} × {school, college, degree}
    assert "expected Hellinger distance at a reference table of 40 records" in text
    assert "budget: system cost 0 → 0.6 of 1" in text
    assert d.plot.mode == "curves" and plan.reference_counts == (20, 20)
    dense = plan.charge.dense(SCHEMA.n_cells).reshape(SCHEMA.shape)
    assert np.all(dense[2] == 0.6) and np.all(dense[:2] == 0)
    d.grab().save(str(tmp_path / "posterior_dialog_beta.png"))
    emitted = []
    d.sigRelease.connect(emitted.append)
    assert d.release_button.isEnabled()
    d.release_button.click()
    assert dialogs.spends and "It spends ε = 0.6 on each of the box's 6 cells" in dialogs.spends[0][0]
    assert emitted == [plan]


def test_dirichlet_bars_and_the_accuracy_target_is_for_the_global_mechanism_only(qtbot, dialogs, tmp_path):
    d = _dialog(qtbot)
    d.attribute.setCurrentText("edu")
    d.prior.setText("2, 1, 1")
    d.by_target.setChecked(True)
    d.within.setValue(0.3)
    assert "prior=[2, 1, 1]" in d.text.text() and "within=0.3; failure=0.05" in d.text.text()
    d.mechanism.setCurrentIndex(2)  # smooth: the accuracy depends on the data, so no target
    assert d.by_budget.isChecked() and not d.by_target.isEnabled() and d.delta.isEnabled()
    assert "mechanism=smooth; budget=0.5; delta=1e-6" in d.text.text()
    d.reference.setValue(60)
    plan = _preview(qtbot, d)
    assert plan.delta == 1e-6 and set(plan.reference) == {
        "laplace",
        "exponential-global",
        "exponential-smooth",
    }
    assert d.plot.mode == "bars" and "(ε, δ)-DP" in d.result.toPlainText()
    d.grab().save(str(tmp_path / "posterior_dialog_dirichlet.png"))


def test_a_release_over_the_total_cannot_be_released_and_an_edit_drops_the_preview(qtbot, dialogs):
    costs = np.zeros(SCHEMA.n_cells)
    costs[0] = 0.8  # age 0-30, sex F, school
    d = _dialog(qtbot, costs)
    d.attribute.setCurrentText("edu")
    d.budget.setValue(0.5)
    d.reference.setValue(0)
    plan = _preview(qtbot, d)
    assert (
        not plan.releasable
        and "NOT releasable: it would raise the most-charged cell to 1.3" in d.result.toPlainText()
    )
    assert not d.release_button.isEnabled()
    d.box.setText("sex=M")  # cell 0 is not in the box any more
    assert d.plan is None
    plan = _preview(qtbot, d)
    assert plan.releasable and d.release_button.isEnabled()
    d.budget.setValue(0.4)
    assert d.plan is None and not d.release_button.isEnabled()


def test_bad_inputs_are_one_line_in_the_dialog(qtbot, dialogs):
    d = _dialog(qtbot)
    d.prior.setText("-1")
    _preview(qtbot, d)
    assert "every prior parameter must be a positive number" in d.result.toPlainText() and d.plan is None
    d.prior.setText("1")
    d.box.setText("height=1")
    _preview(qtbot, d)
    assert "unknown attribute 'height'" in d.result.toPlainText()
    d.box.setText("age=[]")
    _preview(qtbot, d)
    assert "empty label list" in d.result.toPlainText() and not d.release_button.isEnabled()


def test_a_posterior_release_from_the_requests_page_is_recorded_off_the_gui_thread(
    demo_window, qtbot, dialogs, tmp_path
):
    """The real window over the demo project (δ cap 1e-6): preview, release through the release path, audit."""
    win = demo_window
    page = win.requests
    win.menu_actions["new_posterior"].trigger()  # Edit ▸ Posterior of proportions…
    d = page.posterior_dialog
    assert d is not None and d.isVisible()
    d.attribute.setCurrentText("sex")
    d.box.setText('age="65-90"')
    d.mechanism.setCurrentIndex(2)  # smooth: charges δ
    d.budget.setValue(0.3)
    d.delta.setText("6e-7")
    d.reference.setValue(0)
    plan = _preview(qtbot, d)
    assert plan.releasable and plan.basis.ledger_head == win.session.project.head()[1]
    entries_before = len(win.session.ledger())
    d.release_button.click()
    qtbot.waitUntil(lambda: d.release is not None or "Not released" in d.result.toPlainText(), timeout=WAIT)
    assert d.release is not None, d.result.toPlainText()
    text = d.result.toPlainText()
    assert text.startswith("released posterior Beta(") and "95 % band of the released posterior alone" in text
    assert "noisy total of the box (released first)" in text and d.plot.mode == "curves"
    d.grab().save(str(tmp_path / "posterior_released.png"))
    entries = win.session.ledger()
    assert len(entries) == entries_before + 1 and entries[-1].kind == "posterior"
    assert entries[-1].payload["mechanism"] == "posterior-exponential-smooth"
    view = win.session.view()
    assert view.delta_spent == 6e-7
    # the audit page lists it with its α and δ, and the integrity check recomputes it
    audit = win.audit
    rows = [audit.model.index(r, 2).data() for r in range(audit.model.rowCount())]
    assert rows[-1] == "posterior"
    assert (
        "(δ = 6e-07)" in audit.model.index(audit.model.rowCount() - 1, LEDGER_HEADERS.index("summary")).data()
    )
    assert audit.verify().ok
    # a second release at the same δ would pass the project's δ cap: previewed as not releasable
    plan = _preview(qtbot, d)
    assert not plan.releasable and "above the project's cap 1e-06" in d.result.toPlainText()
    assert not d.release_button.isEnabled()
