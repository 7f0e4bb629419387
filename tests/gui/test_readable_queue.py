"""Readable queries, counts, exports confirmed, keyboard focus (issue 14, items 10 and 11)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from dpdesk.engine.queries.query import query_from_json
from dpdesk.engine.queries.text import describe_query, parse_query
from dpdesk.gui.widgets.models import asks

from .conftest import WAIT, wait_assessed, wait_released


def test_describe_query_reads_labels_never_indices(demo_window):
    schema = demo_window.session.schema
    box = parse_query('2*count(age=["17-24", "25-34"], income=">50K")', schema)
    sparse = query_from_json(
        {"indices": [int(i) for i in np.flatnonzero(box.dense())], "values": [2.0] * box.support_size()},
        schema.n_cells,
        schema.shape,
    )
    assert describe_query(sparse, schema) == '2*count(age=["17-24", "25-34"], income=">50K")'
    odd = query_from_json(
        {"indices": list(range(0, 40, 2)), "values": [1.0] * 10 + [3.0] * 10}, schema.n_cells, schema.shape
    )
    text = describe_query(odd, schema)
    assert text.startswith("2 weights on 20 cells: ") and "… +17 more" in text and "[" not in text
    assert schema.describe_cell(0) in text


def test_queue_ledger_and_details_show_readable_queries(demo_window, qtbot):
    win = demo_window
    page = win.requests
    q26 = win.session.request("q26")
    assert q26.query_text is None  # queued as coefficients
    row = next(r for r in range(page.model.rowCount()) if page.model.payload(r) == "q26")
    shown = page.model.index(row, 2).data()
    full = describe_query(q26.query, win.session.schema)
    # issue 34 item 10: what it asks, labels first (no count(… cut by a narrow column); the full text on hover
    assert "indices" not in shown and not shown.startswith("count(") and full.startswith("count(")
    assert shown == asks(full) and page.model.index(row, 2).data(Qt.ItemDataRole.ToolTipRole) == full
    assert page.counts.text().startswith("39 requests:")
    page.select_request("q26")
    a = wait_assessed(qtbot, win, "q26")
    assert "indices" not in page.answer.title.text()
    btn = page.answer.infer_btn if a.decision == "infer" else page.answer.spend_btn
    qtbot.mouseClick(btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    audit = win.audit
    assert audit.model.headerData(5, Qt.Orientation.Horizontal) == "released"
    assert audit.model.index(0, 7).data() == full
    audit.table.selectRow(0)
    details = audit.details.toPlainText()
    assert details.startswith(f"query: {full}")
    wide = win.session.add_request({"indices": list(range(0, 160, 2)), "values": [1] * 80}, 400, 0.05, "wide")
    page.select_request(wide.id)
    a = wait_assessed(qtbot, win, wide.id)
    qtbot.mouseClick(
        page.answer.infer_btn if a.decision == "infer" else page.answer.spend_btn, Qt.MouseButton.LeftButton
    )
    wait_released(qtbot, win)
    audit.table.selectRow(1)
    details = audit.details.toPlainText()
    assert details.startswith("query: weight 1 on 80 cells: ") and "… +77 more" in details.splitlines()[0]
    assert (
        "… 68 more (80 in all)" in details and len(details.splitlines()) < 150
    )  # the index list is collapsed


def test_exports_are_confirmed_and_tab_leaves_the_queue(demo_window, qtbot, dialogs, monkeypatch, tmp_path):
    from dpdesk.gui.pages import audit_page

    win = demo_window
    assert not win.requests.table.tabKeyNavigation()
    target = tmp_path / "ledger.csv"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(target))
    qtbot.mouseClick(win.audit.csv_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not win.audit.exporting(), timeout=WAIT)  # written on a worker
    assert target.exists() and dialogs.infos[-1] == (
        "Ledger exported",
        f"Wrote 0 ledger entries to {target}.",
    )
    html = tmp_path / "report.html"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(html))
    qtbot.mouseClick(win.audit.html_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not win.audit.exporting(), timeout=WAIT)  # written on a worker
    assert html.exists() and dialogs.infos[-1][0] == "Report exported" and str(html) in dialogs.infos[-1][1]


def test_queue_search_sort_and_filter(demo_window, qtbot):
    win = demo_window
    page = win.requests
    page.search.setText("journalist")
    shown = [page.request_at(r) for r in range(page.proxy.rowCount())]
    assert shown and all(win.session.request(rid).requester.startswith("journalist") for rid in shown)
    assert win.requests.answer.request_id in shown  # the selection follows what is shown
    page.search.setText('income=">50K"')
    assert all(
        'income=">50K"' in win.session.request(page.request_at(r)).describe(win.session.schema)
        for r in range(page.proxy.rowCount())
    )
    page.search.setText("")
    page.table.sortByColumn(3, Qt.SortOrder.DescendingOrder)  # by ±ε, widest first
    eps = [win.session.request(page.request_at(r)).eps for r in range(page.proxy.rowCount())]
    assert eps == sorted(eps, reverse=True) and len(eps) == 39
    page.select_request("q10")
    wait_assessed(qtbot, win, "q10")
    assert page.request_at(page.current_row()) == "q10"
    page.filter.setCurrentText("rejected")
    assert page.proxy.rowCount() == 0 and page.answer.request_id is None
