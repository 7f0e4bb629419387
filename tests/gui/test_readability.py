"""Issue 34 items 10, 12 and 15: what a curator reads on a laptop's screen, on real windows."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from dpdesk.engine.schema import Schema

from .conftest import wait_assessed

CLINIC = Schema.from_dict(
    {
        "attributes": [
            {"name": "region", "column": "region", "kind": "categorical", "values": ["north", "south"]},
            {"name": "visits", "column": "visits", "kind": "numeric", "edges": [0, 10, 100]},
        ]
    }
)


def test_placeholders_come_from_the_projects_own_attributes(qtbot):
    from dpdesk.gui.dialogs.claim_dialog import ClaimDialog
    from dpdesk.gui.dialogs.query_builder import QueryBuilderDialog
    from dpdesk.gui.kinds.posterior_dialog import PosteriorDialog

    for dlg, field in (
        (QueryBuilderDialog(CLINIC), "text"),
        (ClaimDialog(CLINIC, ""), "query"),
        (PosteriorDialog(CLINIC, dict), "box"),
    ):
        qtbot.addWidget(dlg)
        text = getattr(dlg, field).placeholderText()
        assert ("region" in text or "visits" in text) and "age" not in text and "sex" not in text, text


def test_the_query_builder_follows_typed_text_and_offers_a_posteriors_fields(qtbot):
    from dpdesk.gui.dialogs.query_builder import QueryBuilderDialog

    dlg = QueryBuilderDialog(CLINIC)
    qtbot.addWidget(dlg)
    dlg.text.setText('count(region="south")')
    assert [cb.isChecked() for cb in dlg.checks["region"]] == [False, True]
    assert not any(cb.isChecked() for cb in dlg.checks["visits"])
    dlg.text.setText("posterior(region)")  # no budget= in the text: the dialog's α prices it
    assert dlg.price.currentIndex() == 1 and dlg.alpha.isEnabled() and dlg.mechanism.isEnabled()
    assert dlg.query is not None, dlg.status.text()
    dlg.mechanism.setCurrentIndex(dlg.mechanism.findData("laplace"))
    assert dlg.text.text() == "posterior(region; mechanism=laplace)" and dlg.query is not None


def test_claims_panel_counts_what_is_over_its_threshold_and_forgets_a_removed_claim(
    demo_window, qtbot, dialogs
):
    win = demo_window
    claims = win.requests.claims
    win.requests.lower.setCurrentWidget(claims)
    win.session.watch('count(sex="Female")', 0, 5, 0.8, 0.05, name="few women")
    qtbot.waitUntil(lambda: bool(claims.statuses) and not claims.runner.is_running(), timeout=20000)
    # nothing released touches it: not "1 at or over τ" but not estimable yet, said apart
    assert claims.summary.text().startswith("1 claim watched: 0 at or over τ; 1 not estimable yet")
    header = claims.table.horizontalHeader()
    pr = claims.model._headers.index("Pr(claim) now")
    assert claims.table.columnWidth(pr) >= header.fontMetrics().horizontalAdvance("Pr(claim) now")
    assert claims.plot.plotItem.titleLabel.isVisible()
    claims.table.selectRow(0)
    claims.remove_claim()
    qtbot.waitUntil(lambda: not claims.statuses and not claims.runner.is_running(), timeout=20000)
    assert not claims.plot.plotItem.titleLabel.isVisible()  # no stale title after the removal
    assert not claims.plot.plotItem.getAxis("left").isVisible()  # no placeholder axes either


def test_decided_requests_notes_menus_and_the_queue_read_right(demo_window, qtbot, dialogs):
    from dpdesk.gui.panels.assessment_text import outcome_text

    win = demo_window
    page, panel = win.requests, win.requests.answer
    # the answer panel's shortcuts are menu actions, so the menu shows them
    acts = win.menu_actions
    assert acts["spend_and_release"].shortcut() == QKeySequence("Ctrl+Shift+S")
    assert acts["release_inferred"].shortcut() == QKeySequence("Ctrl+I")
    assert acts["reject_request"].shortcut() == QKeySequence("Ctrl+Shift+R")
    # a rejection note that ends with a full stop gets no second one
    page.select_request("q10")
    wait_assessed(qtbot, win, "q10")
    dialogs.text_answer = "Outside the agreement."
    qtbot.mouseClick(panel.reject_btn, Qt.MouseButton.LeftButton)
    entry = win.session.project.entry_for("q10")
    assert "agreement.." not in outcome_text(entry) and "Outside the agreement. ledger entry" in outcome_text(
        entry
    )
    page.select_request("q10")
    qtbot.waitUntil(lambda: panel.decision.text() == "REJECTED", timeout=20000)
    assert not panel.estimate_btn.isVisible()  # no zero-cost estimate of a rejected request
    # the buttons' labels are never clipped at 1024×700
    page.select_request("q37")
    wait_assessed(qtbot, win, "q37")
    qtbot.wait(20)  # the labels were just set: let the row lay out
    for b in (panel.spend_btn, panel.reject_btn, panel.infer_btn):
        assert b.width() >= b.sizeHint().width(), b.text()
    # Answer all free says how many it will look at
    dialogs.confirm_answer = False
    page.answer_all_free()
    pending = sum(r.status == "pending" for r in win.session.requests())
    assert f"Assess the {pending} pending requests" in dialogs.confirms[-1][1]
    # the audit table's α: four significant digits
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    dialogs.confirm_answer = True
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.session.request("q37").status == "answered", timeout=30000)
    audit = win.audit
    col = audit.model._headers.index("ε spent")

    def row_of_q37():
        return next(
            (r for r in range(audit.model.rowCount()) if audit.model.index(r, 3).data() == "q37"), None
        )

    qtbot.waitUntil(
        lambda: row_of_q37() is not None, timeout=20000
    )  # the ledger table is read after the release
    row = row_of_q37()
    alpha = float(win.session.project.entry_for("q37").payload["alpha"])
    assert audit.model.index(row, col).data() == f"{alpha:.4g}"


def test_the_recent_list_hints_when_empty_and_shows_full_paths(qtbot, settings, tmp_path):
    from dpdesk.gui.app.main_window import MainWindow

    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    assert win.start.recent.count() == 1 and "No recent projects yet" in win.start.recent.item(0).text()
    path = str(tmp_path / "p" / "clinic.dpdesk")
    win.start.set_recent([path])
    assert path in win.start.recent.item(0).text()


def test_empty_plots_say_why_instead_of_showing_placeholder_axes(qtbot):
    from dpdesk.gui.kinds.posterior_dialog import PosteriorDialog

    d = PosteriorDialog(CLINIC, dict)
    qtbot.addWidget(d)
    d.show()
    item = d.plot.plotItem
    assert not item.getAxis("left").isVisible() and not item.getAxis("bottom").isVisible()
    # the max/argmax chart before a preview, and again once it shows a selection
    import numpy as np

    from dpdesk.gui.widgets.selection_chart import SelectionChart

    chart = SelectionChart()
    qtbot.addWidget(chart)
    chart.show()
    axes = [chart.plot.plotItem.getAxis(side) for side in ("left", "bottom")]
    assert not any(a.isVisible() for a in axes)
    chart.set_selection(["a", "b"], np.array([0.25, 0.75]), "within 3 of the largest")
    assert all(a.isVisible() for a in axes)
    chart.clear()
    assert not any(a.isVisible() for a in axes)


def test_the_ledger_tables_kind_column_widens_for_a_new_kind(demo_window, qtbot):
    """Columns fit the first rows shown; an entry of a kind not seen then ('unwatched') widens its column
    so it reads whole (item 15: the audit table's cut columns)."""
    from dpdesk.gui.widgets.models import LEDGER_HEADERS

    win = demo_window
    win.show_page("audit")
    audit = win.audit
    claim = win.session.watch('count(sex="Female")', None, 40000, 0.8, 0.05)
    qtbot.waitUntil(lambda: audit.model.rowCount() > 0 and not audit.runner.is_running())
    k = LEDGER_HEADERS.index("kind")
    before = audit.table.columnWidth(k)  # fitted to the first rows: 'watch'
    win.session.unwatch(claim.id, "no longer needed")
    qtbot.waitUntil(lambda: audit.model.rowCount() == 2 and not audit.runner.is_running())
    qtbot.waitUntil(lambda: not audit.runner.is_running())
    width = audit.table.columnWidth(k)
    assert width >= before and width >= audit.table.sizeHintForColumn(k)
    assert width >= audit.table.fontMetrics().horizontalAdvance("unwatch")
