"""*Plan batch…*: plan several pending count requests together, show the plan, release it on confirmation.

On opening, :func:`~dpdesk.store.batch.plan_pending` runs off the GUI thread on a sibling connection
(public inputs only, nothing spent). The dialog shows each request's cost alone (today's rules) against
what the batch does for it, a sentence saying why the batch saves or does not, the batch's system cost
before and after, the heatmap of per-cell costs after
the plan, and the requests the budget cannot cover with their counter-offers. *Release batch…* asks
once, then :func:`~dpdesk.store.batch.release_batch` records the measurements (one ledger entry each,
vetted noise, recorded before shown) and answers every covered request from history. Both jobs report
progress and can be cancelled. The release is cancelled before its next measurement: the ones recorded
by then stay recorded (and audited like every release), nothing else is spent, the batch's requests stay
pending, and the dialog says how many were recorded. Measurements watched claims would decline are left
out of the plan (listed under the table) and the requests that needed them named.

*Look ahead* (off unless the project's setting is on; remembered for the project) plans with
:func:`~dpdesk.engine.planning.ahead.plan_ahead`: the plan first measures, on cells nobody has paid for
yet, a strategy for the queue's requests (their queries and (ε, δ) only, never the data), spending the
chosen share of those cells' room. Changing it plans again off the GUI thread (the running plan is
cancelled); the summary says what the look-ahead alone costs and the table and heatmap include it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.errors import Cancelled
from dpdesk.engine.planning.ahead import SHARE
from dpdesk.gui import dialogs
from dpdesk.gui.dialogs.spend_dialog import spend_text
from dpdesk.gui.runtime.tasks import TaskRunner, TaskState
from dpdesk.gui.widgets.glossary import tip
from dpdesk.gui.widgets.heatmap_view import HeatmapView, show_cell_costs
from dpdesk.gui.widgets.progress import set_progress
from dpdesk.gui.widgets.screen_fit import keep_on_screen

if TYPE_CHECKING:
    from dpdesk.engine.planning.plan import BatchPlan, PlannedRequest
    from dpdesk.gui.runtime.session import ProjectSession
    from dpdesk.store.batch import BatchRelease

HEADERS = ("request", "asks", "alone today spends", "with the batch", "if not covered")

LOOK_AHEAD_WORDS = (
    "Looking ahead spends, now and at once, the chosen share of the budget left on cells nobody has paid for yet, "
    "measuring one strategy for all the queue's requests on them; later requests on those cells are then answered "
    "from history for free instead of each buying its own small answer. It is built from public inputs only — the "
    "queue's requests (answered and pending): their queries and (ε, δ) — never from the data. Remembered for this "
    "project."
)


def look_ahead_summary(plan: BatchPlan, share: float | None) -> str:
    """One sentence on the look-ahead of ``plan`` (planned at ``share``; None: off): what it costs alone."""
    la = plan.look_ahead
    if la is None:
        return (
            ""
            if share is None
            else (
                f"Look-ahead ({share:.0%}) not used: no cell the queue touches is unspent, "
                "or the batch alone serves the queue better."
            )
        )
    fewer = (
        f" It answers {plan.answered} of this batch where the batch alone answers {la.alone_answered}: it "
        "serves the queue's later requests instead (plan without it to answer more now)."
        if la.alone_answered is not None and plan.answered < la.alone_answered
        else ""
    )
    return (
        f"Look-ahead ({html.escape(la.strategy)}): the first {la.measurements} measurement(s), on {la.cells} "
        f"cell(s) nobody had paid for, for this batch and {la.seen} other queued request(s) — {la.share:.0%} "
        f"of their room, system cost {plan.system_cost:.4g} → {la.system_cost_after:.4g} from it alone.{fewer}"
    )


WITH_BATCH = {
    "answerable": "free now (from history)",
    "planned": "free after the batch's measurements",
    "uncovered": "not covered",
}


def row_cells(plan: BatchPlan, p: PlannedRequest) -> list[str]:
    """One table row: what request ``p`` asks, what it spends alone today (α on its cells; the system cost
    may not move), and what the batch does for it."""
    if p.alone_alpha is None:
        alone = "refused (the budget or the spend policy)"
    elif p.alone_alpha == 0:
        alone = "nothing: free from history"
    else:
        alone = f"α = {p.alone_alpha:.4g} on its cells"
    note = ""
    if p.status == "uncovered":
        note = p.reason if p.offer_eps is None else f"offer ±{p.offer_eps:.4g} at δ {p.request.delta:g}"
        if p.free_eps is not None:
            note += f"; history gives ±{p.free_eps:.4g} free"
    asks = f"±{p.request.eps:.4g} at {100 * (1 - p.request.delta):.4g} % confidence"
    return [p.id, asks, alone, WITH_BATCH[p.status], note]


class BatchDialog(QDialog):
    """Plan ``request_ids`` (None: every pending count request) of ``session``'s project, then release it."""

    def __init__(
        self,
        session: ProjectSession,
        request_ids: Sequence[str] | None,
        method: str = "fft",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle("Plan batch")
        self.resize(900, 720)  # the table's columns whole where the screen allows (fitted to it when shown)
        self.session, self.request_ids, self.method = session, request_ids, method
        self.plan: BatchPlan | None = None
        self.outcome: BatchRelease | None = None  # once released
        self._releasing: tuple[TaskState, int] | None = (
            None  # (task state, ledger length before) of the release job
        )
        self.runner = TaskRunner(self)
        self.summary = QLabel("Planning the batch…")
        self.summary.setWordWrap(True)
        share = session.look_ahead
        self.look_ahead = QCheckBox("Look ahead: first measure a strategy for the whole queue, spending")
        self.look_ahead.setChecked(share is not None)
        self.share = QSpinBox()
        self.share.setRange(1, 100)
        self.share.setSuffix(" % of unspent cells' room")
        self.share.setValue(int(round(100 * (share if share is not None else SHARE))))
        self.share.setEnabled(share is not None)
        self.look_ahead.setToolTip(tip("look_ahead", "batch"))
        self.share.setToolTip(tip("look_ahead"))
        self.look_ahead_words = QLabel(LOOK_AHEAD_WORDS)
        self.look_ahead_words.setWordWrap(True)
        self._replan = QTimer(self)  # the spin box steps: plan once it rests
        self._replan.setSingleShot(True)
        self._replan.setInterval(300)
        self._replan.timeout.connect(self._look_ahead_changed)
        self.table = QTableWidget(0, len(HEADERS))
        self.table.setHorizontalHeaderLabels(HEADERS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setToolTip(
            "alone today spends: the privacy loss a fresh answer to that request alone would charge its "
            "cells now (today's rules); with the batch: how it is answered once the batch is released"
        )
        self.heatmap = HeatmapView()
        self.heatmap.setMinimumHeight(200)
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.cancel_button = QPushButton("Cancel")
        self.release_button = QPushButton("Release batch…")
        self.release_button.setEnabled(False)
        close = QPushButton("Close")
        buttons = QHBoxLayout()
        buttons.addWidget(self.progress, 1)
        for b in (self.cancel_button, self.release_button, close):
            buttons.addWidget(b)
        ahead = QHBoxLayout()
        ahead.addWidget(self.look_ahead)
        ahead.addWidget(self.share)
        ahead.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addLayout(ahead)
        lay.addWidget(self.look_ahead_words)
        lay.addWidget(self.summary)
        lay.addWidget(self.table, 1)
        lay.addWidget(QLabel("Per-cell costs after the plan"))
        lay.addWidget(self.heatmap, 1)
        lay.addLayout(buttons)
        self.runner.sigProgress.connect(lambda f: set_progress(self.progress, int(round(100 * f))))
        self.runner.sigFinished.connect(lambda: self.cancel_button.setEnabled(False))
        self.cancel_button.clicked.connect(self.cancel)
        self.release_button.clicked.connect(self.release)
        close.clicked.connect(self.reject)
        self.look_ahead.toggled.connect(self._toggled)
        self.share.valueChanged.connect(lambda _v: self._replan.start())
        self.run_plan()

    # -- the look-ahead -------------------------------------------------------------------------------
    def chosen_share(self) -> float | None:
        """The look-ahead share the controls say (None: off)."""
        if not self.look_ahead.isChecked():
            return None
        stored = (
            self.session.look_ahead
        )  # a share set elsewhere (say 0.333) stays exact while the box shows it
        return (
            stored
            if stored is not None and round(100 * stored) == self.share.value()
            else self.share.value() / 100.0
        )

    def _toggled(self, on: bool) -> None:
        self.share.setEnabled(on)
        self._replan.stop()
        self._look_ahead_changed()

    def _look_ahead_changed(self) -> None:
        """Remember the choice for the project and plan again (a plan being made is cancelled)."""
        if self._releasing is not None:
            return
        share = self.chosen_share()
        if share != self.session.look_ahead:
            self.session.set_look_ahead(share)
        self.plan = None
        self.release_button.setEnabled(False)
        self.summary.setText("Planning the batch…")
        self.run_plan()

    # -- planning -------------------------------------------------------------------------------------
    def run_plan(self) -> None:
        share = self.chosen_share()
        self._planned_share = share
        job = self.session.batch_plan_job(self.request_ids, self.method, share)
        self.cancel_button.setEnabled(True)
        self.runner.start(job, self._show, self._failed, label="planning the batch")

    def _failed(self, exc: BaseException, trace: str) -> None:
        title, message = dialogs.explain(exc)
        self.summary.setText(f"<span style='color:#c0392b'>{message}</span>")

    def _show(self, plan: BatchPlan) -> None:
        self.plan = plan
        self.progress.setValue(100)
        one = plan.one_by_one
        # "one by one" means one thing: today's rules, request after request (when the plan is that, it is
        # not compared with itself)
        compared = (
            ""
            if plan.strategy == "one by one"
            else f" One by one (today's rules{', watched claims aside' if plan.left_out else ''}) would answer "
            f"{'' if one.checked else 'at most '}{plan.one_by_one_answered} at system cost "
            f"{one.system_cost_after:.4g}."
        )
        name = "one by one (today's rules)" if plan.strategy == "one by one" else plan.strategy
        self.summary.setText(
            f"<b>{html.escape(name)}</b>: {len(plan.measurements)} measurement(s); system cost "
            f"{plan.system_cost:.4g} now → {plan.system_cost_after:.4g} after, of {plan.total_budget:g}"
            f"{_in_epsilon(self.session.accounting, plan)}. "
            f"Answers {plan.answered} of {len(plan.requests)}.{compared}<br>{html.escape(plan.why())}"
            + (
                f"<br>{look_ahead_summary(plan, self._planned_share)}"
                if self._planned_share is not None
                else ""
            )
            + "".join(f"<br>Left out — {html.escape(why)}" for why in plan.left_out)
        )
        self.table.setRowCount(len(plan.requests))
        for r, p in enumerate(plan.requests):
            for c, text in enumerate(row_cells(plan, p)):
                item = QTableWidgetItem(text)
                item.setToolTip(text)  # the reasons are long: the whole line on hover
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        show_cell_costs(
            self.heatmap, self.session.schema, np.asarray(plan.cell_costs_after), plan.total_budget
        )
        self.release_button.setEnabled(self._releasable(plan))

    @staticmethod
    def _releasable(plan: BatchPlan) -> bool:
        """A plan with nothing to measure or answer (every request uncovered) has nothing to release."""
        return bool(plan.measurements) or bool(plan.ids("answerable"))

    # -- releasing ------------------------------------------------------------------------------------
    def release(self) -> None:
        plan = self.plan
        if plan is None or self.runner.is_running() or not self._releasable(plan):
            return
        covered = plan.ids("planned") + plan.ids("answerable")
        left = plan.ids("uncovered")
        la = plan.look_ahead
        heading, body = spend_text(
            f"{len(plan.measurements)} noisy measurement(s) ({plan.strategy}"
            + (f"; the first {la.measurements} look ahead for the queue" if la else "")
            + f") and answer {', '.join(covered) or 'no request'} from them",
            f"{plan.increase:.4g} of system cost (α on the cells it measures)",
            plan.system_cost,
            plan.system_cost_after,
            plan.total_budget,
            [f"{', '.join(left)} stay pending." if left else ""],
        )
        if not dialogs.confirm_spend(self, heading, body):
            return
        job = self.session.batch_release_job(plan)
        self.release_button.setEnabled(False)
        self.look_ahead.setEnabled(False)  # the plan being released is the one shown
        self.share.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.summary.setText("Releasing the batch…")
        before = len(self.session.ledger())
        state = self.runner.start(job, self._released, self._release_failed, label="releasing the batch")
        self._releasing = (state, before)

    def _released(self, outcome: BatchRelease) -> None:
        self.outcome = outcome
        self.session.released()
        names = ", ".join(r.request_id for r in outcome.answers) or "none"
        dialogs.show_info(
            self,
            "Batch released",
            f"Recorded {len(outcome.measurements)} measurement(s) and answered {names}"
            + (f"; {', '.join(outcome.left_pending)} still pending." if outcome.left_pending else "."),
        )
        self.accept()

    def _release_failed(self, exc: BaseException, trace: str) -> None:
        plan, (_state, before) = self.plan, self._releasing
        self.session.released()  # measurements recorded before a failure or cancel stay recorded: redraw
        self.plan = None  # the ledger may have moved: a plan is released at most once
        recorded = sum(e.kind == "measurement" for e in self.session.ledger()[before:])
        if not recorded and not isinstance(exc, Cancelled):
            self._failed(exc, trace)
            return
        what = "Cancelled" if isinstance(exc, Cancelled) else f"Stopped ({html.escape(str(exc))})"
        self.summary.setText(
            f"{what} after {recorded} of {len(plan.measurements)} measurement(s): "
            + (
                f"the {recorded} recorded stay in the ledger (audited like every release); "
                if recorded
                else ""
            )
            + ("nothing else was spent" if recorded else "nothing was spent")
            + ", and the batch's requests stay pending"
            + ("; planning the batch again resumes it as it was planned." if recorded else ".")
        )

    def cancel(self) -> None:
        """Stop planning, or stop releasing before the next measurement (the job then says how far it got)."""
        if not self.runner.is_running():
            return
        if self.runner.label == "releasing the batch" and self._releasing is not None:
            # the job checks before each measurement; its outcome (Cancelled) is awaited, not dropped
            self._releasing[0].cancel()
            self.cancel_button.setEnabled(False)
            self.summary.setText("Cancelling: no measurement is drawn after the one being recorded…")
            return
        self.runner.cancel()
        self.summary.setText("Planning cancelled; nothing was spent.")

    def done(self, result: int) -> None:
        self.runner.shutdown()
        super().done(result)


def _in_epsilon(acc, plan) -> str:  # type: ignore[no-untyped-def]
    """Under zCDP the figures are the largest cell's ρ: the privacy loss ε they state, at the project's δ."""
    if acc is None:
        return ""
    return (
        f" in ρ (zCDP: ε = {acc.epsilon_of(plan.system_cost):.4g} → {acc.epsilon_of(plan.system_cost_after):.4g}"
        f" of {acc.epsilon:g} at δ = {acc.delta:g})"
    )
