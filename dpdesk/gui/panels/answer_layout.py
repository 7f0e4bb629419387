"""The answer panel's rows, built once: the request's title and the posterior's method and prior controls,
an assessment's progress bar, the decision row and the scrolling figures. Each takes the panel
(:class:`~dpdesk.gui.panels.answer_panel.AnswerPanel`) and sets its widgets on it."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.mechanisms.registry import method_names
from dpdesk.gui.panels.assessment_text import FIELDS
from dpdesk.gui.widgets.glossary import tip
from dpdesk.gui.widgets.progress import set_progress

__all__ = ["BUSY_DELAY_MS", "decision_row", "evidence", "header", "progress_bar"]

BUSY_DELAY_MS = 250  # an assessment's progress bar appears after this long (quick ones never show it)

# the answer panel (typed loosely: it imports this module, and modules of a package form no cycle)
AnswerPanel = Any


def header(panel: AnswerPanel) -> QHBoxLayout:
    """The request's title, the whole width (the posterior's method and prior are in its figures)."""
    top = QHBoxLayout()
    panel.title = QLabel("Select a request")
    panel.title.setStyleSheet("font-weight: bold; font-size: 13px;")
    panel.title.setWordWrap(True)
    top.addWidget(panel.title, 1)
    panel.method = QComboBox()
    panel.method.addItems(method_names())
    panel.method.setToolTip(tip(*method_names()))
    panel.method.currentTextChanged.connect(lambda _m: panel.refresh())
    panel.prior_btn = QPushButton("Known bounds…")
    panel.prior_btn.setToolTip("Declare a public table size: released intervals are trimmed to 0 … N")
    panel.prior_btn.clicked.connect(panel.edit_prior)
    return top


def progress_bar(panel: AnswerPanel) -> QHBoxLayout:
    """An assessment's progress with Cancel; a confirmed release's (the first one scans the table)
    without."""
    prog = QHBoxLayout()
    panel.progress = QProgressBar()
    panel.progress.setRange(0, 1000)
    panel.progress.setMaximumHeight(14)
    panel.cancel_btn = QPushButton("Cancel")
    panel.cancel_btn.clicked.connect(panel.runner.cancel)
    prog.addWidget(panel.progress, 1)
    prog.addWidget(panel.cancel_btn)
    panel._progress_row = [panel.progress, panel.cancel_btn]
    panel.runner.sigProgress.connect(lambda f: set_progress(panel.progress, int(1000 * f)))
    # an assessment shows its progress only once it takes a while: a quick one never repaints the
    # window for a bar (a progress bar repaints at once on every value), e.g. right after a release
    panel._busy_later = QTimer(panel)
    panel._busy_later.setSingleShot(True)
    panel._busy_later.setInterval(BUSY_DELAY_MS)
    panel._busy_later.timeout.connect(lambda: panel._busy(panel.runner.is_running()))
    panel.runner.sigStarted.connect(lambda _l: panel._busy_later.start())
    panel.runner.sigFinished.connect(lambda: (panel._busy_later.stop(), panel._busy(False)))
    panel.release_runner.sigProgress.connect(lambda f: set_progress(panel.progress, int(1000 * f)))
    panel.release_runner.sigStarted.connect(
        lambda _l: (panel.progress.setVisible(True), panel.cancel_btn.setVisible(False))
    )
    panel.release_runner.sigFinished.connect(lambda: panel._busy(False))
    return prog


def decision_row(panel: AnswerPanel) -> QHBoxLayout:
    panel.decision = QLabel("")
    panel.decision.setObjectName("decisionLabel")
    panel.reason = QLabel("")
    panel.reason.setWordWrap(True)
    panel.reason.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    dec = QHBoxLayout()
    dec.addWidget(panel.decision)
    dec.addWidget(panel.reason, 1)
    return dec


def evidence(panel: AnswerPanel) -> QScrollArea:
    """The assessment's figures, field by field, in a scrolling area."""
    body = QWidget()
    body_lay = QVBoxLayout(body)
    body_lay.setContentsMargins(0, 0, 0, 0)
    panel.body = QScrollArea()
    panel.body.setWidgetResizable(True)
    panel.body.setFrameShape(QFrame.Shape.NoFrame)
    panel.body.setWidget(body)
    panel.body.setMinimumHeight(90)
    form = QFormLayout()
    panel.form = form
    panel._controls = {"prior": ("", panel.prior_btn), "method": ("Compute with", panel.method)}
    panel.fields: dict[str, QLabel] = {}
    panel.field_labels: dict[str, str] = {}
    for key, label, terms in FIELDS:
        panel.fields[key] = QLabel("—")
        panel.fields[key].setWordWrap(True)  # long reasons wrap instead of widening the window
        panel.fields[key].setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(label, panel.fields[key])
        panel.field_labels[key] = label
        if terms:
            form.labelForField(panel.fields[key]).setToolTip(tip(*terms))
        if key in panel._controls:  # what sets the field, on the row under it (not in the title's row)
            row = QHBoxLayout()
            row.addWidget(panel._controls[key][1])
            row.addStretch(1)
            form.addRow(panel._controls[key][0], row)
    body_lay.addLayout(form)
    return panel.body
