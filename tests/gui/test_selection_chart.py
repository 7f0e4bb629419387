"""The private bar chart of a max/argmax's output probabilities, on a real offscreen widget."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.mechanisms.selection import ReportNoisyMax
from dpdesk.engine.queries.selection import parse_selection
from dpdesk.engine.schema import Schema


def test_chart_shows_exact_probabilities_marked_private_and_the_public_accuracy(qtbot, tmp_path):
    from dpdesk.gui.selection_chart import SelectionChart

    schema = Schema.from_dict({"attributes": [
        {"name": "age", "column": "age", "kind": "numeric", "edges": list(range(0, 101, 10))},
        {"name": "sex", "column": "sex", "kind": "categorical", "values": ["Female", "Male"]}]})
    counts = np.zeros(schema.shape, int)
    counts[:7, :] = np.arange(14).reshape(7, 2) + 3
    mech = ReportNoisyMax(parse_selection('max(age | sex="Male")', schema), 1.5)
    p = mech.probabilities(counts, schema)
    w = SelectionChart()
    qtbot.addWidget(w)
    w.resize(640, 360)
    w.show()
    w.set_selection(schema.attribute("age").labels, p, mech.accuracy_text(schema, 0.05), title="max(age | sex=\"Male\")")
    assert w.badge.text() == "PRIVATE" and w.badge.isVisible()
    assert "only one draw is released" in w.note.text()
    assert w.accuracy.text().startswith("Public accuracy: with probability ≥ 0.95, at most")
    heights = w._bars.opts["height"]
    assert np.allclose(heights, p) and abs(sum(heights) - 1) < 1e-12
    w.mark_released(6)
    assert w.title.text().endswith("released: 60-70") and w._drawn is not None
    w.grab().save(str(tmp_path / "selection_chart.png"))
    with pytest.raises(ValueError):
        w.mark_released(10)
    with pytest.raises(ValueError):
        w.set_selection(["a"], np.array([0.5, 0.5]), "x")
