"""Menu bar (File/Edit/Release/Help, Close project, Quit) and the one vocabulary with its glossary (issue 14)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QFormLayout, QLabel

from .conftest import WAIT


def _menu_titles(win):
    return [a.text() for a in win.menuBar().actions()]


def test_menus_close_project_and_quit(demo_window, qtbot):
    win = demo_window
    assert _menu_titles(win)[:4] == ["&File", "&Edit", "&Release", "&Help"]
    acts = win.menu_actions
    assert acts["quit"].shortcut() == QKeySequence("Ctrl+Q")
    assert acts["close_project"].isEnabled() and acts["new_request"].isEnabled()
    acts["close_project"].trigger()
    assert win.session is None and win.tabs.currentWidget() is win.start
    assert not acts["close_project"].isEnabled() and not acts["new_request"].isEnabled()
    assert win.windowTitle() == "dpdesk"
    win.open_project(win.start.recent.item(0).data(Qt.ItemDataRole.UserRole))
    assert win.session is not None and acts["close_project"].isEnabled()
    acts["quit"].trigger()
    qtbot.waitUntil(lambda: not win.isVisible(), timeout=WAIT)
    assert win.session is None  # quitting closed the project (its lock is released)


def test_one_vocabulary_budget_alpha_accuracy_eps_with_glossary_tooltips(
    demo_window, qtbot, monkeypatch, tmp_path
):
    from dpdesk.gui.dialogs.query_builder import QueryBuilderDialog
    from dpdesk.gui.pages import data_page
    from dpdesk.gui.widgets import glossary
    from dpdesk.gui.widgets.glossary import GlossaryDialog

    win = demo_window
    # ε is only ever the privacy loss (the budget is a total ε, also when a project is created); an
    # accuracy is ±a at a confidence shown in percent
    from dpdesk.gui.dialogs.new_project_dialog import NewProjectDialog

    asked = []
    monkeypatch.setattr(data_page.QFileDialog, "getSaveFileName", lambda *a, **k: (str(tmp_path / "p"), ""))

    def ask(parent):  # the real dialog, read instead of shown modally
        dlg = NewProjectDialog(parent)
        qtbot.addWidget(dlg)
        asked.extend(label.text() for label in dlg.findChildren(QLabel))
        dlg.budget.setValue(2.0)
        return dlg.values()

    monkeypatch.setattr(NewProjectDialog, "ask", staticmethod(ask))
    assert data_page.ask_new_project(win) == (str(tmp_path / "p.dpdesk"), 2.0, 0.0)
    assert any("budget ε" in t for t in asked) and not any("α" in t for t in asked)
    dlg = QueryBuilderDialog(win.session.schema)
    qtbot.addWidget(dlg)
    form = next(lay for lay in dlg.findChildren(QFormLayout))
    label = form.labelForField(dlg.eps)
    assert label.text().startswith("accuracy ±a") and "half-width" in label.toolTip()
    assert form.labelForField(dlg.delta).text() == "confidence" and dlg.delta.text() == "95 %"
    assert "confidence" in form.labelForField(dlg.delta).toolTip()
    panel = win.requests.answer
    form = next(lay for lay in panel.findChildren(QFormLayout))
    tips = {form.labelForField(w).text(): form.labelForField(w).toolTip() for w in panel.fields.values()}
    assert "largest per-cell cost" in tips["System cost now → after"]
    assert "Theorem 5.4" in tips["System cost now → after"]
    assert "fusion" in tips["Fresh answer would cost"] and "privacy loss ε" in tips["Fresh answer would cost"]
    for method in ("fft", "direct", "mc"):
        assert f"posterior method {method}" in panel.method.toolTip()
    assert "pacing" in win.requests.budget.policy_btn.toolTip()
    assert "system cost" in win.requests.budget.gauge.toolTip()
    win.menu_actions["glossary"].trigger()
    shown = [w for w in win.findChildren(GlossaryDialog) if w.isVisible()]
    assert shown
    text = shown[0].text.toPlainText()
    for name, _ in glossary.TERMS.values():
        assert name in text
    assert "ε is privacy loss" in text and "accuracy ±a at a confidence" in text
    assert "δ is only the δ of approximate (ε, δ)-DP" in text
    shown[0].close()
