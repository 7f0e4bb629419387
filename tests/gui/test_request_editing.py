"""New request validated in place; edit and delete pending requests (issue 14)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from dpdesk.gui.dialogs.query_builder import QueryBuilderDialog


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


def test_edit_and_delete_pending_requests_only(demo_window, qtbot, dialogs):
    from dpdesk.store.errors import RequestStateError

    from .conftest import wait_assessed, wait_released

    win = demo_window
    page = win.requests
    page.select_request("q05")
    wait_assessed(qtbot, win, "q05")
    assert page.edit_btn.isEnabled() and page.delete_btn.isEnabled()
    seen = {}

    def steps(dlg):
        seen["title"], seen["text"], seen["eps"] = dlg.windowTitle(), dlg.text.text(), dlg.eps.value()
        dlg.text.setText('count(income=">50K", sex="Female")')
        dlg.eps.setValue(0.0)
        ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
        seen["refused"] = dlg.isVisible() and "positive" in dlg.status.text()
        dlg.eps.setValue(25.0)
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)

    before = win.session.request("q05")
    drive_modal(qtbot, steps)
    qtbot.mouseClick(page.edit_btn, Qt.MouseButton.LeftButton)
    assert (
        seen["title"] == "Edit request q05"
        and seen["text"] == before.query_text
        and seen["eps"] == before.eps
    )
    assert seen["refused"]
    after = win.session.request("q05")
    assert (after.query_text, after.eps, after.status) == (
        'count(income=">50K", sex="Female")',
        25.0,
        "pending",
    )
    assert after.position == before.position and win.session.ledger() == []
    wait_assessed(qtbot, win, "q05")
    # delete: confirmed, gone from the queue and the store
    n = page.model.rowCount()
    win.menu_actions["delete_request"].trigger()
    assert dialogs.confirms[-1][0] == "Delete request"
    assert page.model.rowCount() == n - 1 and "q05" not in [r.id for r in win.session.requests()]
    # an answered request can be neither edited nor deleted
    page.select_request("q01")
    wait_assessed(qtbot, win, "q01")
    qtbot.mouseClick(page.answer.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    page.select_request("q01")
    assert not page.edit_btn.isEnabled() and not page.delete_btn.isEnabled()
    for change in (
        lambda: win.session.project.delete_request("q01"),
        lambda: win.session.project.edit_request("q01", 'count(sex="Male")', 5, 0.05),
    ):
        try:
            change()
        except RequestStateError as exc:
            assert "is answered: only a pending request" in str(exc)
        else:
            raise AssertionError("an answered request changed")
    assert win.session.request("q01").status == "answered"


def test_an_index_list_request_without_a_text_form_is_edited_keeping_its_query(demo_window, qtbot, tmp_path):
    """Cells 0, 7 and 300 form no box of labels: the editor names them, keeps the query while ε, δ and the
    requester change, and a typed text form replaces it."""
    from .conftest import wait_assessed

    win = demo_window
    page = win.requests
    cells = {"indices": [0, 7, 300], "values": [1, 1, 1]}
    new = win.session.add_request(cells, 20.0, 0.05, "")
    page.select_request(new.id)
    wait_assessed(qtbot, win, new.id)
    seen = {}

    def keep(dlg):
        try:
            ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
            seen["note"], seen["text"], seen["ok"] = dlg.kept_note.text(), dlg.text.text(), ok.isEnabled()
            seen["visible"] = dlg.kept_note.isVisible()
            dlg.grab().save(str(tmp_path / "edit-index-list.png"))
            dlg.text.setText("count(")  # a bad replacement is refused in place …
            seen["bad"] = (ok.isEnabled(), dlg.status.text())
            dlg.text.setText("")  # … and clearing it keeps the recorded query again
            dlg.eps.setValue(35.0)
            dlg.requester.setText("audit-office")
            qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
        finally:
            if dlg.isVisible():  # the editor refused: close it so the test fails instead of waiting
                dlg.reject()

    drive_modal(qtbot, keep)
    qtbot.mouseClick(page.edit_btn, Qt.MouseButton.LeftButton)
    assert seen["visible"] and seen["text"] == "" and seen["ok"]
    assert "index list with no text form" in seen["note"] and "weight 1 on 3 cells" in seen["note"]
    assert seen["bad"][0] is False and seen["bad"][1].startswith("✗")
    after = win.session.request(new.id)
    assert after.query_text is None and after.query.to_json() == cells
    assert (after.eps, after.requester, after.status) == (35.0, "audit-office", "pending")

    def replace(dlg):
        dlg.text.setText('count(sex="Male")')
        qtbot.mouseClick(dlg.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
        if dlg.isVisible():
            dlg.reject()

    wait_assessed(qtbot, win, new.id)
    drive_modal(qtbot, replace)
    qtbot.mouseClick(page.edit_btn, Qt.MouseButton.LeftButton)
    after = win.session.request(new.id)
    assert after.query_text == 'count(sex="Male")' and after.eps == 35.0
