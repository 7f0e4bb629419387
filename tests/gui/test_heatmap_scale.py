"""The heatmap's colour scale can fit the data, and over-budget cells are marked (issue 14, item 8)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from .conftest import wait_assessed, wait_released


def test_fitted_scale_and_over_budget_marks(demo_window, qtbot):
    win = demo_window
    budget = win.requests.budget
    win.requests.select_request("q01")
    wait_assessed(qtbot, win, "q01")
    qtbot.mouseClick(win.requests.answer.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    budget.preview.setChecked(False)
    heat = budget.heatmap
    assert heat.vmax == 1.0 and heat.matrix.max() < 0.1  # a small spend is nearly invisible on 0..total
    budget.fit_scale.setChecked(True)
    assert heat.vmax == heat.matrix.max() > 0
    assert not heat.over.any()
    win.requests.select_request("q34")  # ±2 at δ = 0.01: a fresh answer would pass the total
    a = wait_assessed(qtbot, win, "q34")
    assert a.budget.system_cost_after > 1.0
    budget.preview.setChecked(True)
    assert heat.over.any() and np.array_equal(heat.over, heat.matrix > 1.0)
    assert (
        heat.vmax == heat.matrix.max() > 1.0
    )  # fitted: over-budget previews no longer look like exactly 1.0
    assert "over the total budget" in budget.info.text()
    xs, _ys = heat.over_marks.getData()
    assert len(xs) == int(heat.over.sum())
