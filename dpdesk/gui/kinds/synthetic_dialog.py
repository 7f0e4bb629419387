"""*Export synthetic table…*: a maximum-entropy synthetic table from the released answers (issue 17, seed §4).

The curator sets the number of rows, the seed, the trade-off τ (or lets 5-fold cross-validation choose
it) and the file. *Preview* fits the distribution and draws the rows off the GUI thread, with progress
and cancel, from the ledger's released answers of that moment (``inputs()``, read on the GUI thread) —
nothing is read from the table, nothing is spent. *Export…* asks for confirmation, then records exactly
the previewed plan through the project's one release path (a zero-cost ledger entry holding its
parameters and the rows' digest) and only then writes the file; without a ``release_job`` it emits
``sigExport(plan, path)`` instead.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.schema import Schema
from dpdesk.gui import dialogs
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.progress import set_progress
from dpdesk.gui.widgets.screen_fit import keep_on_screen
from dpdesk.store.estimating import report_path

if TYPE_CHECKING:
    from dpdesk.engine.estimates.synthetic import SyntheticPlan
    from dpdesk.engine.mechanisms.base import ReleasePlan
    from dpdesk.gui.model.state import Job, TaskProgress
    from dpdesk.store.release import Release


def _red(text: str) -> str:
    return f"<span style='color:#c0392b'>{html.escape(text)}</span>"


class SyntheticDialog(QDialog):
    """Preview and export a synthetic table over ``schema``.

    ``inputs()`` returns the plans' public inputs now (:func:`dpdesk.store.estimating.ledger_inputs`);
    ``release_job(plan)`` the work that records a plan (``ProjectSession.release_job``); ``released()``
    runs on the GUI thread after an export, whatever its outcome.
    """

    sigExport = Signal(object, str)  # the confirmed plan and path (when there is no release_job)
    sigExported = Signal(object)  # the recorded release, after the file was written

    def __init__(
        self,
        schema: Schema,
        inputs: Callable[[], Any],
        *,
        default_path: str = "synthetic.csv",
        release_job: Callable[[ReleasePlan], Job[Release]] | None = None,
        released: Callable[[], None] | None = None,
        choose_file: Callable[[QWidget, str, str, str], str] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle("Export synthetic table")
        self.resize(640, 520)
        self.schema, self.inputs = schema, inputs
        self.release_job, self.released_hook = release_job, released
        self.choose_file = choose_file or (
            lambda w, title, default, filters: QFileDialog.getSaveFileName(w, title, default, filters)[0]
        )
        self.plan: SyntheticPlan | None = None  # the preview shown: exactly what Export… records
        self.release: Release | None = None
        self.runner = TaskRunner(self)
        self.export_runner = TaskRunner(self)  # a new preview never cancels an export
        form = self._form(default_path)
        self.result = QTextBrowser()
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.preview_button = QPushButton("Preview")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.export_button = QPushButton("Export…")
        self.export_button.setEnabled(False)
        buttons = QHBoxLayout()
        for b in (self.preview_button, self.cancel_button, self.export_button):
            buttons.addWidget(b)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.result, 1)
        lay.addWidget(self.progress)
        lay.addLayout(buttons)
        for r in (self.runner, self.export_runner):
            r.sigProgress.connect(lambda f: set_progress(self.progress, int(1000 * f)))
        self.runner.sigFinished.connect(self._idle)
        for w in (self.rows, self.seed, self.tau):
            w.valueChanged.connect(self._inputs_changed)
        self.by_cv.toggled.connect(self._inputs_changed)
        self.browse_button.clicked.connect(self._browse)
        self.preview_button.clicked.connect(self.run_preview)
        self.cancel_button.clicked.connect(self.runner.cancel)
        self.export_button.clicked.connect(self.confirm_export)
        self._inputs_changed()

    def _form(self, default_path: str) -> QFormLayout:
        """Rows, seed, the trade-off τ (or cross-validation), the file and its fit report."""
        form = QFormLayout()
        self.rows = QSpinBox()
        self.rows.setRange(1, 100_000_000)
        self.rows.setValue(1000)
        self.rows.setGroupSeparatorShown(True)
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setToolTip("The fit and the draw are reproducible from the seed (it is recorded)")
        self.by_cv = QCheckBox("choose τ by 5-fold cross-validation")
        self.by_cv.setChecked(True)
        self.tau = QDoubleSpinBox()
        self.tau.setDecimals(3)
        self.tau.setRange(0.001, 10.0)
        self.tau.setValue(0.1)
        self.tau.setToolTip(
            "The maximum-entropy trade-off τ (not a privacy budget): larger follows the released "
            "answers more closely, and their noise with them"
        )
        tau_row = QHBoxLayout()
        tau_row.addWidget(self.by_cv)
        tau_row.addWidget(self.tau)
        self.path = QLineEdit(default_path)
        self.browse_button = browse = QPushButton("Browse…")
        path_row = QHBoxLayout()
        path_row.addWidget(self.path, 1)
        path_row.addWidget(browse)
        form.addRow("rows", self.rows)
        form.addRow("seed", self.seed)
        form.addRow("trade-off τ", tau_row)
        form.addRow("file (CSV or Parquet)", path_row)
        self.with_report = QCheckBox(
            "also write the fit report (CSV: released, fitted and synthetic value per "
            "released answer) beside it"
        )
        self.with_report.setChecked(True)
        form.addRow("", self.with_report)
        return form

    def _inputs_changed(self, *_: object) -> None:
        self.tau.setEnabled(not self.by_cv.isChecked())
        self.plan = None  # a preview describes exactly the inputs it was made from
        self.export_button.setEnabled(False)

    def _browse(self) -> None:
        path = self.choose_file(
            self, "Export synthetic table", self.path.text(), "CSV (*.csv);;Parquet (*.parquet)"
        )
        if path:
            self.path.setText(path)

    def _idle(self) -> None:
        self.preview_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

    # -- preview -------------------------------------------------------------------------------------
    def run_preview(self) -> None:
        from dpdesk.engine.estimates.synthetic import plan_synthetic

        try:
            inputs = self.inputs()  # the ledger as it is now, read on the GUI thread
        except Exception as exc:
            self.result.setHtml(_red(dialogs.explain(exc)[1]))
            return
        rows, seed = self.rows.value(), self.seed.value()
        tau = None if self.by_cv.isChecked() else self.tau.value()
        self.result.setText("Fitting the maximum-entropy distribution to the released answers…")
        self.preview_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.runner.start(
            lambda st: plan_synthetic(
                inputs, rows=rows, seed=seed, tau=tau, progress=st.progress, cancelled=st.cancelled
            ),
            self._show,
            self._failed,
            label="synthetic table",
        )

    def _failed(self, exc: BaseException, trace: str) -> None:
        self.result.setHtml(_red(dialogs.explain(exc)[1]))

    def _show(self, plan: SyntheticPlan) -> None:
        self.plan = plan
        lines = [html.escape(line) for line in plan.lines()]
        lines = [f"<b style='color:#c0392b'>{x}</b>" if x.startswith("WARNING") else x for x in lines]
        if plan.cv_mse:
            cv = ", ".join(f"τ = {t:g}: {math.sqrt(max(m, 0.0)):.3g}" for t, m in plan.cv_mse)
            lines.append(html.escape(f"cross-validated r.m.s. misfit of held-out answers: {cv}"))
        self.result.setHtml("<br>".join(lines))
        self.export_button.setEnabled(not self.export_runner.is_running())

    # -- export --------------------------------------------------------------------------------------
    def confirm_export(self) -> None:
        from dpdesk.store.estimating import check_table_path, report_path, write_report, write_rows

        plan = self.plan
        if plan is None:
            return
        try:
            path = str(check_table_path(self.path.text().strip()))
        except Exception as exc:
            self.result.append(_red(dialogs.explain(exc)[1]))
            return
        if not dialogs.confirm(
            self,
            "Export synthetic table",
            f"Record this export in the ledger (free: post-processing of released answers) and "
            f"write {plan.rows:,} synthetic rows to {path}?",
        ):
            return
        if self.release_job is None:
            self.sigExport.emit(plan, path)
            return
        record = self.release_job(plan)
        schema = self.schema
        report = report_path(path) if self.with_report.isChecked() else None

        def job(state: TaskProgress | None) -> tuple[Release, str, str | None]:
            from dpdesk.engine.queries.text import describe_query

            release = record(state)  # recorded (fsync'd) first
            try:
                write_rows(plan, schema, path)  # not cancelled half way: the entry says it was exported
                if report is not None:
                    write_report(plan, report, lambda q: describe_query(q, schema))
            except Exception as exc:
                return release, path, dialogs.explain(exc)[1]
            return release, path, None

        self.export_button.setEnabled(False)
        self.export_runner.start(job, self._exported, self._export_failed, label="synthetic export")

    def _exported(self, outcome: tuple[Release, str, str | None]) -> None:
        release, path, problem = outcome
        self.release = release
        if problem is None:
            also = f" (fit report: {report_path(path)})" if self.with_report.isChecked() else ""
            self.result.append(
                html.escape(f"Recorded as ledger entry #{release.entry.seq} and written to {path}{also}.")
            )
        else:
            self.result.append(
                _red(
                    f"Recorded as ledger entry #{release.entry.seq}, but {path} could not be written "
                    f"({problem}); the same seed and τ give the same rows again"
                )
            )
        if self.released_hook is not None:
            self.released_hook()
        self.sigExported.emit(release)

    def _export_failed(self, exc: BaseException, trace: str) -> None:
        if self.released_hook is not None:
            self.released_hook()
        self.plan = None  # the ledger may have moved: preview again
        self.result.append(_red(dialogs.explain(exc)[1] + " — preview again"))

    def done(self, result: int) -> None:
        self.runner.shutdown()
        self.export_runner.shutdown()
        super().done(result)
