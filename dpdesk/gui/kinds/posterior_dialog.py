"""*Posterior of proportions…*: ask for a Dirichlet (Beta) posterior, preview its price, release it.

The curator picks an attribute, an optional box on the others (the count text form's ``name=label``
conditions), a prior, a mechanism and a price (a privacy loss ε, or — for the global-sensitivity mechanism
only, whose accuracy is data-free — an accuracy target), optionally a size they declare public, and a
reference size to compare the mechanisms' expected accuracy on a public table. The dialog writes the
request in its text form (``posterior(...)``, the same the CLI takes) and parses it with the engine's
parser. *Preview* prices it off the GUI thread against the ledger inputs of that moment (nothing is
spent, no data is read) and draws the prior beside the reference table's posterior. *Release…* asks for
confirmation and then either hands exactly the previewed plan to ``release_job`` (run off the GUI thread;
the project records it before anything is shown) or, without one, emits ``sigRelease(plan)``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QRadioButton,
    QSpinBox,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.schema import Schema
from dpdesk.gui import dialogs
from dpdesk.gui.dialogs.spend_dialog import spend_text
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.examples import box_example
from dpdesk.gui.widgets.proportions_plot import ProportionsPlot
from dpdesk.gui.widgets.release_buttons import release_buttons
from dpdesk.gui.widgets.screen_fit import keep_on_screen, scrolling
from dpdesk.gui.widgets.wheel_guard import guard_wheel

if TYPE_CHECKING:
    from dpdesk.engine.dirichlet.plan import PosteriorAssessment
    from dpdesk.engine.mechanisms.base import ReleasePlan
    from dpdesk.gui.model.state import Job
    from dpdesk.store.release import Release

MECHANISMS = (
    ("best", "The more accurate at this size (chosen by expected accuracy at the preview)"),
    ("global", "Exponential mechanism, global sensitivity (ε-DP)"),
    ("smooth", "Exponential mechanism, smooth sensitivity ((ε, δ)-DP)"),
    ("laplace", "Laplace noise on every count, conjugate update (ε-DP)"),
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _red(text: str) -> str:
    return f"<span style='color:#c0392b'>{html.escape(text)}</span>"


class PosteriorDialog(QDialog):
    """Request, preview and release a posterior of proportions over ``schema``.

    ``ledger_inputs()`` returns, when *Preview* is pressed, what the project knows publicly now:
    ``cell_costs``, ``total_budget`` and, when the project has them, ``cell_deltas``, ``delta_cap`` and
    the ``basis`` a release is checked against. ``release_job(plan)`` returns the work that records the
    plan (see :meth:`dpdesk.gui.runtime.session.ProjectSession.release_job`); ``released()`` runs afterwards on
    the GUI thread, whatever the outcome.
    """

    sigRelease = Signal(object)  # the confirmed PosteriorAssessment (when there is no release_job)
    sigReleased = Signal(object)  # the recorded release

    def __init__(
        self,
        schema: Schema,
        ledger_inputs: Callable[[], dict[str, Any]],
        *,
        release_job: Callable[[ReleasePlan], Job[Release]] | None = None,
        released: Callable[[], None] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Posterior of proportions")
        self.schema, self.ledger_inputs = schema, ledger_inputs
        self.release_job, self.released_hook = release_job, released
        self.plan: PosteriorAssessment | None = None  # the preview shown, exactly what Release… releases
        self.release: Release | None = None
        self._releasing: PosteriorAssessment | None = None  # the plan being recorded
        self.runner = TaskRunner(self)
        self.release_runner = TaskRunner(self)  # never cancelled by a new preview: a release runs to its end
        form = self._form(schema)
        self.result = QTextBrowser()
        self.result.setMinimumHeight(90)
        self.result.setText("Preview to see the cost, the guarantee and the expected accuracy.")
        self.plot = ProportionsPlot()
        buttons, self.preview_button, self.release_button = release_buttons(
            self, "Release…", self.run_preview, self.confirm_release
        )
        self.plot.setMinimumHeight(180)
        # on a short screen the form scrolls and the curator shares the height between text and plot;
        # the buttons stay in view
        shown = QSplitter(Qt.Orientation.Vertical)
        shown.addWidget(self.result)
        shown.addWidget(self.plot)
        shown.setChildrenCollapsible(False)
        lay = QVBoxLayout(self)
        lay.addWidget(scrolling(form), 2)
        lay.addWidget(shown, 3)
        lay.addLayout(buttons)
        keep_on_screen(self)
        self.resize(880, 700)  # the form's rows in view where the screen allows (fitted to it when shown)
        guard_wheel(self)  # the form scrolls: the wheel never changes a price it passes over
        for w in (self.attribute, self.mechanism):
            w.currentIndexChanged.connect(self._inputs_changed)
        for w in (self.budget, self.within, self.failure, self.size, self.reference):
            w.valueChanged.connect(self._inputs_changed)
        for w in (self.box, self.prior, self.delta):
            w.textChanged.connect(self._inputs_changed)
        for w in (self.by_budget, self.size_public):
            w.toggled.connect(self._inputs_changed)
        self._inputs_changed()

    def _form(self, schema: Schema) -> QFormLayout:
        """What the request states: attribute, box, prior, mechanism, price, δ, size, reference size."""
        form = QFormLayout()
        self.attribute = QComboBox()
        self.attribute.addItems([a.name for a in schema.attributes if a.size >= 2])
        self.box = QLineEdit()
        self.box.setPlaceholderText(
            f"other attributes, e.g. {box_example(schema, schema.attributes[0].name)} (empty: the whole table)"
        )
        self.prior = QLineEdit("1")
        self.prior.setToolTip(
            "one positive number for every category, or one per category separated by commas"
        )
        self.mechanism = QComboBox()
        for _, label in MECHANISMS:
            self.mechanism.addItem(label)
        price = self._price()
        self.delta = QLineEdit("1e-6")
        self.size_public = QCheckBox("the box's total is public:")
        self.size = QSpinBox(minimum=0, maximum=2_000_000_000, value=100)
        size = QHBoxLayout()
        size.addWidget(self.size_public)
        size.addWidget(self.size)
        size.addStretch(1)
        self.reference = QSpinBox(minimum=0, maximum=10_000_000, value=100)
        self.reference.setSpecialValueText("none")
        self.reference.setToolTip(
            "compare the mechanisms' expected accuracy at a public table of this many records "
            "split as the prior (never the data)"
        )
        form.addRow("Proportions of", self.attribute)
        form.addRow("Among", self.box)
        form.addRow("Prior", self.prior)
        form.addRow("Mechanism", self.mechanism)
        form.addRow("Price", price)
        form.addRow("δ (smooth only)", self.delta)
        form.addRow("Size", size)
        form.addRow("Reference size", self.reference)
        self.text = QLineEdit()
        self.text.setReadOnly(True)
        form.addRow("Text form", self.text)
        return form

    def _price(self) -> QHBoxLayout:
        """A privacy loss ε, or the global mechanism's accuracy target (within, failure probability)."""
        self.by_budget = QRadioButton("privacy loss ε")
        self.by_target = QRadioButton("accuracy target: within")
        self.by_budget.setChecked(True)
        group = QButtonGroup(self)
        group.addButton(self.by_budget)
        group.addButton(self.by_target)
        self.budget = QDoubleSpinBox(decimals=4, minimum=0.0001, maximum=1e6, value=0.5, singleStep=0.1)
        self.within = QDoubleSpinBox(decimals=3, minimum=0.001, maximum=1.0, value=0.2, singleStep=0.05)
        self.failure = QDoubleSpinBox(decimals=3, minimum=0.001, maximum=0.999, value=0.05, singleStep=0.01)
        price = QHBoxLayout()
        for w in (
            self.by_budget,
            self.budget,
            self.by_target,
            self.within,
            QLabel("failure probability"),
            self.failure,
        ):
            price.addWidget(w)
        return price

    # -- inputs ---------------------------------------------------------------------------------------
    @property
    def method(self) -> str:
        return MECHANISMS[self.mechanism.currentIndex()][0]

    def _inputs_changed(self, *_: object) -> None:
        glob = self.method in ("global", "best")  # an accuracy target is the global mechanism's
        if not glob and self.by_target.isChecked():
            self.by_budget.setChecked(True)  # only the global mechanism's accuracy is data-free
        self.by_target.setEnabled(glob)
        self.budget.setEnabled(self.by_budget.isChecked())
        self.within.setEnabled(glob and self.by_target.isChecked())
        self.failure.setEnabled(glob and self.by_target.isChecked())
        self.delta.setEnabled(self.method == "smooth")
        self.size.setEnabled(self.size_public.isChecked())
        self.reference.setEnabled(not self.size_public.isChecked())
        self.text.setText(self.request_text())
        self.plan = None  # a preview describes exactly the inputs it was made from
        self.release_button.setEnabled(False)

    def request_text(self) -> str:
        """The request in the text form the engine parses (and the CLI takes)."""
        name = self.attribute.currentText()
        head = name if _NAME.match(name) else '"' + name.replace('"', '\\"') + '"'
        box = self.box.text().strip()
        prior = self.prior.text().strip()
        parts = [f"prior={prior if ',' not in prior else '[' + prior.strip('[]') + ']'}"]
        if self.method != "best":  # named none: the engine chooses by expected accuracy at the size
            parts.append(f"mechanism={self.method}")
        if self.by_target.isChecked():
            parts += [f"within={self.within.value():g}", f"failure={self.failure.value():g}"]
        else:
            parts.append(f"budget={self.budget.value():g}")
        if self.method == "smooth":
            parts.append(f"delta={self.delta.text().strip()}")
        if self.size_public.isChecked():
            parts.append(f"size={self.size.value()}")
        return f"posterior({head}{' | ' + box if box else ''}; {'; '.join(parts)})"

    # -- preview --------------------------------------------------------------------------------------
    def run_preview(self) -> None:
        from dpdesk.engine.dirichlet.plan import assess_request
        from dpdesk.engine.dirichlet.request import parse_posterior
        from dpdesk.engine.errors import DpdeskError

        try:
            query = parse_posterior(self.request_text(), self.schema)
        except DpdeskError as exc:
            self.result.setHtml(_red(str(exc)))
            return
        public = dict(self.ledger_inputs())  # the ledger as it is now, read on the GUI thread
        if not self.size_public.isChecked() and self.reference.value() > 0:
            public["reference_size"] = self.reference.value()
        self.result.setText("Computing the preview…")
        self.preview_button.setEnabled(False)
        self.runner.start(
            lambda state: assess_request(query, **public), self._show, self._failed, label="posterior preview"
        )

    def _failed(self, exc: BaseException, trace: str) -> None:
        self.preview_button.setEnabled(True)
        title, message = dialogs.explain(exc)
        self.result.setHtml(_red(message))

    def _show(self, plan: PosteriorAssessment) -> None:
        from dpdesk.engine.dirichlet.summary import preview_lines

        self.preview_button.setEnabled(True)
        self.plan = plan
        lines = [html.escape(t) for t in preview_lines(plan)]
        if not plan.releasable:
            lines[-1] = f"<b style='color:#c0392b'>{lines[-1]}</b>"
        self.result.setHtml("<br>".join(lines))
        from dpdesk.engine.dirichlet.alternatives import expected_release_series

        # prior, the reference table's posterior, and what this mechanism and the Laplace baseline release there
        self.plot.set_series(plan.query.labels, expected_release_series(plan))
        self.release_button.setEnabled(plan.releasable and not self.release_runner.is_running())

    # -- release --------------------------------------------------------------------------------------
    def confirm_release(self) -> None:
        plan = self.plan
        if plan is None or not plan.releasable:
            return
        q = plan.query
        cost = f"ε = {plan.alpha:.4g}" + (f" and δ = {plan.delta:.3g}" if plan.delta else "")
        b = plan.budget
        heading, body = spend_text(
            f"the posterior of the shares of {q.attribute} ({plan.mechanism.label})",
            f"{cost} on each of the box's {int(q.box_query().support_size())} cells",
            b.system_cost if b is not None else float("nan"),
            b.system_cost_after if b is not None else float("nan"),
            b.total if b is not None else float("nan"),
        )
        if not dialogs.confirm_spend(self, heading, body):
            return
        if self.release_job is None:
            self.sigRelease.emit(plan)
            return
        self.release_button.setEnabled(False)
        self.preview_button.setEnabled(False)
        self.result.setText("Releasing…")
        self._releasing = plan
        self.release_runner.start(
            self.release_job(plan), self._released, self._release_failed, label="posterior release"
        )

    def _released(self, release: Release) -> None:
        from dpdesk.engine.dirichlet.plan import PosteriorRelease
        from dpdesk.engine.dirichlet.summary import release_lines

        self.preview_button.setEnabled(True)
        self.release, self.plan = release, None  # a new release needs a new preview (the ledger moved)
        q = self._releasing.query
        posterior = PosteriorRelease.from_payload(release.entry.payload)
        lines = release_lines(posterior, q) + [
            f"ledger entry #{release.entry.seq}; ledger head {release.entry.hash}"
        ]
        self.result.setHtml("<br>".join(html.escape(t) for t in lines))
        from dpdesk.engine.dirichlet.alternatives import released_series

        self.plot.set_series(q.labels, released_series(self._releasing, posterior))
        if self.released_hook is not None:
            self.released_hook()
        self.sigReleased.emit(release)

    def _release_failed(self, exc: BaseException, trace: str) -> None:
        self.preview_button.setEnabled(True)
        if self.released_hook is not None:
            self.released_hook()  # whatever happened, the views redraw from the ledger as it is
        title, message = dialogs.explain(exc)
        self.result.setHtml(_red(f"Not released: {message}. Preview again."))
        self.plan = None

    def done(self, result: int) -> None:
        self.runner.shutdown()
        self.release_runner.shutdown()
        super().done(result)
