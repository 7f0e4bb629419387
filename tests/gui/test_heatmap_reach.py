"""Issue 34 item 11: the heatmap of a many-attribute cube is reachable at 1024×700 without the splitter,
its summary never collapses to one colour without saying so, and the wheel never changes a setting it
scrolls over."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from .conftest import wait_released


def _wheel(widget, steps: int = -3) -> None:
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(widget.rect().center())),
        QPoint(0, 0),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def _answer(qtbot, win, text, eps):
    from PySide6.QtCore import Qt as _Qt

    rid = win.session.add_request(text, eps, 0.05, "test").id
    win.requests.select_request(rid)
    panel = win.requests.answer
    qtbot.waitUntil(
        lambda: panel.assessment is not None and panel.assessment.request_id == rid, timeout=20000
    )
    qtbot.mouseClick(panel.spend_btn, _Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)


def test_a_flat_max_switches_to_the_average_and_says_so_and_the_heatmap_opens_in_a_window(
    demo_window, qtbot, dialogs
):
    win = demo_window
    budget = win.requests.budget
    assert budget.mode.currentData() == "max"
    # one count on every (age, sex) pair's >50K cells, one smaller on a corner: the max over the other
    # attributes is the same everywhere, the average is not
    _answer(qtbot, win, 'count(income=">50K")', 40)
    _answer(qtbot, win, 'count(age="17-24", income="<=50K")', 200)
    budget.redraw()
    assert budget.mode.currentData() == "mean" and "showing the average instead" in budget.info.text()
    shown = budget.heatmap.matrix
    assert float(np.ptp(shown)) > 0  # not one colour
    # a curator's own choice of "max" stands
    budget.mode.setCurrentIndex(budget.mode.findData("max"))
    budget.redraw()
    assert budget.mode.currentData() == "max"
    # reachable without the splitter: its own window, on the screen, the same matrix
    dlg = budget.open_heatmap_window()
    qtbot.waitUntil(dlg.isVisible, timeout=5000)
    area = QApplication.primaryScreen().availableGeometry()
    assert area.contains(dlg.frameGeometry()) and dlg.view.height() >= 300
    np.testing.assert_array_equal(dlg.view.matrix, budget.heatmap.matrix)


def test_the_wheel_scrolls_past_a_setting_it_does_not_have_focus(demo_window, qtbot):
    win = demo_window
    budget = win.requests.budget
    before = budget.row_attr.currentIndex()
    budget.setFocus()
    _wheel(budget.row_attr)
    assert budget.row_attr.currentIndex() == before  # unfocused: the page scrolls, the setting stays
    budget.row_attr.setFocus()
    _wheel(budget.row_attr, steps=-1)
    assert budget.row_attr.currentIndex() != before  # clicked into (focused): the wheel is its own
