"""New project asks who one person is, shows the curator the rows per person, and writes only the unit."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
from PySide6.QtCore import Qt

from .conftest import WAIT


def _visits(path) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(11)
    per = np.minimum(rng.geometric(0.3, 120), 12)
    df = pd.DataFrame(
        {
            "patient": np.repeat(np.arange(120) * 7 + 1000, per),
            "ward": rng.choice(["A", "B", "C"], per.sum()),
        }
    )
    df.to_csv(path, index=False)
    return df


def test_the_unit_is_asked_the_distribution_shown_and_only_the_unit_written(
    qtbot, tmp_path, settings, dialogs, monkeypatch
):
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.gui.pages import data_page

    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    win.menu_actions["new_project"].trigger()
    page = win.data
    table = tmp_path / "visits.csv"
    df = _visits(table)
    page.open_table(str(table))
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    page.editor.set_attribute("ward", "ward", "categorical", ["A", "B", "C"])
    question = page.unit
    assert question.unit() is None and question.rows_are_people.isChecked()  # the default: rows are people
    assert not question.column.isEnabled()
    question.column.setCurrentText("patient")
    question.grouped.setChecked(True)  # "one person can have several rows: the rows with the same patient"
    qtbot.waitUntil(lambda: question.table.rowCount() > 0 and not page.runner.is_running(), timeout=WAIT)
    # the distribution, against a count made here from the table itself
    per_person = df.groupby("patient").size()
    shown = {
        question.table.item(r, 0).text(): int(question.table.item(r, 1).text().replace(",", ""))
        for r in range(question.table.rowCount())
    }
    expected = per_person.value_counts()
    for n, people in expected.items():
        assert shown[str(n)] == people
    assert sum(shown.values()) == per_person.size
    # the first bound suggested: the smallest k that keeps 95 % of the people whole
    k95 = int(np.searchsorted(np.cumsum(np.bincount(per_person)), 0.95 * per_person.size - 1e-9))
    assert question.max_rows.value() == k95
    assert question.badge.isVisibleTo(question)  # PRIVATE
    question.max_rows.setValue(3)
    kept = int(np.minimum(per_person, 3).sum())
    assert f"keeps {kept:,} of {len(df):,} rows" in question.summary.text()
    assert question.unit() == {"column": "patient", "max_rows": 3}
    question.one_per_cell.setChecked(True)
    assert not page.reviewed.isChecked()  # a new answer needs a new review
    page.reviewed.setChecked(True)
    target = tmp_path / "visits.dpdesk"
    monkeypatch.setattr(data_page, "ask_new_project", lambda parent: (str(target), 1.0, 0.0))
    qtbot.mouseClick(page.create_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.session is not None, timeout=WAIT)
    assert not dialogs.errors
    unit = win.session.schema.unit
    assert (unit.column, unit.max_rows, unit.one_row_per_cell) == ("patient", 3, True)
    # the project file holds the unit and nothing of the distribution
    con = sqlite3.connect(target)
    try:
        text = "\n".join(
            str(v)
            for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            for row in con.execute(f'SELECT * FROM "{t}"')
            for v in row
        )
    finally:
        con.close()
    from dpdesk.store.project import Project

    with Project.open(target) as p:
        assert p.schema.to_dict()["privacy_unit"] == {
            "column": "patient",
            "max_rows": 3,
            "one_row_per": "cell",
        }
    for needle in ("people in that many cells", f"keeps {kept:,}", f"{per_person.size:,} people"):
        assert needle not in text
    win.close()
