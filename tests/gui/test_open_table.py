"""The *Open table* dialog (File, PostgreSQL, Spark tabs) and a Spark table opened and counted from the GUI."""

from __future__ import annotations

import json
import shutil

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from dpdesk.appdata.bundled import resource
from dpdesk.engine.schema import Schema
from dpdesk.gui.dialogs.open_table_dialog import OpenTableDialog
from dpdesk.sources import open_source

from .conftest import WAIT


def _open_enabled(dlg: OpenTableDialog) -> bool:
    return dlg.buttons.button(QDialogButtonBox.StandardButton.Open).isEnabled()


def test_each_tab_says_what_it_still_needs(qtbot) -> None:
    dlg = OpenTableDialog()
    qtbot.addWidget(dlg)
    assert dlg.tabs.count() == 3 and not _open_enabled(dlg) and "Name a file" in dlg.problem.text()
    dlg.file_path.setText("/data/people.csv")
    assert _open_enabled(dlg) and dlg.choice() == ("/data/people.csv", None)
    dlg.tabs.setCurrentIndex(OpenTableDialog.POSTGRESQL)
    dlg.pg_url.setText("mysql://x")
    assert not _open_enabled(dlg) and "postgresql://" in dlg.problem.text()
    dlg.pg_url.setText("postgresql://me@db:5432/census")
    assert not _open_enabled(dlg) and "table" in dlg.problem.text()
    dlg.pg_table.setText("public.people")
    assert _open_enabled(dlg) and dlg.choice() == ("postgresql://me@db:5432/census", "public.people")
    dlg.tabs.setCurrentIndex(OpenTableDialog.SPARK)
    assert dlg.spark_master.text() == "local[*]" and not _open_enabled(dlg)
    dlg.spark_table.setText("lake.people")
    assert _open_enabled(dlg) and dlg.choice() == ("spark://local[*]", "lake.people")
    dlg.spark_master.setText("spark://head:7077")
    assert dlg.choice() == ("spark://head:7077", "lake.people")
    dlg.spark_master.setText("  ")
    assert not _open_enabled(dlg) and "Spark master" in dlg.problem.text()


def test_spark_tab_opens_previews_and_counts_a_lake_file(
    spark, qtbot, tmp_path, settings, dialogs, monkeypatch
):
    """Open table → Spark tab → a Parquet path: the preview and the cube come from the real local Spark."""
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.gui.pages import data_page

    table = tmp_path / "adult.parquet"
    shutil.copyfile(resource("demo", "adult.parquet"), table)
    schema = Schema.from_dict(json.loads(resource("demo", "adult.schema.json").read_text(encoding="utf-8")))

    def fill_spark_tab(dlg: OpenTableDialog) -> bool:
        dlg.tabs.setCurrentIndex(OpenTableDialog.SPARK)
        dlg.spark_master.setText("local[2]")
        dlg.spark_table.setText(str(table))
        return _open_enabled(dlg)

    monkeypatch.setattr(data_page, "run_dialog", fill_spark_tab)
    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    qtbot.mouseClick(win.start.new_btn, Qt.MouseButton.LeftButton)
    page = win.data
    qtbot.mouseClick(page.open_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    assert not dialogs.errors
    assert page.source.kind == "spark" and page.source.location == "spark://local[2]"
    assert "spark://local[2]" in page.location.text() and page.model.rowCount() > 0
    page.editor.set_schema(schema)
    qtbot.mouseClick(page.build_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.cube is not None and not page.runner.is_running(), timeout=WAIT)
    reference = open_source(str(table)).build_cube(schema)
    np.testing.assert_array_equal(page.cube.counts, reference.counts)
    assert page.cube.out_of_domain == reference.out_of_domain and "Cube:" in page.cube_info.text()
    assert page.progress.text() == "cube built"  # done, not 'building cube 100%'
    win.close()
