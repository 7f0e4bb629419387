"""The private bar chart of a max/argmax's output probabilities, on a real offscreen widget."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.schema import Schema
from dpdesk.engine.selection.mechanism import ReportNoisyMax
from dpdesk.engine.selection.query import parse_selection

from .conftest import WAIT


def test_chart_shows_exact_probabilities_marked_private_and_the_public_accuracy(qtbot, tmp_path):
    from dpdesk.gui.widgets.selection_chart import SelectionChart

    schema = Schema.from_dict(
        {
            "attributes": [
                {"name": "age", "column": "age", "kind": "numeric", "edges": list(range(0, 101, 10))},
                {"name": "sex", "column": "sex", "kind": "categorical", "values": ["Female", "Male"]},
            ]
        }
    )
    counts = np.zeros(schema.shape, int)
    counts[:7, :] = np.arange(14).reshape(7, 2) + 3
    mech = ReportNoisyMax(parse_selection('max(age | sex="Male")', schema), 1.5)
    p = mech.probabilities(counts, schema)
    w = SelectionChart()
    qtbot.addWidget(w)
    w.resize(640, 360)
    w.show()
    w.set_selection(
        schema.attribute("age").labels, p, mech.accuracy_text(schema, 0.05), title='max(age | sex="Male")'
    )
    assert w.badge.text() == "PRIVATE" and w.badge.isVisible()
    assert "only one draw is released" in w.note.text()
    assert (
        w.accuracy.text().startswith("Public accuracy: at most") and "at 95 % confidence" in w.accuracy.text()
    )
    heights = w._bars.opts["height"]
    assert np.allclose(heights, p) and abs(sum(heights) - 1) < 1e-12
    w.mark_released(6)
    assert w.title.text().endswith("released: 60-70") and w._drawn is not None
    w.grab().save(str(tmp_path / "selection_chart.png"))
    with pytest.raises(ValueError):
        w.mark_released(10)
    with pytest.raises(ValueError):
        w.set_selection(["a"], np.array([0.5, 0.5]), "x")


def test_max_argmax_dialog_previews_privately_then_releases_one_recorded_label(
    qtbot, demo_window, dialogs, tmp_path
):
    """From the budget panel: priced from public inputs, probabilities from the data (PRIVATE), one label
    released through the release path and outlined only after it is recorded."""
    win = demo_window
    d = win.requests.budget.release_selection()
    qtbot.waitUntil(d.isVisible, timeout=WAIT)
    d.query.setText("argmax(height)")
    d.run_preview()
    assert "unknown attribute 'height'" in d.result.text() and d.plan is None
    schema = win.session.schema
    attr = next(a for a in schema.attributes if a.kind != "numeric")
    d.query.setText(f"argmax({attr.name})")
    d.alpha.setValue(0.05)
    d.run_preview()
    qtbot.waitUntil(lambda: d.plan is not None, timeout=WAIT)
    chart = d.chart
    assert chart.labels == attr.labels and abs(chart.probabilities.sum() - 1) < 1e-9
    assert chart.badge.isVisible() and "only one draw is released" in chart.note.text()
    assert "released label's count is within" in chart.accuracy.text()
    assert d.release_button.isEnabled() and "ε = 0.05" in d.result.text()
    before = len(win.session.ledger())
    d.grab().save(str(tmp_path / "selection_dialog.png"))
    d.release_button.click()
    qtbot.waitUntil(lambda: d.released is not None or "Not released" in d.result.text(), timeout=WAIT)
    entry = win.session.ledger()[-1]
    assert len(win.session.ledger()) == before + 1 and entry.kind == "selection"
    assert f"Released: <b>{entry.payload['label']}</b>" in d.result.text()
    assert chart.title.text().endswith(f"released: {entry.payload['label']}") and dialogs.confirms
    assert win.session.verify().ok
