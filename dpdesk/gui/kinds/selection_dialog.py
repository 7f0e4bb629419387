"""*Max / argmax…*: price a private max or argmax, see its output probabilities (private), release one label.

The curator types ``max(age | sex="Female")`` or ``argmax(education)`` and a price (a per-cell α on the
box, or an accuracy target). *Preview* prices it from public inputs (the ledger's per-cell costs, the
total budget — :func:`~dpdesk.engine.selection.plan.plan_selection`) and, off the GUI thread,
computes the mechanism's exact output probabilities from the data for the curator's eyes only: the
chart (:class:`~dpdesk.gui.widgets.selection_chart.SelectionChart`) carries the PRIVATE badge; the public
accuracy statement below it is what a requester may be told. *Release…* asks for confirmation and
records exactly the previewed plan through the release path (refused if the ledger moved meanwhile);
the released label is shown, and outlined in the chart, only after it is recorded.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from dpdesk.gui import dialogs
from dpdesk.gui.dialogs.spend_dialog import spend_text
from dpdesk.gui.runtime.session import ProjectSession
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.examples import selection_example
from dpdesk.gui.widgets.release_buttons import release_buttons
from dpdesk.gui.widgets.screen_fit import keep_on_screen, scrolling
from dpdesk.gui.widgets.selection_chart import SelectionChart
from dpdesk.gui.widgets.wheel_guard import guard_wheel


class SelectionDialog(QDialog):
    """Preview and release a private max/argmax of the session's project."""

    def __init__(self, session: ProjectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Private max / argmax")
        self.session = session
        self.plan: Any = None  # the previewed SelectionPlan (None: inputs changed since)
        self.released: Any = None
        self.runner = TaskRunner(self)
        form = QFormLayout()
        self.query = QLineEdit()
        self.query.setPlaceholderText(selection_example(session.schema))
        form.addRow("Query", self.query)
        self.by_alpha = QRadioButton("per-cell budget α")
        self.by_accuracy = QRadioButton("accuracy target T")
        self.by_alpha.setChecked(True)
        self.by_accuracy.setToolTip(
            "argmax: the released label's count within T of the largest; "
            "max: at most T records of the box above the released value"
        )
        group = QButtonGroup(self)
        group.addButton(self.by_alpha)
        group.addButton(self.by_accuracy)
        self.alpha = QDoubleSpinBox(
            decimals=4, minimum=0.0001, maximum=1e6, value=min(0.1, session.total_budget)
        )
        self.accuracy = QDoubleSpinBox(decimals=2, minimum=0.01, maximum=1e12, value=10.0)
        self.delta = QDoubleSpinBox(decimals=4, minimum=0.0001, maximum=0.5, value=0.05, singleStep=0.01)
        price = QHBoxLayout()
        for w in (
            self.by_alpha,
            self.alpha,
            self.by_accuracy,
            self.accuracy,
            QLabel("at 1 − δ, δ ="),
            self.delta,
        ):
            price.addWidget(w)
        form.addRow("Price", price)
        self.result = QLabel("Preview to see the cost, the public accuracy and the output probabilities.")
        self.result.setWordWrap(True)
        self.chart = SelectionChart()
        self.chart.setMinimumHeight(220)
        buttons, self.preview_button, self.release_button = release_buttons(
            self, "Release…", self.run_preview, self.release
        )
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(scrolling(self.result, 60))  # a long preview scrolls, the chart keeps its height
        lay.addWidget(self.chart, 1)
        lay.addLayout(buttons)
        keep_on_screen(self)
        guard_wheel(self)  # the form scrolls: the wheel never changes a price it passes over
        self.query.textChanged.connect(self._inputs_changed)
        for w in (self.alpha, self.accuracy, self.delta):
            w.valueChanged.connect(self._inputs_changed)
        self.by_alpha.toggled.connect(self._inputs_changed)
        self._inputs_changed()

    def _inputs_changed(self, *_: Any) -> None:
        self.alpha.setEnabled(self.by_alpha.isChecked())
        self.accuracy.setEnabled(self.by_accuracy.isChecked())
        self.plan = None  # a preview describes exactly the inputs it was made from
        self.release_button.setEnabled(False)

    # -- preview ----------------------------------------------------------------------------------
    def run_preview(self) -> None:
        from dpdesk.engine.errors import DpdeskError
        from dpdesk.engine.kinds.base import AdHoc

        s = self.session
        by_alpha = self.by_alpha.isChecked()
        asked = AdHoc(
            "selection",
            self.query.text(),
            eps=None if by_alpha else self.accuracy.value(),
            delta=self.delta.value(),
            alpha=self.alpha.value() if by_alpha else None,
        )
        try:
            plan = s.plan(asked)  # the one assess function; the data is read by the job, off the GUI thread
        except DpdeskError as exc:
            self.result.setText(f"<span style='color:#c0392b'>{exc}</span>")
            return
        from dpdesk.gui.kinds.kind_views import SelectionView

        probabilities = SelectionView.private(plan, s.schema)  # the data is read on a worker, not here
        job = s.state.with_sibling(lambda sibling: (plan, probabilities(sibling)))
        self.result.setText("Computing the output probabilities…")
        self.preview_button.setEnabled(False)
        self.runner.start(job, self._show, self._failed, label="max/argmax preview")

    def _show(self, result: Any) -> None:
        plan, probabilities = result
        self.preview_button.setEnabled(True)
        schema = self.session.schema
        b = plan.budget
        fits = "" if plan.releasable else " <b style='color:#c0392b'>— does not fit the total budget</b>"
        self.result.setText(
            f"<b>{plan.rnm.query.text}</b>: every cell of the box pays α = {plan.rnm.alpha:.4g}; "
            f"system cost {b.system_cost:.4g} now → {b.system_cost_after:.4g} after, of {b.total:g}{fits}."
        )
        labels = plan.rnm.query.candidates(schema)
        self.chart.set_selection(
            labels,
            probabilities,
            plan.rnm.accuracy_text(schema, plan.delta),
            title=f"Output probabilities of {plan.rnm.query.text}",
        )
        self.plan = plan
        self.release_button.setEnabled(plan.releasable)

    def _failed(self, exc: BaseException, trace: str) -> None:
        self.preview_button.setEnabled(True)
        self.result.setText(f"<span style='color:#c0392b'>{dialogs.explain(exc)[1].split(chr(10))[0]}</span>")

    # -- release ----------------------------------------------------------------------------------
    def release(self) -> None:
        plan = self.plan
        if plan is None or not plan.releasable:
            return
        b = plan.budget
        heading, body = spend_text(
            f"one label for {plan.rnm.query.text}",
            f"α = {plan.rnm.alpha:.4g} on every cell of its box",
            b.system_cost,
            b.system_cost_after,
            b.total,
        )
        if not dialogs.confirm_spend(self, heading, body):
            return
        self.release_button.setEnabled(False)
        self.preview_button.setEnabled(False)
        self.result.setText("Releasing…")
        self.runner.start(
            self.session.release_job(plan), self._released, self._release_failed, label="releasing a label"
        )

    def _released(self, release: Any) -> None:
        self.session.released()
        self.released = release
        p = release.entry.payload
        self.chart.mark_released(int(p["index"]))
        self.result.setText(
            f"Released: <b>{p['label']}</b> (ledger entry #{release.entry.seq}; witness "
            f"{release.witness[:16]}…). Tell the requester the label and the public accuracy."
        )
        self.plan = None
        self.preview_button.setEnabled(True)

    def _release_failed(self, exc: BaseException, trace: str) -> None:
        self.session.released()  # the views redraw from the ledger as it is
        self.plan = None
        self.preview_button.setEnabled(True)
        self.result.setText(
            f"<span style='color:#c0392b'>Not released: {dialogs.explain(exc)[1].split(chr(10))[0]}</span>"
        )

    def done(self, result: int) -> None:
        self.runner.shutdown()
        super().done(result)
