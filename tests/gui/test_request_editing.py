"""New request validated in place; edit and delete pending requests (issue 14)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from dpdesk.gui.query_builder import QueryBuilderDialog


def drive_modal(qtbot, steps):
    """Run ``steps(dialog)`` once the next modal dialog is up (exec() blocks the test until it closes)."""
    seen = {}

    def poll():
        dlg = QApplication.activeModalWidget()
        if isinstance(dlg, QueryBuilderDialog):
            seen["dialog"] = dlg
            steps(dlg)
        else:
            QTimer.singleShot(20, poll)

    QTimer.singleShot(0, poll)
    return seen


def test_invalid_new_request_is_explained_in_place_and_nothing_typed_is_lost(demo_window, qtbot):
    win = demo_window
    page = win.requests
    before = len(win.session.requests())
    notes = {}

    def steps(dlg):
        ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
        dlg.text.setText('count(sex="Female", income=">50K")')
        dlg.eps.setValue(0.0)
        dlg.requester.setText("health-office")
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
        notes["open_after_zero"] = dlg.isVisible()
        notes["status"] = dlg.status.text()
        notes["text_kept"] = dlg.text.text()
        notes["queued"] = len(win.session.requests())
        dlg.eps.setValue(40.0)
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)

    drive_modal(qtbot, steps)
    qtbot.mouseClick(page.new_btn, Qt.MouseButton.LeftButton)
    assert notes["open_after_zero"] and notes["queued"] == before
    assert notes["status"].startswith("✗") and "eps" in notes["status"] and "positive" in notes["status"]
    assert notes["text_kept"] == 'count(sex="Female", income=">50K")'
    reqs = win.session.requests()
    assert len(reqs) == before + 1
    new = reqs[-1]
    assert (new.eps, new.requester, new.status) == (40.0, "health-office", "pending")
    assert page.answer.request_id == new.id  # the new request is selected
