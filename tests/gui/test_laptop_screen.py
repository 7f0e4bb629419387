"""Issue 34, items 1–2: on a laptop's screen (the tests' screen leaves 1024×700 to windows) the main
window and every dialog fit the available area, the window never grows itself, and every spend — the
counter-offer a watched claim leaves included — goes through the same confirmation, Cancel by default.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtWidgets import QAbstractButton, QApplication, QDialog

from .conftest import wait_assessed, wait_released


def _screen() -> QRect:
    return QApplication.primaryScreen().availableGeometry()


def _inside_screen(window) -> None:
    """The window, its frame and every button shown in it lie inside the screen's available area."""
    area = _screen()
    assert area.width() <= 1024 and area.height() <= 700, "the tests run on a laptop-sized screen"
    frame = window.frameGeometry()
    assert area.contains(frame), f"{type(window).__name__} at {frame} outside the screen {area}"
    for button in window.findChildren(QAbstractButton):
        if button.isVisible() and button.window() is window and not button.size().isEmpty():
            rect = QRect(button.mapToGlobal(button.rect().topLeft()), button.size())
            assert area.contains(rect), (
                f"{button.text()!r} of {type(window).__name__} at {rect} is off the screen"
            )


def _laid_out(layout):
    """The widgets shown in ``layout`` and its rows, however deep."""
    for i in range(layout.count()):
        item = layout.itemAt(i)
        if item.widget() is not None and item.widget().isVisible():
            yield item.widget()
        elif item.layout() is not None:
            yield from _laid_out(item.layout())


def _nothing_overlaps(panel) -> None:
    """No two widgets of ``panel`` lie on each other, and every wrapped label has the height of its text
    (a panel squeezed under what its rows need overlaps them or cuts their lines)."""
    shown = list(_laid_out(panel.layout()))
    rects = [(w, QRect(w.mapTo(panel, w.rect().topLeft()), w.size())) for w in shown]
    for i, (a, ra) in enumerate(rects):
        for b, rb in rects[i + 1 :]:
            assert not ra.intersects(rb), f"{type(a).__name__} {ra} overlaps {type(b).__name__} {rb}"
    for w in shown:
        if hasattr(w, "wordWrap") and w.wordWrap() and w.text():
            assert w.height() >= w.heightForWidth(w.width()), f"{w.text()[:40]!r} cut to {w.height()} px"


def test_the_window_fits_the_screen_and_never_grows_itself(demo_window, qtbot):
    win = demo_window
    _inside_screen(win)
    size = win.size()
    page = win.requests
    for rid in ("q32", "q37", "q01"):  # a long query and reason, a fresh answer, a decided one
        page.select_request(rid)
        wait_assessed(qtbot, win, rid)
        qtbot.wait(20)
        assert win.size() == size, f"selecting {rid} grew the window to {win.size()}"
        _nothing_overlaps(page.answer)  # the splitter gives the answer what its wrapped lines need
        assert page.answer.plot.height() >= 150 and page.lower.height() >= 120
    page.budget.mode.setCurrentIndex(1)  # fixed slices: more choosers in the budget panel
    page.lower.setCurrentWidget(page.claims)
    for name in ("start", "data", "requests", "audit"):
        win.show_page(name)
        qtbot.wait(20)
        assert win.size() == size, f"the {name} page grew the window to {win.size()}"
        _inside_screen(win)
        # at 1024×700 no page needs the window's fallback scrolling
        assert win.page_area.verticalScrollBar().maximum() == 0, name
        assert win.page_area.horizontalScrollBar().maximum() == 0, name
    win.show_page("requests")
    qtbot.wait(20)
    bar = win.statusBar()
    assert bar.isVisible() and win.rect().contains(QRect(bar.mapTo(win, bar.rect().topLeft()), bar.size()))
    lower = page.lower
    assert lower.isVisible() and lower.height() >= 120
    assert page.answer.plot.height() >= 150  # never squeezed to a strip
    # a watched claim blocks the request shown: its note takes three lines above the plot, and still nothing
    # overlaps and the page does not scroll (the tabs below scroll instead)
    win.session.watch('count(income=">50K")', None, 14400, 0.8, 0.05, name="at most 14,400 earn >50K")
    page.select_request("q37")
    wait_assessed(qtbot, win, "q37")
    qtbot.waitUntil(lambda: page.answer.claim_blocked and page.answer.claims_note.isVisible())
    qtbot.wait(20)
    _nothing_overlaps(page.answer)
    assert win.page_area.verticalScrollBar().maximum() == 0 and win.size() == size
    assert page.answer.plot.height() >= 150 and lower.height() >= 90
    # a posterior's plan: a dozen lines of words and a chart; the words scroll, the page does not
    rid = win.session.add_request('posterior(sex | income="<=50K"; budget=0.3)', requester="press").id
    page.select_request(rid)
    view = page.answer.plan_view
    qtbot.waitUntil(
        lambda: view.isVisible() and bool(view.text.text()) and not page.answer.runner.is_running()
    )
    qtbot.wait(20)
    _nothing_overlaps(page.answer)
    assert win.page_area.verticalScrollBar().maximum() == 0 and win.size() == size
    assert view.charts.height() >= 150


def test_a_figure_of_the_answer_panel_is_never_cut_to_one_line(demo_window, qtbot):
    """The figures scroll under the plot; one that wraps at 1024×700 (an interval with its confidence and
    the confidence asked) gets its second line, whichever request was shown before."""
    from dpdesk.gui.runtime.scripted import SCRIPTED, work_through

    win = demo_window
    work_through(win.session, SCRIPTED)  # a history: intervals, fused costs, decided requests
    page = win.requests
    for rid in ("q25", "q37", "q32", "q01", "q25"):
        page.select_request(rid)
        wait_assessed(qtbot, win, rid)
        qtbot.wait(20)
        for key, field in page.answer.fields.items():
            assert field.height() >= field.heightForWidth(field.width()), f"{rid} {key}: {field.text()!r}"


def test_a_restored_geometry_is_fitted_to_the_screen_it_opens_on(qtbot, settings, tmp_path):
    from dpdesk.gui.app.main_window import MainWindow

    big = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(big)
    big.show()
    big.setGeometry(300, 250, 1600, 1000)  # as saved on a larger screen
    big.close()
    settings.sync()
    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    qtbot.wait(20)
    _inside_screen(win)


def _dialogs_of(win, tmp_path):
    """Every dialog of the app, made as the app makes it, over the open demo project."""
    from dpdesk.gui.dialogs.about_dialog import AboutDialog
    from dpdesk.gui.dialogs.choice_dialog import ChoiceDialog
    from dpdesk.gui.dialogs.claim_dialog import ClaimDialog
    from dpdesk.gui.dialogs.new_project_dialog import NewProjectDialog
    from dpdesk.gui.dialogs.open_table_dialog import OpenTableDialog
    from dpdesk.gui.dialogs.policy_dialog import SpendPolicyDialog
    from dpdesk.gui.dialogs.prior_dialog import PriorDialog
    from dpdesk.gui.dialogs.query_builder import QueryBuilderDialog
    from dpdesk.gui.dialogs.spend_dialog import SpendConfirmation, spend_text
    from dpdesk.gui.kinds.batch_dialog import BatchDialog
    from dpdesk.gui.kinds.estimate_dialog import EstimateDialog
    from dpdesk.gui.kinds.posterior_dialog import PosteriorDialog
    from dpdesk.gui.kinds.release_dialog import PublishReleaseDialog
    from dpdesk.gui.kinds.selection_dialog import SelectionDialog
    from dpdesk.gui.kinds.synthetic_dialog import SyntheticDialog
    from dpdesk.gui.widgets.glossary import GlossaryDialog
    from dpdesk.store.estimating import ledger_inputs, query_inputs

    s = win.session
    long = "a sentence a curator reads before deciding, " * 12
    yield "query builder", QueryBuilderDialog(s.schema, win)
    yield "posterior", PosteriorDialog(s.schema, s.plan_inputs, parent=win)
    yield "max/argmax", SelectionDialog(s, win)
    yield "publish", PublishReleaseDialog(s.schema, s.cell_costs(), s.total_budget, win)
    yield (
        "estimate",
        EstimateDialog(lambda q: query_inputs(s.project, q), text='count(sex="Male")', parent=win),
    )
    yield "synthetic", SyntheticDialog(s.schema, lambda: ledger_inputs(s.project)[0], parent=win)
    yield "claim", ClaimDialog(s.schema, 'count(sex="Female")', win)
    yield "open table", OpenTableDialog(win)
    yield "new project", NewProjectDialog(win)
    yield "spend policy", SpendPolicyDialog(None, win)
    yield "known bounds", PriorDialog(None, win)
    yield "about", AboutDialog(win)
    yield "glossary", GlossaryDialog(win)
    yield "batch", BatchDialog(s, ["q33", "q35"], "fft", win)
    yield "spend confirmation", SpendConfirmation(*spend_text("x", "ε = 0.1", 0.4, 0.5, 1.0, [long]), win)
    yield "choice", ChoiceDialog("Counter-offer", long, [long, long], win)


def test_every_dialog_fits_a_laptop_screen(demo_window, qtbot, tmp_path):
    import pyqtgraph as pg

    win = demo_window
    for name, dlg in _dialogs_of(win, tmp_path):
        qtbot.addWidget(dlg)
        dlg.show()
        qtbot.wait(20)
        _inside_screen(dlg)
        for plot in dlg.findChildren(pg.PlotWidget) + dlg.findChildren(pg.GraphicsLayoutWidget):
            if plot.isVisible():
                assert plot.height() >= 150, f"{name}: a plot squeezed to {plot.height()} px"
        if name == "batch":  # planned off the GUI thread: stop it before the dialog goes
            dlg.runner.shutdown()
        dlg.close()


def _drive_modals(qtbot, steps):
    """Run ``steps[type]`` on each modal dialog of that type as it comes up, in turn (exec() blocks)."""
    seen: list = []

    def poll():
        dlg = QApplication.activeModalWidget()
        if isinstance(dlg, QDialog) and steps and isinstance(dlg, steps[0][0]) and dlg not in seen:
            seen.append(dlg)
            _kind, step = steps.pop(0)
            step(dlg)
        if steps:
            QTimer.singleShot(20, poll)

    QTimer.singleShot(0, poll)
    return seen


def test_a_counter_offer_after_a_watched_claim_asks_the_same_confirmation(
    demo_window, qtbot, dialogs, monkeypatch
):
    """The blocked request's *Release at α = …* chooses terms in a dialog that fits the screen; the spend
    that follows asks the one confirmation, whose default (Enter) is Cancel — nothing spent until the
    curator presses *Spend and release*."""
    from dpdesk.gui import dialogs as mod
    from dpdesk.gui.dialogs import claim_dialog
    from dpdesk.gui.dialogs.choice_dialog import ChoiceDialog
    from dpdesk.gui.dialogs.spend_dialog import SpendConfirmation

    win = demo_window
    panel = win.requests.answer
    a = wait_assessed(qtbot, win)
    rid = a.request.id

    def fill(dialog):
        dialog.query.setText(a.request.query.text)
        dialog.low.setText("0")
        dialog.high.setText("1000")
        dialog.threshold.setText("0.8")
        dialog.risk.setText("0.05")
        dialog.accept()
        return True

    monkeypatch.setattr(claim_dialog, "run_dialog", fill)
    win.menu_actions["watch_claim"].trigger()
    qtbot.waitUntil(lambda: panel.claim_blocked and panel.offer_btn.isVisible(), timeout=20000)
    offer = panel.claim_offer
    monkeypatch.setattr(mod, "choose", dialogs.real["choose"])  # the real dialogs from here on
    monkeypatch.setattr(mod, "confirm_spend", dialogs.real["confirm_spend"])
    entries = len(win.session.ledger())
    shown = {}

    def choose(dlg):
        _inside_screen(dlg)
        shown["options"] = [label.text() for label in dlg.labels]
        qtbot.keyClick(dlg, Qt.Key.Key_Return)  # OK: the requester accepts the first offer

    def cancel_by_enter(dlg):
        _inside_screen(dlg)
        assert dlg.cancel_btn.isDefault() and not dlg.spend_btn.isDefault()
        shown["heading"] = dlg.heading.text()
        qtbot.keyClick(dlg, Qt.Key.Key_Return)

    seen = _drive_modals(qtbot, [(ChoiceDialog, choose), (SpendConfirmation, cancel_by_enter)])
    qtbot.mouseClick(panel.offer_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(seen) == 2 and not seen[-1].isVisible(), timeout=30000)
    assert shown["options"][0].startswith(f"a fresh answer at ε = {offer.alpha:.4g}")
    assert f"It spends ε = {offer.alpha:.6g}" in shown["heading"]
    assert len(win.session.ledger()) == entries and win.session.request(rid).status == "pending"
    assert win.session.request(rid).eps == pytest.approx(offer.eps)  # the accepted terms stay
    # the accepted terms are now the request's: the ordinary spend, confirmed by its button
    a2 = wait_assessed(qtbot, win, rid)
    assert a2.decision == "spend" and panel.spend_btn.isEnabled()

    def spend(dlg):
        _inside_screen(dlg)
        qtbot.mouseClick(dlg.spend_btn, Qt.MouseButton.LeftButton)

    seen = _drive_modals(qtbot, [(SpendConfirmation, spend)])
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    qtbot.waitUntil(lambda: win.session.request(rid).status == "answered", timeout=30000)
    (entry,) = win.session.ledger()[entries:]
    assert entry.kind == "fresh" and float(entry.payload["alpha"]) == pytest.approx(offer.alpha, rel=1e-12)
