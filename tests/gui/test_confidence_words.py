"""Issue 34 item 9 in the app: a request's confidence is typed and shown as a percentage (95 %), while
the request keeps its miss probability δ = 1 − confidence; a request queued from the dialog is the one
the command line's --confidence (or the former --delta) queues."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QFormLayout

from dpdesk.gui.dialogs.query_builder import QueryBuilderDialog


def test_the_request_dialog_takes_a_confidence_in_percent_and_queues_its_exact_delta(demo_window, qtbot):
    win = demo_window
    queued = []
    dlg = QueryBuilderDialog(win.session.schema, submit=lambda *v: queued.append(v) or v)
    qtbot.addWidget(dlg)
    form = next(lay for lay in dlg.findChildren(QFormLayout))
    assert form.labelForField(dlg.delta).text() == "confidence" and dlg.delta.text() == "95 %"
    assert form.labelForField(dlg.eps).text() == "accuracy ±a (half-width)"
    dlg.text.setText('count(sex="Female")')
    dlg.eps.setValue(25.0)
    dlg.delta.lineEdit().selectAll()
    qtbot.keyClicks(dlg.delta.lineEdit(), "99.9")
    dlg.delta.interpretText()
    assert dlg.delta.text() == "99.9 %"
    qtbot.mouseClick(dlg.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    (values,) = queued
    assert values[1:3] == (25.0, 0.001)  # exactly the δ that --confidence 0.999 or --delta 0.001 stores
    # the arrows raise and lower the confidence; an edited request shows its stored δ as a confidence
    dlg.set_values('count(sex="Female")', 25.0, 0.05, "")
    dlg.delta.stepUp()
    assert dlg.delta.text() == "96 %" and abs(dlg.delta.value() - 0.04) < 1e-12
    dlg.set_values('count(sex="Female")', 25.0, 0.2, "")
    assert dlg.delta.text() == "80 %"


def test_the_queue_shows_each_accuracy_as_plus_minus_a_at_a_percentage(demo_window):
    from dpdesk.gui.widgets.models import REQUEST_HEADERS

    model = demo_window.requests.model
    col = {h: i for i, h in enumerate(REQUEST_HEADERS)}
    assert "α" not in "".join(REQUEST_HEADERS) and "δ" not in "".join(REQUEST_HEADERS)
    tip = model.headerData(col["%"], Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert "confidence" in tip and "95 %" in tip
    shown = {
        model.index(r, col["id"]).data(): (model.index(r, col["±a"]).data(), model.index(r, col["%"]).data())
        for r in range(model.rowCount())
    }
    assert shown["q34"] == ("2", "99")  # the demo's request asking ±2 with a miss probability of 0.01
    # sorted by the confidence, as a number
    assert model.index(0, col["%"]).data(Qt.ItemDataRole.UserRole) in (95.0, 99.0, 90.0, 80.0)
