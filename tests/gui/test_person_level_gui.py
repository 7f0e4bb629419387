"""A person-level project (issue 33) on a real offscreen window: resources/examples/visits.csv, where the
rows with the same patient_id are one person and the cube keeps at most 8 of them.

The answer panel states, as the command line's previews do, how a row's α adds up to one person's loss,
with the figure: a first fresh count at α per row costs a person 8·α (all 8 rows may fall in its cell)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from .conftest import WAIT, wait_assessed, wait_released

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def open_visits(qtbot, tmp_path: Path, settings, requests, **unit):  # type: ignore[no-untyped-def]
    """The main window on a project of visits.csv (its schema's privacy unit, ``unit`` added) with
    ``requests`` queued: (query, eps, delta, alpha, id)."""
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.store import Project

    schema = json.loads((EXAMPLES / "visits.schema.json").read_text(encoding="utf-8"))
    assert schema["privacy_unit"] == {"column": "patient_id", "max_rows": 8}  # what the figures below take
    schema["privacy_unit"].update(unit)
    path = tmp_path / "visits.dpdesk"
    with Project.create(
        path,
        name="visits",
        schema=schema,
        source_location=str(EXAMPLES / "visits.csv"),
        total_budget=1.0,
        test_project=True,
    ) as p:
        for query, eps, delta, alpha, rid in requests:
            p.add_request(query, eps, delta, alpha=alpha, request_id=rid)
    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    assert win.open_project(str(path))
    qtbot.waitUntil(lambda: win.session is not None and win.session.loaded, timeout=WAIT)
    return win


@pytest.fixture
def visits_window(qtbot, tmp_path: Path, settings, dialogs):
    requests = [('count(ward="oncology")', 60.0, 0.05, None, "v1"), ("argmax(ward)", None, None, 0.01, "v2")]
    win = open_visits(qtbot, tmp_path, settings, requests)
    yield win
    win.close()


def test_the_answer_panel_states_one_persons_loss(visits_window, qtbot, dialogs) -> None:
    win = visits_window
    panel = win.requests.answer
    win.requests.select_request("v1")
    a = wait_assessed(qtbot, win, "v1")
    assert a.decision == "spend" and a.spend_alpha > 0
    note = panel.person_note
    assert note.isVisible()
    loss = 8 * a.spend_alpha  # k rows of one person in the query's cell, each paying α
    assert loss <= 1.0
    assert note.text() == (
        "Per person: ε is a row's price in each cell it charges; a person's rows add up — the system cost, "
        "one person's privacy loss, is 8 × the largest cell's (up to 8 rows in one cell): "
        f"ε = 0 now → {loss:.6g} after a fresh answer, of 1."
    )
    qtbot.mouseClick(panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    assert not dialogs.errors
    qtbot.waitUntil(lambda: panel.decision.text().startswith("ANSWERED"), timeout=WAIT)
    assert float(win.session.project.entry_for("v1").payload["alpha"]) == a.spend_alpha
    assert note.text().endswith(
        f"8 × the largest cell's (up to 8 rows in one cell): ε = {loss:.6g} now, of 1."
    )

    win.requests.select_request("v2")  # another kind: its plan, with the same line
    plan = wait_assessed(qtbot, win, "v2")
    assert note.isVisible()
    assert note.text().endswith(
        f"ε = {loss:.6g} now → {plan.budget.system_cost_after:.6g} after a fresh answer, of 1."
    )
    # argmax(ward) charges every cell; a person's 8 rows in the costliest: 8 × (α of v1 + the plan's α)
    assert plan.budget.system_cost_after == pytest.approx(8 * (a.spend_alpha + plan.rnm.alpha), rel=1e-12)


def _previewed(qtbot, win, rid: str):  # type: ignore[no-untyped-def]
    """The budget panel previewing a fresh answer to ``rid`` on ward × age (max over the quarters)."""
    budget = win.requests.budget
    budget.preview.setChecked(True)
    win.requests.select_request(rid)
    a = wait_assessed(qtbot, win, rid)
    budget.row_attr.setCurrentText("ward")
    budget.col_attr.setCurrentText("age")
    budget.mode.setCurrentIndex(budget.mode.findData("max"))
    budget.redraw()
    return a, budget


def test_the_heatmap_marks_the_cells_a_person_can_pass_the_total_through(
    qtbot, tmp_path: Path, settings, dialogs
) -> None:
    """Up to 8 rows of a person in one cell: a cell is over when 8 × its cost passes the total, though its
    own (a row's) cost does not."""
    win = open_visits(qtbot, tmp_path, settings, [('count(ward="oncology")', 6.0, 0.05, None, "h1")])
    a, budget = _previewed(qtbot, win, "h1")
    alpha = a.spend_alpha
    assert 1 / 8 < alpha < 1  # a row's cost stays within the total, a person's 8 rows do not
    assert a.decision == "reject" and a.budget.system_cost_after == pytest.approx(8 * alpha, rel=1e-12)
    wards = ["cardiology", "maternity", "oncology", "surgery"]
    expected = np.zeros((4, 4), dtype=bool)
    expected[wards.index("oncology"), :] = True  # every age of the oncology ward holds the count's cells
    heat = budget.heatmap
    np.testing.assert_array_equal(heat.over, expected)
    info = budget.info.text()
    assert (
        "✕ marks 4 cell(s) where one person's 8 rows would pass the total budget (8 × the cell's cost)."
        in info
    )
    assert "one person's 8 rows here: 0" in budget.describe(0, 0)  # nothing spent yet: the tooltip's now
    win.close()


def test_with_one_row_per_cell_the_caption_says_the_sum_passes(
    qtbot, tmp_path: Path, settings, dialogs
) -> None:
    """One row of a person per cell: a person's loss is the sum of the 8 largest cells', which no cell's
    mark can show when each cell's own cost stays within the total: the caption says it instead."""
    win = open_visits(
        qtbot, tmp_path, settings, [('count(ward="oncology")', 6.0, 0.05, None, "h1")], one_row_per="cell"
    )
    a, budget = _previewed(qtbot, win, "h1")
    alpha = a.spend_alpha
    assert 1 / 8 < alpha < 1
    # the count charges the 4 × 4 oncology cells α each: the 8 largest add up to 8α
    assert a.budget.system_cost_after == pytest.approx(8 * alpha, rel=1e-12)
    assert not budget.heatmap.over.any()
    info = budget.info.text()
    assert "✕ marks" not in info
    assert (
        "One person's loss, the sum of the 8 largest cells' (one row per cell), passes the total budget: a "
        "person's rows add up across cells, which no single cell's mark shows." in info
    )
    assert "rows here" not in budget.describe(0, 0)
    win.close()
