"""Data page (new project from a table, suggest-from-data banner), query builder, audit exports."""

from __future__ import annotations

import csv
import math
import shutil

from PySide6.QtCore import Qt

from dpdesk.appdata.bundled import resource

from .conftest import WAIT, wait_assessed, wait_released


def test_new_project_from_a_table_with_a_suggested_schema(qtbot, tmp_path, settings, dialogs, monkeypatch):
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.gui.pages import data_page

    table = tmp_path / "adult.parquet"
    shutil.copyfile(resource("demo", "adult.parquet"), table)
    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    qtbot.mouseClick(win.start.new_btn, Qt.MouseButton.LeftButton)
    assert win.tabs.currentWidget() is win.data
    page = win.data
    page.open_table(str(table))
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    assert not page.editor.banner.isVisibleTo(page)
    for col in ("sex", "income"):
        page.editor.set_attribute(col, col, "categorical", [])
    qtbot.mouseClick(page.editor.suggest_btn, Qt.MouseButton.LeftButton)
    assert page.editor.data_derived and page.editor.banner.isVisibleTo(page)
    assert "DATA-DERIVED" in page.editor.banner.text()
    schema = page.editor.schema()
    assert schema.names == ("sex", "income") and schema.attribute("sex").labels == ("Female", "Male")
    target = tmp_path / "mine.dpdesk"
    monkeypatch.setattr(data_page, "ask_new_project", lambda parent: (str(target), 2.0, 0.0))
    assert not page.create_btn.isEnabled()  # not before the schema was reviewed
    page.reviewed.setChecked(True)
    qtbot.mouseClick(page.create_btn, Qt.MouseButton.LeftButton)
    assert dialogs.confirms and "suggested from the data" in dialogs.confirms[-1][1]
    qtbot.waitUntil(lambda: win.session is not None, timeout=WAIT)
    assert win.session.path == target and win.session.total_budget == 2.0
    assert win.requests.model.rowCount() == 0
    win.close()


def test_query_builder_checkboxes_and_live_validation(demo_window, qtbot):
    from dpdesk.gui.dialogs.query_builder import QueryBuilderDialog

    dlg = QueryBuilderDialog(demo_window.session.schema)
    qtbot.addWidget(dlg)
    dlg.checks["sex"][0].setChecked(True)
    dlg.checks["income"][1].setChecked(True)
    dlg.weight.setValue(2)
    assert dlg.text.text() == '2*count(sex="Female", income=">50K")'
    assert dlg.query is not None and dlg.status.text().startswith("✓")
    dlg.text.setText('count(sex="Femal")')
    assert dlg.query is None and dlg.status.text().startswith("✗") and "Femal" in dlg.status.text()
    assert not dlg.buttons.button(dlg.buttons.StandardButton.Ok).isEnabled()


def test_import_requests_from_file(demo_window, qtbot, dialogs, monkeypatch, tmp_path):
    from dpdesk.gui.pages import requests_page

    path = tmp_path / "more.csv"
    path.write_text('query,eps,delta,requester\ncount(sex="Male"),70,0.05,new-team\n', encoding="utf-8")
    monkeypatch.setattr(requests_page, "open_file_name", lambda *a: str(path))
    qtbot.mouseClick(demo_window.requests.import_btn, Qt.MouseButton.LeftButton)
    assert demo_window.requests.model.rowCount() == 40 and dialogs.infos
    bad = tmp_path / "bad.csv"
    bad.write_text('query,eps,delta\ncount(nope="x"),1,0.5\n', encoding="utf-8")
    monkeypatch.setattr(requests_page, "open_file_name", lambda *a: str(bad))
    qtbot.mouseClick(demo_window.requests.import_btn, Qt.MouseButton.LeftButton)
    assert dialogs.errors and "bad.csv" in dialogs.errors[-1][1]
    assert demo_window.requests.model.rowCount() == 40


def test_audit_page_verify_and_exports(demo_window, qtbot, monkeypatch, tmp_path):
    from dpdesk.gui.pages import audit_page

    win = demo_window
    for rid in ("q01", "q02"):
        win.requests.select_request(rid)
        wait_assessed(qtbot, win, rid)
        qtbot.mouseClick(win.requests.answer.spend_btn, Qt.MouseButton.LeftButton)
        wait_released(qtbot, win)
    win.requests.select_request("q03")
    wait_assessed(qtbot, win, "q03")
    qtbot.mouseClick(win.requests.answer.infer_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    audit = win.audit
    assert audit.model.rowCount() == 3
    audit.kind.setCurrentText("inferred")
    assert audit.proxy.rowCount() == 1
    audit.kind.setCurrentText("all")
    audit.search.setText("q02")
    assert audit.proxy.rowCount() == 1
    audit.search.setText("")
    audit.table.selectRow(0)
    assert '"kind": "fresh"' in audit.details.toPlainText()
    assert audit.verify().ok and audit.verdict.text().startswith("✓")
    html_path, csv_path = tmp_path / "report.html", tmp_path / "ledger.csv"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(html_path))
    qtbot.mouseClick(audit.html_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not audit.exporting(), timeout=WAIT)  # written on a worker
    text = html_path.read_text(encoding="utf-8")
    assert text.count("data:image/png;base64,") == 2 and "Integrity verified" in text
    for e in win.session.ledger():
        assert e.hash[:16] in text
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(csv_path))
    qtbot.mouseClick(audit.csv_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not audit.exporting(), timeout=WAIT)  # written on a worker
    rows = list(csv.DictReader(csv_path.open(encoding="utf-8")))
    assert [r["kind"] for r in rows] == ["fresh", "fresh", "inferred"]
    assert float(rows[2]["alpha"]) == 0.0


def test_heatmap_hover_names_cell_cost_and_spenders(demo_window, qtbot):
    win = demo_window
    win.requests.select_request("q01")  # count(sex="Female")
    wait_assessed(qtbot, win, "q01")
    qtbot.mouseClick(win.requests.answer.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    budget = win.requests.budget
    budget.row_attr.setCurrentText("age")
    budget.col_attr.setCurrentText("sex")
    text = budget.describe(0, 0)  # age=17-24, sex=Female (max over the rest)
    cell = budget.cell_for(0, 0)
    assert "age=17-24" in text and "sex=Female" in text and "q01" in text
    assert f"cost {float(win.session.cell_costs()[cell]):.6g}" in text
    assert "nothing yet" in budget.describe(0, 1)  # sex=Male untouched


def test_audit_shows_the_released_value_of_a_fused_answer(demo_window, qtbot, monkeypatch, tmp_path):
    """q37 is answered fresh and fused with history: the requester got t·ỹ + (1−t)·θ̂, not ỹ."""
    from dpdesk.gui.pages import audit_page

    win = demo_window
    for rid in [f"q{i:02d}" for i in range(1, 15)] + ["q37"]:
        if win.session.request(rid).status != "pending":
            continue
        win.requests.select_request(rid)
        a = wait_assessed(qtbot, win, rid)
        btn = {"infer": win.requests.answer.infer_btn, "spend": win.requests.answer.spend_btn}.get(a.decision)
        if btn is not None:
            qtbot.mouseClick(btn, Qt.MouseButton.LeftButton)
            wait_released(qtbot, win)
    entry = win.session.project.entry_for("q37")
    assert entry.kind == "fresh" and entry.payload["fusion_weight"] is not None
    released, raw = entry.payload["released"], entry.payload["answer"]
    assert released != raw and released != round(released)  # t·ỹ + (1−t)·θ̂ is not a whole number
    # a count is an integer: every place shows the fused value rounded (the ledger keeps it exact)
    shown = math.floor(released + 0.5)  # the nearest integer, halves up (docs/project-file.md, Rounding)
    lo, hi = entry.payload["interval"]
    # the integers inside the released interval; an end point computed at an integer atom may carry
    # floating-point error (14448.0000000003), which the documented rule absorbs (tolerance 1e-6)
    inside = f"[{math.ceil(lo - 1e-6)}, {math.floor(hi + 1e-6)}]"
    row = next(r for r in range(win.audit.model.rowCount()) if win.audit.model.index(r, 3).data() == "q37")
    assert win.audit.model.index(row, 5).data() == str(shown)
    assert f"released {shown} " in win.requests.answer.fields["status"].text()
    win.requests.select_request("q37")
    wait_assessed(qtbot, win, "q37")
    assert f"Released {shown} in {inside} (±" in win.requests.answer.reason.text()
    csv_path = tmp_path / "ledger.csv"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(csv_path))
    qtbot.mouseClick(win.audit.csv_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not win.audit.exporting(), timeout=WAIT)  # written on a worker
    q37 = next(r for r in csv.DictReader(csv_path.open(encoding="utf-8")) if r["request_id"] == "q37")
    assert q37["released"] == str(shown) and float(q37["answer"]) == raw
    assert f"<td>{shown} in {inside} (±" in win.audit.report_html()
    from dpdesk.store.release import release_from_entry

    assert f"request q37: {shown} in {inside} " in release_from_entry(entry, recovered=True).reply()


def test_import_names_a_row_with_unquoted_commas(demo_window, dialogs, monkeypatch, tmp_path):
    from dpdesk.gui.pages import requests_page

    bad = tmp_path / "commas.csv"
    bad.write_text(
        'query,eps,delta\ncount(sex="Male"),30,0.05\ncount(sex=["Male","Female"]),30,0.05\n', encoding="utf-8"
    )
    monkeypatch.setattr(requests_page, "open_file_name", lambda *a: str(bad))
    demo_window.requests.import_file()
    assert dialogs.errors[-1][1].startswith("commas.csv row 3: more fields than the header's 3 columns")
    assert demo_window.requests.model.rowCount() == 39  # all or none
