"""*Zero-cost estimate…*: a biased kernel-PCA estimate of a query from the released answers (issue 17, seed §3).

For a query history cannot answer (or only poorly), the curator previews the shrinkage estimate: its
value at the τ chosen by 5-fold cross-validation (or given), the cross-validation curve — the estimated
root-mean-square error over queries like the history's, with its noise floor — and the history's own
unbiased estimate when there is one. It is **biased**, meets no (ε, δ) and is labelled so. *Preview*
runs off the GUI thread (progress, cancel) on the ledger inputs of that moment (``inputs(text)``, read
on the GUI thread); *Record…* asks for confirmation and records exactly the previewed plan through the
project's one release path (a zero-cost ledger entry); without a ``release_job`` it emits ``sigRecord``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dpdesk.gui import dialogs
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.examples import count_example
from dpdesk.gui.widgets.plots import show_axes, show_empty
from dpdesk.gui.widgets.progress import set_progress
from dpdesk.gui.widgets.screen_fit import keep_on_screen

if TYPE_CHECKING:
    from dpdesk.engine.estimates.plans import EstimatePlan
    from dpdesk.engine.mechanisms.base import ReleasePlan
    from dpdesk.gui.model.state import Job
    from dpdesk.store.release import Release


def _red(text: str) -> str:
    return f"<span style='color:#c0392b'>{html.escape(text)}</span>"


class EstimateDialog(QDialog):
    """Preview and record a zero-cost estimate.

    ``inputs(text)`` returns ``(HistoryInputs, query, unbiased)`` for the query text now (see
    :func:`dpdesk.store.estimating.query_inputs`); ``release_job(plan)`` the work that records a plan;
    ``released()`` runs on the GUI thread after recording, whatever the outcome.
    """

    sigRecord = Signal(object)  # the confirmed plan (when there is no release_job)

    def __init__(
        self,
        inputs: Callable[[str], Any],
        *,
        text: str = "",
        release_job: Callable[[ReleasePlan], Job[Release]] | None = None,
        released: Callable[[], None] | None = None,
        parent: QWidget | None = None,
        schema: Any = None,
    ) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle("Zero-cost estimate (biased)")
        self.resize(680, 620)
        self.inputs, self.release_job, self.released_hook = inputs, release_job, released
        self.plan: EstimatePlan | None = None
        self.release: Release | None = None
        self.runner = TaskRunner(self)
        self.record_runner = TaskRunner(self)
        form = QFormLayout()
        self.query = QLineEdit(text)
        example = count_example(schema) if schema is not None else 'count(attribute="label")'
        self.query.setPlaceholderText(f"a count query, e.g. {example}")
        self.by_cv = QCheckBox("choose τ by 5-fold cross-validation")
        self.by_cv.setChecked(True)
        self.tau = QDoubleSpinBox()
        self.tau.setDecimals(3)
        self.tau.setRange(0.001, 1e12)
        self.tau.setValue(100.0)
        self.tau.setToolTip(
            "The shrinkage trade-off τ (not a privacy budget): large trusts the released answers, "
            "small the prior p0; ∞ is the unbiased estimate"
        )
        row = QHBoxLayout()
        row.addWidget(self.by_cv)
        row.addWidget(self.tau)
        form.addRow("query", self.query)
        form.addRow("shrinkage τ", row)
        self.result = QTextBrowser()
        self.plot = pg.PlotWidget(background="w")
        self.plot.setLabel("bottom", "shrinkage τ (log)")
        # the curve chooses τ: it is the error over the history's own rows, not this estimate's error
        self.plot.setLabel("left", "CV error over the released rows")
        self.plot.setTitle("choosing τ (not this estimate's error)", size="9pt")
        self.plot.setLogMode(x=True, y=False)
        self.plot.setMinimumHeight(180)
        show_empty(self.plot, "Preview with τ by cross-validation to see\nhow τ was chosen")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.preview_button = QPushButton("Preview")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.record_button = QPushButton("Record…")
        self.record_button.setEnabled(False)
        self.record_button.setToolTip(
            "Record this estimate in the ledger (free: post-processing of released answers)"
        )
        buttons = QHBoxLayout()
        for b in (self.preview_button, self.cancel_button, self.record_button):
            buttons.addWidget(b)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.result, 1)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.progress)
        lay.addLayout(buttons)
        self.runner.sigProgress.connect(lambda f: set_progress(self.progress, int(1000 * f)))
        self.runner.sigFinished.connect(self._idle)
        self.query.textChanged.connect(self._inputs_changed)
        self.tau.valueChanged.connect(self._inputs_changed)
        self.by_cv.toggled.connect(self._inputs_changed)
        self.preview_button.clicked.connect(self.run_preview)
        self.cancel_button.clicked.connect(self.runner.cancel)
        self.record_button.clicked.connect(self.confirm_record)
        self._inputs_changed()

    def _inputs_changed(self, *_: object) -> None:
        self.tau.setEnabled(not self.by_cv.isChecked())
        self.plan = None  # a preview describes exactly the inputs it was made from
        self.record_button.setEnabled(False)

    def _idle(self) -> None:
        self.preview_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

    def run_preview(self) -> None:
        from dpdesk.engine.estimates.plans import plan_estimate

        try:
            inputs, query, unbiased = self.inputs(self.query.text())  # the ledger as it is now (GUI thread)
        except Exception as exc:
            self.result.setHtml(_red(dialogs.explain(exc)[1]))
            return
        tau = None if self.by_cv.isChecked() else self.tau.value()
        self.result.setText(
            "Cross-validating the shrinkage on the released answers…"
            if tau is None
            else "Computing the estimate…"
        )
        self.plot.clear()
        self.preview_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        text = self.query.text().strip()
        self.runner.start(
            lambda st: plan_estimate(
                inputs, query, unbiased, text=text, tau=tau, progress=st.progress, cancelled=st.cancelled
            ),
            self._show,
            self._failed,
            label="zero-cost estimate",
        )

    def _failed(self, exc: BaseException, trace: str) -> None:
        self.result.setHtml(_red(dialogs.explain(exc)[1]))

    def _show(self, plan: EstimatePlan) -> None:
        self.plan = plan
        lines = [
            f"<b>{html.escape(x)}</b>"
            if x.startswith(("estimate ", "error: ", "NO ERROR BOUND"))
            else html.escape(x)
            for x in plan.lines()
        ]
        self.result.setHtml("<br>".join(lines))
        cv = plan.cv
        if cv is None:
            show_empty(self.plot, "τ was given: no cross-validation to show")
        else:
            self.plot.clear()
            show_axes(self.plot)
            ok = np.isfinite(cv.taus) & np.isfinite(cv.mse)
            self.plot.plot(
                cv.taus[ok], cv.rmse[ok], pen=pg.mkPen("#2c7fb8", width=2), symbol="o", symbolSize=5
            )
            self.plot.addLine(y=cv.resolution, pen=pg.mkPen("#999999", style=pg.QtCore.Qt.PenStyle.DashLine))
            self.plot.addLine(x=math.log10(cv.best_tau), pen=pg.mkPen("#c0392b"))
        self.record_button.setEnabled(not self.record_runner.is_running())

    def confirm_record(self) -> None:
        plan = self.plan
        if plan is None or not dialogs.confirm(
            self,
            "Record estimate",
            f"Record the biased estimate {plan.value:.6g} of {plan.text} in the ledger? "
            "It is free (post-processing) and meets no (ε, δ).",
        ):
            return
        if self.release_job is None:
            self.sigRecord.emit(plan)
            return
        self.record_button.setEnabled(False)
        self.record_runner.start(
            self.release_job(plan), self._recorded, self._record_failed, label="record estimate"
        )

    def _recorded(self, release: Release) -> None:
        self.release = release
        self.result.append(html.escape(f"Recorded as ledger entry #{release.entry.seq} (free)."))
        if self.released_hook is not None:
            self.released_hook()

    def _record_failed(self, exc: BaseException, trace: str) -> None:
        if self.released_hook is not None:
            self.released_hook()
        self.plan = None
        self.result.append(_red(dialogs.explain(exc)[1] + " — preview again"))

    def done(self, result: int) -> None:
        self.runner.shutdown()
        self.record_runner.shutdown()
        super().done(result)
