"""The audit cost curve holds its last level with whole-number ticks; the report's plots are readable."""

from __future__ import annotations

import base64
import re
import struct

import pyqtgraph as pg
from PySide6.QtCore import Qt

from .conftest import WAIT, wait_assessed, wait_released


def test_cost_curve_holds_its_last_level_and_report_plots_are_large(
    demo_window, qtbot, monkeypatch, tmp_path
):
    from dpdesk.gui.pages import audit_page

    win = demo_window
    win.resize(1024, 700)
    for rid in ("q01", "q04", "q06"):
        win.requests.select_request(rid)
        wait_assessed(qtbot, win, rid)
        qtbot.mouseClick(win.requests.answer.spend_btn, Qt.MouseButton.LeftButton)
        wait_released(qtbot, win)
    audit = win.audit
    win.show_page("audit")  # a hidden page draws its curve when the curator opens it
    line = next(i for i in audit.plot.listDataItems() if isinstance(i, pg.PlotDataItem))
    xs, ys = line.getData()
    final = audit.curve[-1][1]
    assert ys[-1] == final > 0 and xs[-1] > audit.curve[-1][0]  # no drop to 0 after the last entry
    assert all(y2 >= y1 for y1, y2 in zip(ys, ys[1:]))  # costs only grow
    axis = audit.plot.getAxis("bottom")
    for spacing, offset in axis.tickSpacing(0, audit.curve[-1][0], axis.width()):
        assert float(spacing).is_integer() and float(offset).is_integer()
    html_path = tmp_path / "report.html"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(html_path))
    qtbot.mouseClick(audit.html_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not audit.exporting(), timeout=WAIT)  # written on a worker
    pngs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html_path.read_text(encoding="utf-8"))
    widths = [struct.unpack(">II", base64.b64decode(p)[16:24])[0] for p in pngs]
    assert len(widths) == 2 and min(widths) >= 900
