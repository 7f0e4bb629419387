"""The answer panel: what history says about the selected request, and the three actions.

It shows the engine's :class:`~dpdesk.engine.answering.workflow.Assessment` field by field — estimate,
credible interval with its confidence, confidence at ±a, the decision and its reason, the
fresh-answer cost and the system cost before → after — and offers *Release inferred answer*,
*Spend ε and release* (after a confirmation) and *Reject*. Only the action the engine decided is
enabled (plus Reject). Assessments and releases run through the task helper (Monte Carlo can take
seconds; a first fresh answer scans the table). A release records exactly the assessment shown; if
the ledger or the settings moved since, it is refused and the request is assessed again in view.
Released values are public and carry no badge; the reply to the requester carries the ledger head.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.budget.person import person_rule
from dpdesk.engine.vocabulary import accuracy_text
from dpdesk.gui import dialogs
from dpdesk.gui.kinds.kind_views import chart_for
from dpdesk.gui.panels import answer_actions, answer_layout
from dpdesk.gui.panels.answer_layout import BUSY_DELAY_MS as BUSY_DELAY_MS
from dpdesk.gui.panels.assessment_text import (
    DECIDED_LABELS,
    DECISION_STYLE,
    OUTCOME_STYLE,
    decided_plan_text,
    field_texts,
    outcome_text,
    person_text,
    status_text,
    unchanged_note,
)
from dpdesk.gui.panels.claims_panel import claim_notes, offer_options
from dpdesk.gui.panels.plan_view import PlanView
from dpdesk.gui.runtime.session import ProjectSession, run_assessment_with_claims
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.posterior_plot import PosteriorPlot
from dpdesk.gui.widgets.screen_fit import wrapped_min_height
from dpdesk.gui.widgets.wheel_guard import guard_wheel


class AnswerPanel(QWidget):
    """Assessment display and actions for one request of a :class:`ProjectSession`."""

    sigAssessed = Signal(object)  # the Assessment now shown (or None)
    sigReleased = Signal(object)  # a store Release, after it was recorded
    # the action buttons (answer_actions.button_row)
    infer_btn: QPushButton
    spend_btn: QPushButton
    reject_btn: QPushButton
    estimate_btn: QPushButton
    offer_btn: QPushButton

    def __init__(self, session: ProjectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.request_id: str | None = None
        self.assessment = None
        self.runner = TaskRunner(self)
        self.release_runner = TaskRunner(self)  # never cancelled by a new assessment: runs to its end
        lay = QVBoxLayout(self)
        lay.addLayout(answer_layout.header(self))
        lay.addLayout(answer_layout.progress_bar(self))
        self.plot = PosteriorPlot()
        self.plot.setMinimumHeight(150)  # leaves the figures below in view on a laptop screen
        lay.addLayout(answer_layout.decision_row(self))
        self.claims_note = QLabel(
            ""
        )  # what watched claims say of this request (hidden when none are watched)
        self.claims_note.setObjectName("claimsNote")
        self.claims_note.setWordWrap(True)
        self.claims_note.setVisible(False)
        lay.addWidget(self.claims_note)
        self.claim_blocked = False
        self.claim_lines: list[str] = []
        self.claim_offer = None  # a blocked request's counter-offer (store.watching.offer_within_claims)
        self._accepted: tuple | None = (
            None  # (request id, decision, α cap) of an accepted claim counter-offer
        )
        self._claim_statuses: list | None = None  # computed beside the assessment on the worker
        # the decision (above) and the actions (below) stay in view; the evidence between them scrolls
        # when the window is short, so nothing is squeezed onto anything else
        lay.addWidget(self.plot, 1)  # the plot takes the room left; the figures scroll when there is none
        self.plan_view = PlanView()  # a request of another kind: its plan, words and chart instead
        self.plan_view.setVisible(False)
        lay.addWidget(self.plan_view, 1)
        self.kind = None  # the selected request's kind when it is not a count
        lay.addWidget(answer_layout.evidence(self))
        # a person-level project: how a row's α adds up to one person's loss (hidden when rows are people)
        self.person_note = QLabel("")
        self.person_note.setObjectName("personNote")
        self.person_note.setWordWrap(True)
        self.person_note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.person_note.setVisible(False)
        lay.addWidget(self.person_note)
        lay.addLayout(answer_actions.button_row(self))
        self.result = QLabel("")
        self.result.setObjectName("releaseLabel")
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.result)
        self._busy(False)
        self._set_buttons(None)
        guard_wheel(self)

    def minimumSizeHint(self) -> QSize:  # its wrapped lines counted: the plot is never overlapped
        hint = super().minimumSizeHint()
        return QSize(hint.width(), max(hint.height(), wrapped_min_height(self.layout(), self.width())))

    def _show_person(self, a, decided: bool = False) -> None:
        """The per-person line of a person-level project for assessment or plan ``a`` (or a budget
        preview), hidden otherwise and with nothing shown."""
        budget = getattr(a, "budget", a)
        text = "" if a is None else person_text(person_rule(self.session.schema), budget, decided)
        self.person_note.setText(text)
        self.person_note.setVisible(bool(text))

    # -- assessment ----------------------------------------------------------------------------
    def _busy(self, busy: bool) -> None:
        for w in self._progress_row:
            w.setVisible(busy)

    def set_request(self, request_id: str | None) -> None:
        if request_id != self.request_id:
            self.result.setText("")
        self.request_id = request_id
        self.refresh()

    def refresh(self) -> None:
        """Re-assess the current request against the current history (in the background)."""
        self.assessment = None
        self.claim_offer = None
        self.claims_note.setVisible(False)
        self._show_person(None)
        self._set_buttons(None)
        if self.request_id is None:
            self.runner.cancel()
            self.title.setText("Select a request")
            self.plot.clear_plot()
            self.sigAssessed.emit(None)
            return
        if not self.session.loaded:  # a large project's ledger is still being read: assessed when it arrives
            return
        req = self.session.request(self.request_id)
        self._show_kind(req.kind)
        if req.kind != "count":
            self._refresh_plan(req)
            return
        self.title.setText(
            f"{req.id} · {req.requester or 'anonymous'} · {req.describe(self.session.schema)}   "
            f"({accuracy_text(req.eps, req.delta)})"
        )
        self.fields["status"].setText(self._status_text(req))
        inputs = self.session.assess_inputs(self.request_id, self.method.currentText())
        self.runner.start(
            lambda st: run_assessment_with_claims(inputs, st.progress, st.cancelled),
            self._assessed,
            label=f"assessing {req.id}",
        )

    def show_decided(self) -> None:
        """The request shown was just decided (by a release or a refusal): its outcome, status and buttons
        — a count keeps the assessment it was decided on in view instead of being assessed again; another
        kind shows what the ledger recorded."""
        req = self.session.request(self.request_id) if self.request_id is not None else None
        a = self.assessment
        if req is None or self.kind is not None or a is None or getattr(a, "request_id", None) != req.id:
            self.refresh()
            return
        self.fields["status"].setText(self._status_text(req))
        self._show_outcome()
        self._set_buttons(a)

    def _assessed(self, result) -> None:
        a, self._claim_statuses = result  # the watched claims' checks came with it, from the worker
        self.show_assessment(a)
        accepted, self._accepted = self._accepted, None
        if accepted is None or accepted[0] != a.request_id:
            return
        _rid, decision, cap = accepted
        if a.decision == decision and not (
            decision == "spend" and (self.claim_blocked or a.spend_alpha > cap)
        ):
            if decision == "spend":
                self.spend_and_release()  # the same confirmation as every other spend
            else:
                self._release(a)  # free: history's answer at the accepted confidence
        else:
            self.result.setText(
                f"Counter-offer accepted ({self.session.request(a.request_id).terms()}) but not "
                f"released: assessed again, {a.reason}"
            )

    # -- a max/argmax or posterior request: its kind's plan -----------------------------------------
    def _show_kind(self, kind: str) -> None:
        from dpdesk.engine.registry import kind as kind_named

        count = kind == "count"
        self.kind = None if count else kind_named(kind)
        for w in (self.plot, self.body):
            w.setVisible(count)
        self.plan_view.setVisible(not count)
        if count:
            self.plan_view.clear()

    def _refresh_plan(self, req) -> None:
        self.title.setText(
            f"{req.id} · {req.requester or 'anonymous'} · {req.describe()}   "
            f"({self.kind.label}; {req.terms()})"
        )
        entry = None if req.status == "pending" else self.session.entry_for(req.id)
        if entry is not None:  # decided: what the ledger recorded, never a live plan
            self.runner.cancel()
            if getattr(self, "_shown_release", None) != (req.id, entry.seq):
                self.plan_view.clear()  # the chart of the release just made stays; an older one is not redrawn
            self._badge(*OUTCOME_STYLE.get(entry.kind, (f"ANSWERED — {entry.kind.upper()}", "#4a4a4a")))
            self.reason.setText(decided_plan_text(entry))
            self._show_person(self.session.budget(), decided=True)
            self.sigAssessed.emit(None)
            return
        chart = chart_for(req.kind)  # what the kind's chart reads of the data, if it has one
        job = self.session.plan_job(req.id, None if chart is None else chart.private)
        self.runner.start(job, self.show_plan, self._plan_failed, label=f"planning {req.id}")

    def show_plan(self, result) -> None:
        """A queued max/argmax or posterior request's plan (and a max/argmax's private output law)."""
        plan, probabilities, statuses = result
        if self.kind is None or plan.request_id != self.request_id:
            return  # another request was selected meanwhile
        self.assessment = plan
        # every kind shows its watched claims' verdict before anything is confirmed (item 7)
        self.claim_lines, self.claim_blocked, colour = claim_notes(statuses)
        self.claims_note.setText("\n".join(self.claim_lines))
        self.claims_note.setStyleSheet(f"QLabel {{ color: {colour}; }}")
        self.claims_note.setVisible(bool(self.claim_lines))
        releasable = plan.releasable and not self.claim_blocked
        decided = getattr(plan, "decision", "spend")  # a mean may be answered from history
        self._badge(
            *(
                DECISION_STYLE.get(decided, DECISION_STYLE["spend"])
                if releasable
                else DECISION_STYLE["reject"]
            )
        )
        self.reason.setText(plan.reason)
        self.plan_view.show_plan(self.kind, plan, probabilities, self.session.schema)
        self._show_person(plan)
        self._set_buttons(plan)
        self.sigAssessed.emit(plan)  # the budget panel previews the per-cell costs after it

    def _plan_failed(self, exc: BaseException, trace: str) -> None:
        self._badge(*DECISION_STYLE["reject"])
        self.reason.setText(f"Cannot plan this request: {dialogs.explain(exc)[1].splitlines()[0]}")

    def _status_text(self, req) -> str:
        return status_text(req, None if req.status == "pending" else self.session.entry_for(req.id))

    def show_assessment(self, a) -> None:
        self.assessment = a
        self._badge(*DECISION_STYLE[a.decision])
        self.reason.setText(a.reason)  # the plot says why there is no posterior when there is none
        decided = self.session.request(a.request.id).status != "pending"
        # a decided request's released answer is stated once (with its interval and confidence) above;
        # the posterior below is history's now, which includes that release: said so on every label
        self.plot.set_assessment(a, "history's posterior now (it includes this release)" if decided else "")
        for key, label in self.field_labels.items():
            self.form.labelForField(self.fields[key]).setText(
                DECIDED_LABELS.get(key, label) if decided else label
            )
        for key, text in field_texts(a).items():
            self.fields[key].setText(text)
        self._show_person(a, decided)
        self.form.invalidate()  # the rows' heights for their wrapped lines now (else a second line is cut)
        self._show_claims(a)
        self._show_outcome()
        self._set_buttons(a)
        self.sigAssessed.emit(a)

    def _show_claims(self, a) -> None:
        """Watched claims against this request: blocked (spend is off; the largest α that passes), touched
        (the risk it would spend) or untouched. Public inputs only, like the assessment."""
        given, self._claim_statuses = self._claim_statuses, None
        if self.session.request(a.request.id).status != "pending":
            statuses = []
        else:
            statuses = given if given is not None else self.session.claim_statuses(a)
        from dpdesk.store.watching import offer_within_claims

        # the counter-offer first: the note and the button state its one α
        self.claim_offer = offer_within_claims(statuses, a, self.session.total_budget)
        self.claim_lines, self.claim_blocked, colour = claim_notes(statuses, self.claim_offer)
        self.claims_note.setText("\n".join(self.claim_lines))
        self.claims_note.setStyleSheet(f"QLabel {{ color: {colour}; }}")
        self.claims_note.setVisible(bool(self.claim_lines))

    def _show_outcome(self) -> None:
        """For a decided request: the recorded release (value, interval, when, cost, ledger entry)."""
        req = self.session.request(self.request_id)
        entry = None if req.status == "pending" else self.session.entry_for(req.id)
        if entry is None:
            return
        self._badge(*OUTCOME_STYLE.get(entry.kind, (entry.kind.upper(), "#4a4a4a")))
        self.reason.setText(outcome_text(entry))
        for key in ("fresh", "cost"):
            self.fields[key].setText("— (already decided)")
        self._show_person(self.session.budget(), decided=True)  # the figure now, this release in it

    def _badge(self, text: str, colour: str) -> None:
        self.decision.setText(text)
        style = (
            f"QLabel {{ background: {colour}; color: white; font-weight: bold;"
            " padding: 2px 6px; border-radius: 3px; }"
        )
        if self.decision.styleSheet() != style:  # restyling a widget is costly: only when its colour moves
            self.decision.setStyleSheet(style)

    def _set_buttons(self, a) -> None:
        pending = False
        if a is not None and self.request_id is not None and not self.release_runner.is_running():
            pending = self.session.request(self.request_id).status == "pending"
        self.offer_btn.setVisible(False)  # shown below for a count request a watched claim blocks
        if self.kind is not None:  # a plan of another kind: release it (α on its box) or reject
            from dpdesk.engine.kinds.base import cost_text

            self.infer_btn.setVisible(False)
            self.spend_btn.setEnabled(pending and a.releasable and not self.claim_blocked)
            free = a is not None and not a.charge.terms and not a.needs_data
            self.spend_btn.setText(
                "Release (free)"
                if free
                else f"Release ({cost_text(a)} per cell)"
                if a is not None
                else "Release"
            )
            self.reject_btn.setEnabled(
                self.request_id is not None
                and not self.release_runner.is_running()
                and self.session.request(self.request_id).status == "pending"
            )
            return
        decision = a.decision if a is not None else None
        self.infer_btn.setVisible(a is None or a.estimable)
        # a zero-cost estimate is offered for a pending request history cannot estimate, never a decided one
        self.estimate_btn.setVisible(
            pending and a is not None and not a.estimable and a.estimate.history_size > 0
        )
        self.infer_btn.setEnabled(pending and decision == "infer")
        self.spend_btn.setEnabled(pending and decision == "spend" and not self.claim_blocked)
        self.spend_btn.setText(
            f"Spend {a.noise.cost_words(a.spend_alpha)} and release"
            if a is not None
            else "Spend ε and release"
        )
        self.reject_btn.setEnabled(pending)
        offers = offer_options(self.claim_offer, a.request) if a is not None and self.claim_blocked else []
        self.offer_btn.setVisible(bool(offers))
        self.offer_btn.setEnabled(pending and bool(offers))
        if offers and offers[0][3] == "spend":
            self.offer_btn.setText(
                f"Release at ε = {self.claim_offer.alpha:.4g} (±{self.claim_offer.eps:g})…"
            )
        elif offers:
            self.offer_btn.setText("Release free from history…")

    # -- actions -------------------------------------------------------------------------------
    def edit_prior(self) -> None:
        from dpdesk.gui.dialogs.prior_dialog import PriorDialog

        PriorDialog.edit(self.session.prior, self.session.set_prior, self)

    def _release(self, a) -> None:
        """Release exactly ``a`` off the GUI thread; the buttons stay off until it is recorded or refused."""
        self._set_buttons(None)
        self._releasing = a
        self.result.setText(f"Releasing {a.request_id}…")
        self.release_runner.start(
            self.session.release_job(a),
            self._released,
            self._release_failed,
            label=f"releasing {a.request_id}",
        )

    def _released(self, release) -> None:
        if self.kind is not None and release.kind == self.kind.name:
            self.plan_view.show_release(self.kind, self._releasing, release)
            self._shown_release = (release.request_id, release.entry.seq)
            self.result.setText(
                f"Released for {release.request_id}: "
                f"{'; '.join(self.kind.outcome(release, self._releasing))}\nReply: {release.reply()}"
            )
            self.session.released()
            self.sigReleased.emit(release)
            return
        kind = (
            f"fresh, ε = {release.alpha:.4g}" if release.kind == "fresh" else "inferred from history, cost 0"
        )
        self.result.setText(
            f"Released for {release.request_id}: {release.entry.stated()} ({kind}); "
            f"ledger entry #{release.entry.seq}"
            f"{unchanged_note(self.assessment) if release.kind == 'fresh' else ''}"
            f"\nReply: {release.reply()}"
        )
        self.session.released()
        self.sigReleased.emit(release)

    def _release_failed(self, exc: BaseException, trace: str) -> None:
        from dpdesk.store.errors import StaleAssessment

        self.session.released()  # whatever happened, views redraw from the ledger as it is
        if isinstance(exc, StaleAssessment):
            self.result.setText(f"Not released: {exc}. Assessed again below.")
            self.refresh()
            return
        self.result.setText("")
        dialogs.report_exception(exc, trace, parent=self)

    def release_inferred(self) -> None:
        a = self.assessment
        if a is None or a.decision != "infer" or not self.infer_btn.isEnabled():
            return
        self._release(a)

    def spend_and_release(self) -> None:
        """Spend and release the plan shown, after the one spend confirmation (Cancel by default)."""
        answer_actions.spend_and_release(self)

    def offer_within_claims(self) -> None:
        """A request watched claims block: the requester accepts one offer, assessed again and released."""
        answer_actions.offer_within_claims(self)

    def reject(self) -> None:
        """Record the refusal of the selected request, with a note for the requester."""
        answer_actions.reject(self)
