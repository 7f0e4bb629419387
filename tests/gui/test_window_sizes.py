"""Every page is usable from 1024×700 to 2560×1440 (issue 14, item 2): shot as PNG at both ends."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect

from .conftest import wait_assessed

SIZES = [(1024, 700), (1600, 1000), (2560, 1440)]


def _rect_in(widget, ancestor) -> QRect:
    return QRect(widget.mapTo(ancestor, widget.rect().topLeft()), widget.size())


def _shown_inside(widget, win) -> bool:
    return widget.isVisible() and win.rect().contains(_rect_in(widget, win))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_page_fits_and_keeps_its_parts_readable(demo_window, qtbot, tmp_path, size):
    from dpdesk.gui.panels.budget_panel import HEATMAP_MIN_HEIGHT

    win = demo_window
    win.resize(*size)
    win.requests.select_request("q32")  # a long query title and reason
    wait_assessed(qtbot, win, "q32")
    budget = win.requests.budget
    budget.mode.setCurrentIndex(1)  # fixed slices: three more choosers
    for page in ("start", "data", "requests", "audit"):
        win.show_page(page)
        qtbot.wait(50)
        assert (win.width(), win.height()) == size, (
            f"{page} forces the window to {win.width()}×{win.height()}"
        )
        win.grab().save(str(tmp_path / f"{page}-{size[0]}x{size[1]}.png"))
    win.show_page("requests")
    qtbot.wait(50)
    panel = win.requests.answer
    assert budget.heatmap.height() >= HEATMAP_MIN_HEIGHT
    assert panel.plot.height() >= panel.plot.minimumHeight() >= 150
    # the decision and the actions are in view without scrolling, and the badge stays off the plot
    for w in (panel.decision, panel.spend_btn, panel.reject_btn, win.requests.table):
        assert _shown_inside(w, win), w
    assert not _rect_in(panel.decision, panel).intersects(_rect_in(panel.body, panel))
    if size[1] >= 1000:  # on a laptop screen and up, every figure of the answer shows without scrolling
        assert panel.body.verticalScrollBar().maximum() == 0
    # the queue's columns are readable: the query column is not a sliver
    assert win.requests.table.columnWidth(2) >= 100
