"""*Publish release…*: plan, preview off the GUI thread, confirm — on a real offscreen dialog."""

from __future__ import annotations

import numpy as np

from dpdesk.engine.schema import Schema
from dpdesk.gui.widgets.models import LEDGER_HEADERS

from .conftest import WAIT

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {"name": "age", "column": "age", "kind": "numeric", "edges": list(range(0, 90, 10))},
            {"name": "sex", "column": "sex", "kind": "categorical", "values": ["F", "M"]},
            {"name": "edu", "column": "edu", "kind": "categorical", "values": ["a", "b", "c"]},
        ]
    }
)


def _dialog(qtbot, costs=None, total=1.0):
    from dpdesk.gui.kinds.release_dialog import PublishReleaseDialog

    d = PublishReleaseDialog(SCHEMA, np.zeros(SCHEMA.n_cells) if costs is None else costs, total)
    qtbot.addWidget(d)
    d.resize(760, 640)
    d.show()
    return d


def test_tree_preview_then_publish_emits_exactly_the_previewed_plan(qtbot, dialogs, tmp_path):
    d = _dialog(qtbot)
    d.kind.setCurrentIndex(2)
    d.alpha.setValue(0.4)
    assert not d.publish_button.isEnabled()
    d.run_preview()
    qtbot.waitUntil(lambda: d.preview_result is not None, timeout=WAIT)
    text = d.result.toPlainText()
    assert "interval tree over age (branching 2, 4 levels), crossed with sex, edu" in text
    assert "Every cell pays α = 0.4 (4 count(s) per record, each at 0.1" in text
    assert "System cost 0 now → 0.4 after, of 1" in text
    assert "each query, every interval of age (other attributes summed): within ±" in text
    assert "all count queries at once: no such bound here" in text and "Thm" not in text
    assert np.allclose(d.heatmap.matrix, 0.4)
    d.grab().save(str(tmp_path / "release_dialog.png"))
    published = []
    d.sigPublish.connect(published.append)
    assert d.publish_button.isEnabled()
    d.publish_button.click()
    assert dialogs.spends and "Release 90 noisy counts" in dialogs.spends[0][0]
    assert published == [d.preview_result] and published[0].alpha == 0.4


def test_changing_an_input_discards_the_preview_and_a_plan_that_does_not_fit_cannot_be_published(
    qtbot, dialogs
):
    costs = np.zeros(SCHEMA.n_cells)
    costs[3] = 0.9
    d = _dialog(qtbot, costs, total=1.0)
    d.alpha.setValue(0.2)
    d.run_preview()
    qtbot.waitUntil(lambda: d.preview_result is not None, timeout=WAIT)
    assert "does not fit" in d.result.toPlainText() and not d.publish_button.isEnabled()
    assert (
        "all count queries at once (a looser bound): every count over the 48 cells" in d.result.toPlainText()
    )
    d.alpha.setValue(0.05)
    assert d.preview_result is None and not d.publish_button.isEnabled()


def test_bad_marginal_orders_are_one_line_in_the_dialog(qtbot, dialogs):
    d = _dialog(qtbot)
    d.kind.setCurrentIndex(1)
    d.orders.setText("1,x")
    d.run_preview()
    assert "marginal orders ('1,x') must be numbers" in d.result.toPlainText() and d.preview_result is None
    d.orders.setText("4")
    d.run_preview()
    assert "marginal order 4 must be an integer from 1 to 3" in d.result.toPlainText()


def test_publish_release_from_the_budget_panel_records_one_entry_then_requests_use_it(
    qtbot, demo_window, dialogs, tmp_path, monkeypatch
):
    """The button on the Requests page's budget panel: the dialog priced on the costs of now, the release
    drawn off the GUI thread and recorded as one ledger entry, the views redrawn, the audit page listing it."""
    from dpdesk.gui.pages import audit_page

    from .conftest import wait_assessed

    win = demo_window
    panel = win.requests.budget
    before = win.session.view().system_cost
    d = panel.publish_release()
    qtbot.waitUntil(d.isVisible, timeout=WAIT)
    d.kind.setCurrentIndex(1)  # all one-way marginals: a few counts, charged α on every cell
    d.orders.setText("1")
    d.alpha.setValue(0.01)
    d.run_preview()
    qtbot.waitUntil(lambda: d.preview_result is not None, timeout=WAIT)
    n_rows = d.preview_result.plan.n_rows
    d.publish_button.click()
    qtbot.waitUntil(lambda: not panel.release_runner.is_running() and bool(dialogs.infos), timeout=WAIT)
    assert not dialogs.errors, dialogs.errors
    entry = win.session.ledger()[-1]
    assert entry.kind == "partition" and len([v for g in entry.payload["values"] for v in g]) == n_rows
    assert (
        dialogs.infos[-1][0] == "Release published" and f"ledger entry #{entry.seq}" in dialogs.infos[-1][1]
    )
    assert win.session.view().system_cost >= before + 0.01 - 1e-12 and panel.publish_btn.isEnabled()
    assert f"of {win.session.total_budget:g}" in panel.info.text()
    assert win.session.verify().ok
    audit = win.audit
    audit.kind.setCurrentText("partition")
    assert audit.proxy.rowCount() == 1
    audit.table.selectRow(0)
    assert '"kind": "partition"' in audit.details.toPlainText() and "marginals" in audit.details.toPlainText()
    row = [audit.proxy.index(0, c).data() for c in range(audit.proxy.columnCount())]
    col = {name: i for i, name in enumerate(LEDGER_HEADERS)}  # by name: the table gained a requester column
    assert row[2] == "partition" and float(row[col["α spent"]]) == 0.01 and "marginals" in row[col["summary"]]
    table = tmp_path / "release.csv"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(table))
    assert audit.table_btn.isEnabled()
    audit.table_btn.click()
    assert dialogs.infos[-1][0] == "Release table exported" and not dialogs.errors
    assert table.read_text(encoding="utf-8").count("\n") == n_rows + 1  # the header and one row per count
    wait_assessed(qtbot, win)  # the selected request is assessed again against the release
