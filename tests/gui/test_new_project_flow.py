"""A new project after another project was open in the same session (issue 14, item 1)."""

from __future__ import annotations

import pandas as pd
from PySide6.QtCore import Qt

from .conftest import WAIT


def _write_csv(path) -> None:
    pd.DataFrame({"region": ["north", "south", "south", "east"] * 25, "visits": list(range(100))}).to_csv(
        path, index=False
    )


def test_new_project_after_the_demo_starts_from_a_clean_editable_page(
    demo_window, qtbot, tmp_path, monkeypatch, dialogs
):
    from dpdesk.gui.pages import data_page

    win = demo_window
    page = win.data
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    assert not page.editor.table.isEnabled()  # the demo's schema is fixed while it is open
    qtbot.mouseClick(win.start.new_btn, Qt.MouseButton.LeftButton)
    assert win.session is None and win.tabs.currentWidget() is page
    assert page.source is None and page.model.rowCount() == 0 and page.editor.table.rowCount() == 0
    assert "No table open" in page.location.text()
    table = tmp_path / "visits.csv"
    _write_csv(table)
    page.open_table(str(table))
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    assert (
        page.model.columnCount() == 2 and page.model.rowCount() == 100
    )  # this table's preview, not the demo's
    assert page.editor.table.isEnabled() and page.editor.suggest_btn.isEnabled() and page.open_btn.isEnabled()
    page.editor.set_attribute("region", "region", "categorical", ["east", "north", "south", "west"])
    page.editor.set_attribute("visits", "visits", "numeric", [0, 50, 100])
    target = tmp_path / "visits.dpdesk"
    monkeypatch.setattr(data_page, "ask_new_project", lambda parent: (str(target), 1.0, 1e-6))
    assert not page.create_btn.isEnabled()  # not before the schema was reviewed
    page.reviewed.setChecked(True)
    qtbot.mouseClick(page.create_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.session is not None, timeout=WAIT)
    assert not dialogs.errors
    assert win.session.path == target and win.session.schema.names == ("region", "visits")
    assert win.session.schema.shape == (4, 2)
    assert win.session.project.delta_cap == 1e-6 and win.session.total_budget == 1.0  # the limits asked for


def test_schema_errors_name_the_column_and_the_banner_clears_once_every_domain_is_declared(
    qtbot, tmp_path, settings, dialogs
):
    from dpdesk.engine.errors import SchemaError
    from dpdesk.gui import dialogs as dialog_mod
    from dpdesk.gui.app.main_window import MainWindow

    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    qtbot.mouseClick(win.start.new_btn, Qt.MouseButton.LeftButton)
    page = win.data
    table = tmp_path / "visits.csv"
    _write_csv(table)
    page.open_table(str(table))
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    editor = page.editor
    qtbot.mouseClick(editor.suggest_btn, Qt.MouseButton.LeftButton)
    assert editor.data_derived and editor.banner.isVisibleTo(page)
    rows = {editor.table.item(r, 1).text(): r for r in range(editor.table.rowCount())}
    editor.table.item(rows["visits"], 4).setText("50, 0")  # typed by hand, and wrong
    assert editor.banner.isVisibleTo(page)  # region's domain is still the data's
    assert editor.status.text() == "✗ column 'visits' edges: must be strictly increasing"
    try:
        editor.schema()
    except SchemaError as exc:
        title, message = dialog_mod.explain(exc)
    assert "released or spent" not in message and "column 'visits'" in message
    editor.table.item(rows["visits"], 4).setText("0, 50, 100")
    editor.table.item(rows["region"], 4).setText("east, north, south, west")
    assert not editor.data_derived and not editor.banner.isVisibleTo(page)
    assert editor.status.text().startswith("✓ 2 attributes")
    win.close()


def test_guided_new_project_steps_and_schema_review(qtbot, tmp_path, settings, dialogs):
    from dpdesk.gui.app.main_window import MainWindow

    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    win.menu_actions["new_project"].trigger()
    page = win.data
    assert page.step() == 1 and "<b>1. open a table</b>" in page.steps.text()
    table = tmp_path / "visits.csv"
    _write_csv(table)
    page.open_table(str(table))
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    assert page.step() == 2 and not page.reviewed.isEnabled()
    page.editor.set_attribute("region", "region", "categorical", [])
    assert page.step() == 3 and "<b>3. declare their domains</b>" in page.steps.text()
    page.editor.set_attribute("region", "region", "categorical", ["east", "north", "south", "west"])
    assert page.step() == 4 and page.reviewed.isEnabled() and not page.create_btn.isEnabled()
    page.reviewed.setChecked(True)
    assert page.step() == 5 and page.create_btn.isEnabled() and "✓ review the schema" in page.steps.text()
    page.editor.set_attribute("region", "region", "categorical", ["east", "north", "south"])  # changed again
    assert not page.reviewed.isChecked() and not page.create_btn.isEnabled()
    win.close()
