"""The New project dialog's accounting mode (issue 37): the choice, its δ, one sentence on when each mode
is the better one, and a zCDP project made through the app's create flow."""

from __future__ import annotations

import pandas as pd
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from .conftest import WAIT


def test_the_dialog_offers_both_modes_says_when_each_is_better_and_checks_the_delta(qtbot):
    from dpdesk.gui.dialogs.new_project_dialog import NewProjectDialog

    dlg = NewProjectDialog()
    qtbot.addWidget(dlg)
    ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
    when = dlg.when.text()
    assert (
        "pure (Laplace noise)" in when
        and "better choice when most cells are answered only a few times" in when
    )
    assert "α" not in when and "ε" not in when  # the words of the budget field, whichever they are
    assert "zCDP" in when and "better choice when cells are answered fresh many times over" in when
    assert dlg.values() == (1.0, 0.0, "pure", None)  # the default: pure ε, as every older project
    assert not dlg.delta.isEnabled()
    dlg.accounting.setCurrentIndex(dlg.accounting.findData("zcdp"))
    assert dlg.delta.isEnabled() and ok.isEnabled()
    assert dlg.values() == (1.0, 0.0, "zcdp", 1e-6)
    dlg.delta.setText("2")
    assert not ok.isEnabled() and "strictly between 0 and 1" in dlg.status.text()
    dlg.delta.setText("many")
    assert not ok.isEnabled() and "must be a number" in dlg.status.text()
    dlg.delta.setText("1e-5")
    assert ok.isEnabled() and dlg.status.text() == ""
    assert dlg.values() == (1.0, 0.0, "zcdp", 1e-5)


def test_a_zcdp_project_made_in_the_app_accounts_in_rho(qtbot, tmp_path, settings, dialogs, monkeypatch):
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.gui.pages import data_page

    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    qtbot.mouseClick(win.start.new_btn, Qt.MouseButton.LeftButton)
    page = win.data
    table = tmp_path / "visits.csv"
    pd.DataFrame({"region": ["north", "south", "south", "east"] * 25, "visits": list(range(100))}).to_csv(
        table, index=False
    )
    page.open_table(str(table))
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    page.editor.set_attribute("region", "region", "categorical", ["east", "north", "south", "west"])
    page.editor.set_attribute("visits", "visits", "numeric", [0, 50, 100])
    target = tmp_path / "visits.dpdesk"
    monkeypatch.setattr(data_page, "ask_new_project", lambda parent: (str(target), 1.0, 0.0, "zcdp", 1e-6))
    page.reviewed.setChecked(True)
    qtbot.mouseClick(page.create_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.session is not None, timeout=WAIT)
    assert not dialogs.errors
    acc = win.session.accounting
    assert acc is not None and (acc.epsilon, acc.delta) == (1.0, 1e-6)
    # the budget the views read is the ρ the total allows, stated back as ε = 1
    b = win.session.budget()
    assert b.total == acc.budget and b.accounting == acc
    assert 1.0 - 1e-9 < b.shown(b.total) <= 1.0 + 1e-12 and b.shown(b.system_cost) == 0.0


def test_a_zcdp_project_in_the_window_prices_in_rho_and_states_epsilon(qtbot, tmp_path, settings, dialogs):
    import json
    from pathlib import Path

    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.store import Project

    from .conftest import wait_assessed, wait_released

    demo = Path(__file__).resolve().parents[2] / "resources" / "demo"
    path = tmp_path / "z.dpdesk"
    with Project.create(
        path,
        name="z",
        schema=json.loads((demo / "adult.schema.json").read_text(encoding="utf-8")),
        source_location=str(demo / "adult.parquet"),
        total_budget=1.0,
        test_project=True,
        accounting="zcdp",
        delta=1e-6,
    ) as p:
        p.add_request('count(sex="Female")', 20.0, 0.05, request_id="z1")
    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    assert win.open_project(str(path))
    qtbot.waitUntil(lambda: win.session is not None and win.session.loaded, timeout=WAIT)
    win.requests.select_request("z1")
    a = wait_assessed(qtbot, win, "z1")
    assert a.decision == "spend" and a.noise.name == "discrete_gaussian"
    panel = win.requests.answer
    assert f"ρ = {a.spend_alpha**2 / 2:.4g}" in panel.spend_btn.text()
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    assert not dialogs.errors
    budget = win.requests.budget
    budget.redraw()
    acc = win.session.accounting
    rho = float(win.session.cell_costs().max())
    assert rho == pytest.approx(a.spend_alpha**2 / 2, rel=1e-12)
    assert "in ρ (zCDP)" in budget.info.text()
    assert f"privacy loss ε = {acc.epsilon_of(rho):.4g} of 1 at δ = 1e-06" in budget.info.text()
    budget.row_attr.setCurrentText("age")
    budget.col_attr.setCurrentText("sex")
    assert f"cost ρ = {rho:.6g}" in budget.describe(0, 0)  # age=17-24, sex=Female
    audit = win.audit
    win.tabs.setCurrentWidget(audit)
    qtbot.waitUntil(lambda: len(audit.curve) > 1, timeout=WAIT)
    audit._draw_curve()
    assert "ε at δ = 1e-06" in audit.plot.getAxis("left").labelText
    top = max(item.yData.max() for item in audit.plot.listDataItems())
    assert top == pytest.approx(acc.epsilon_of(rho), rel=1e-12)  # the curve in ε, not ρ
    win.close()
