"""A person-level project (issue 33) on a real offscreen window: resources/examples/visits.csv, where the
rows with the same patient_id are one person and the cube keeps at most 8 of them.

The answer panel states, as the command line's previews do, how a row's α adds up to one person's loss,
with the figure: a first fresh count at α per row costs a person 8·α (all 8 rows may fall in its cell)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from .conftest import WAIT, wait_assessed, wait_released

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


@pytest.fixture
def visits_window(qtbot, tmp_path: Path, settings, dialogs):
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.store import Project

    schema = json.loads((EXAMPLES / "visits.schema.json").read_text(encoding="utf-8"))
    assert schema["privacy_unit"] == {"column": "patient_id", "max_rows": 8}  # what the figures below take
    path = tmp_path / "visits.dpdesk"
    with Project.create(
        path,
        name="visits",
        schema=schema,
        source_location=str(EXAMPLES / "visits.csv"),
        total_budget=1.0,
        test_project=True,
    ) as p:
        p.add_request('count(ward="oncology")', 60.0, 0.05, request_id="v1")
        p.add_request("argmax(ward)", alpha=0.01, request_id="v2")
    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    assert win.open_project(str(path))
    qtbot.waitUntil(lambda: win.session is not None and win.session.loaded, timeout=WAIT)
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
