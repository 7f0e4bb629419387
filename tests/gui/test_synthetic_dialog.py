"""*Export synthetic table…*: fit and draw off the GUI thread, confirm, record, write — on a real offscreen window."""

from __future__ import annotations

import csv
import hashlib

import numpy as np

from dpdesk.gui.widgets.models import LEDGER_HEADERS

from .conftest import WAIT


def _release_marginals(session, alpha=0.05):
    """Publish the demo's 1- and 2-way marginals of age, sex and edu (the history the table is drawn from)."""
    from dpdesk.engine.partition.guarantee import preview
    from dpdesk.engine.partition.plan import marginals_plan
    from dpdesk.engine.partition.release_plan import PartitionReleasePlan

    names = session.schema.names
    plan = marginals_plan(session.schema, [(names[0],), (names[1],), (names[0], names[1]), (names[2],)])
    pv = preview(plan, alpha=alpha, total_budget=session.total_budget, cell_costs=session.view().cell_costs)
    release = session.release_job(PartitionReleasePlan(pv, session.basis()))(None)
    session.released()
    return release


def test_export_synthetic_table_from_the_file_menu_records_then_writes(qtbot, demo_window, dialogs, tmp_path):
    from dpdesk.gui.kinds.synthetic_dialog import SyntheticDialog

    win = demo_window
    session = win.session
    _release_marginals(session)
    costs = session.view().cell_costs.copy()
    win.menu_actions["export_synthetic"].trigger()
    d = win.audit.synthetic_dialog
    assert isinstance(d, SyntheticDialog)
    qtbot.waitUntil(d.isVisible, timeout=WAIT)
    assert win.tabs.currentWidget() is win.audit
    d.rows.setValue(400)
    d.seed.setValue(3)
    d.by_cv.setChecked(False)
    d.tau.setValue(0.1)
    out = tmp_path / "synthetic.csv"
    d.path.setText(str(out))
    assert not d.export_button.isEnabled()
    d.preview_button.click()
    assert d.cancel_button.isEnabled()  # the fit runs off the GUI thread
    qtbot.waitUntil(lambda: d.plan is not None or "color:#c0392b" in d.result.toHtml(), timeout=WAIT)
    plan = d.plan
    assert plan is not None, d.result.toPlainText()
    text = d.result.toPlainText()
    assert "synthetic table of 400 rows from" in text and "trade-off τ = 0.1 (given)" in text
    assert "privacy cost: none" in text
    d.grab().save(str(tmp_path / "synthetic_dialog.png"))
    assert d.export_button.isEnabled() and not out.exists()  # a preview writes nothing
    assert not [e for e in session.ledger() if e.kind == "synthetic"]
    d.export_button.click()
    assert dialogs.confirms and "write 400 synthetic rows" in dialogs.confirms[-1][1]
    qtbot.waitUntil(lambda: d.release is not None, timeout=WAIT)
    entry = session.ledger()[-1]
    assert entry.kind == "synthetic" and entry.payload["rows_sha256"] == plan.digest
    assert "Recorded as ledger entry" in d.result.toPlainText()
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    schema = session.schema
    assert rows[0] == list(schema.names) and len(rows) == 401
    codes = np.array(
        [[schema.attributes[k].labels.index(v) for k, v in enumerate(r)] for r in rows[1:]], dtype=np.int64
    )
    assert hashlib.sha256(codes.tobytes()).hexdigest() == plan.digest  # the file is the recorded rows
    with open(tmp_path / "synthetic-fit.csv", newline="", encoding="utf-8") as fh:
        fit = list(csv.DictReader(fh))
    released = [r.answer for r in session.project.history().rows]
    assert len(fit) == len(released) and [float(r["released"]) for r in fit] == [
        float(f"{a:.6g}") for a in released
    ]
    assert np.array_equal(session.view().cell_costs, costs)  # free
    assert session.verify().ok
    win.audit.kind.setCurrentText("synthetic")
    assert win.audit.proxy.rowCount() == 1
    col = {name: i for i, name in enumerate(LEDGER_HEADERS)}
    summary = win.audit.proxy.index(0, col["summary"]).data()
    assert summary == "synthetic table of 400 rows (maximum entropy, τ = 0.1, seed 3)"


def test_without_released_answers_the_dialog_says_so_in_one_line(
    qtbot, demo_window, dialogs, monkeypatch, tmp_path
):
    from dpdesk.gui.pages import audit_page

    win = demo_window
    win.audit.synthetic_btn.click()
    d = win.audit.synthetic_dialog
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(tmp_path / "chosen.parquet"))
    d.browse_button.click()
    assert d.path.text() == str(tmp_path / "chosen.parquet")
    d.preview_button.click()
    assert "no released answers yet" in d.result.toPlainText() and d.plan is None
    assert not d.export_button.isEnabled()
