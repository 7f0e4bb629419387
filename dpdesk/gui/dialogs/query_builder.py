"""The query builder: tick labels per attribute and set a weight, or type the text form.

Both routes end in the DESIGN §6 text form, parsed by the engine (``parse_query``) on every edit so
the curator sees at once whether the query is valid, and if not, where (the engine's message names
the column). The builder's checkboxes produce text through the engine's ``count`` and
``format_terms``. The text may also be a request of another kind — ``max(age)``, ``argmax(education |
sex="Female")``, ``posterior(income | age="65-90"; prior=1)`` (engine/registry.py) — priced by the
accuracy (±a at a confidence), by a per-cell privacy loss ε, or (a posterior) in its own text; it is
checked completely as it is typed. The dialog returns (text, eps, delta, requester, alpha) — the stored
fields: half-width, miss probability, privacy loss. Given ``submit``, OK hands the values to it and
closes only if it succeeds: a refused request (±0, a bad query) is explained in place and
nothing typed is lost.

A pending request whose query is an index list with no text form (an irregular set of cells, as a
CSV or the command line may bring) is edited with :meth:`QueryBuilderDialog.keep_query`: the query is
named by its cells' labels and kept exactly as recorded while its terms and the requester change; typing a
text form (or ticking labels) replaces it, and clearing the text keeps it again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.queries.predicates import count
from dpdesk.engine.queries.query import Query
from dpdesk.engine.queries.text import describe_query, format_terms, parse_query
from dpdesk.engine.registry import kind_of_text, read_request
from dpdesk.engine.schema import Schema
from dpdesk.gui.widgets.confidence_box import ConfidenceBox
from dpdesk.gui.widgets.examples import count_example
from dpdesk.gui.widgets.glossary import tip
from dpdesk.gui.widgets.screen_fit import keep_on_screen
from dpdesk.gui.widgets.wheel_guard import guard_wheel

# how a request other than a count is priced (a count always states its accuracy ±a at a confidence)
PRICES = ("accuracy at a confidence", "per-cell privacy loss ε", "stated in the text (posterior)")
POSTERIOR_MECHANISMS = (
    ("", "the more accurate at the size (chosen by dpdesk)"),
    ("global", "exponential mechanism, global sensitivity"),
    ("smooth", "exponential mechanism, smooth sensitivity (give delta=… in the text)"),
    ("laplace", "Laplace noise on every count"),
)
_MECHANISM_OPTION = re.compile(r";\s*mechanism\s*=\s*[A-Za-z_]+")


class QueryBuilderDialog(QDialog):
    """New-request dialog over a schema."""

    def __init__(
        self,
        schema: Schema,
        parent: QWidget | None = None,
        submit: Callable[[str, float, float, str], Any] | None = None,
        title: str = "New request",
    ) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle(title)
        self.schema = schema
        self.submit = submit
        self.result_value: Any = None
        self.query = None
        self.kept: Query | None = None  # an index-list query kept as recorded while the text is empty
        lay = QVBoxLayout(self)
        lay.addWidget(self._boxes(schema), 1)
        form = QFormLayout()
        self._query_rows(form)
        self._terms_rows(form)
        self.requester = QLineEdit()
        form.addRow("requester", self.requester)
        lay.addLayout(form)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.submit_values)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        guard_wheel(self)  # the label boxes scroll: the wheel never changes a value it passes over
        self._from_checks()

    def _boxes(self, schema: Schema) -> QScrollArea:
        """One group of label check boxes per attribute (none ticked: any label)."""
        boxes = QWidget()
        grid = QGridLayout(boxes)
        self.checks: dict[str, list[QCheckBox]] = {}
        for i, attr in enumerate(schema.attributes):
            group = QGroupBox(f"{attr.name} (none ticked = any)")
            gl = QHBoxLayout(group)
            self.checks[attr.name] = []
            for k, label in enumerate(attr.labels):
                cb = QCheckBox(label)
                if attr.kind == "numeric" and attr.edges:  # what the bin holds, whatever its label says
                    last = k == len(attr.labels) - 1
                    cb.setToolTip(
                        f"{attr.name} from {attr.edges[k]:g} {'to' if last else 'up to, not including,'} "
                        f"{attr.edges[k + 1]:g}"
                    )
                cb.toggled.connect(self._from_checks)
                gl.addWidget(cb)
                self.checks[attr.name].append(cb)
            gl.addStretch(1)
            grid.addWidget(group, i, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(boxes)
        return scroll

    def _query_rows(self, form: QFormLayout) -> None:
        """The weight, the text form and what the store says of it."""
        self.weight = QDoubleSpinBox()
        self.weight.setRange(-1e6, 1e6)
        self.weight.setDecimals(3)
        self.weight.setValue(1.0)
        self.weight.valueChanged.connect(self._from_checks)
        form.addRow("weight", self.weight)
        self.kept_note = QLabel("")
        self.kept_note.setWordWrap(True)
        self.kept_note.setVisible(False)
        form.addRow(self.kept_note)
        self.text = QLineEdit()
        self.text.setPlaceholderText(f"e.g. {count_example(self.schema)}")
        self.text.textChanged.connect(self._validate)
        form.addRow("query (text form)", self.text)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        form.addRow("", self.status)

    def _terms_rows(self, form: QFormLayout) -> None:
        """What the request states besides its text: ±a at a confidence, or a price."""
        self.eps = QDoubleSpinBox()
        self.eps.setRange(0.0, 1e9)  # the store says why 0 is refused, in place
        self.eps.setDecimals(4)
        self.eps.setValue(50.0)
        form.addRow("accuracy ±a (half-width)", self.eps)
        form.labelForField(self.eps).setToolTip(tip("accuracy"))
        self.eps.setToolTip(tip("accuracy"))
        self.delta = ConfidenceBox(0.05, largest=0.999999)  # shows the confidence; its value is δ
        form.addRow("confidence", self.delta)
        form.labelForField(self.delta).setToolTip(tip("confidence_level"))
        self.delta.setToolTip(tip("confidence_level"))
        self.price = QComboBox()
        self.price.addItems(PRICES)
        self.price.setToolTip(
            "max/argmax and posterior requests: by an accuracy target, by the privacy loss ε every cell of "
            "their box pays, or (posterior) by budget=… or within=…; failure=… in the text"
        )
        self.alpha = QDoubleSpinBox(decimals=4, minimum=1e-4, maximum=1e6, value=0.1, singleStep=0.05)
        self.alpha.setToolTip(tip("epsilon"))
        price = QHBoxLayout()
        price.addWidget(self.price, 1)
        price.addWidget(QLabel("ε ="))
        price.addWidget(self.alpha)
        form.addRow("price (max, argmax, posterior)", price)
        # a posterior's own fields (issue 34 item 10): its mechanism, written into the text form
        self.mechanism = QComboBox()
        for key, words in POSTERIOR_MECHANISMS:
            self.mechanism.addItem(words, key)
        self.mechanism.setToolTip(
            "posterior(…) requests: the mechanism; 'the more accurate at the size' lets dpdesk choose"
        )
        self.mechanism.currentIndexChanged.connect(self._mechanism_chosen)
        form.addRow("posterior mechanism", self.mechanism)
        for w in (self.eps, self.delta, self.alpha):
            w.valueChanged.connect(lambda _v: self._validate(self.text.text()))
        self.price.currentIndexChanged.connect(lambda _i: self._validate(self.text.text()))

    def _from_checks(self) -> None:
        chosen = {name: [cb.text() for cb in cbs if cb.isChecked()] for name, cbs in self.checks.items()}
        chosen = {k: v for k, v in chosen.items() if v}
        try:
            q = count(self.schema, self.weight.value(), **chosen)
            text = format_terms(q.terms, self.schema) if q.terms is not None else None
        except DpdeskError as exc:
            self.status.setText(f"✗ {exc}")
            return
        if text is not None:
            self.text.setText(text)

    def _validate(self, text: str) -> None:
        if not hasattr(self, "buttons"):
            return  # still being built
        ok_btn = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        if self.kept is not None and not text.strip():
            q = self.query = self.kept
            self.status.setText(
                f"✓ keeps the recorded query — sensitivity {q.sensitivity:g}, "
                f"{q.support_size()} of {q.n_cells} cells"
            )
            self.status.setStyleSheet("color: #237a36;")
            ok_btn.setEnabled(True)
            return
        kind = kind_of_text(text)
        other = kind.name != "count"
        posterior = kind.name == "posterior"
        if posterior and self.price.currentIndex() == 0 and "within" not in text and "budget" not in text:
            self.price.setCurrentIndex(1)  # a posterior is priced by its α unless its text says otherwise
            return  # (the change validates again)
        self.price.setEnabled(other)
        self.alpha.setEnabled(other and self.price.currentIndex() == 1)
        self.mechanism.setEnabled(posterior)
        if posterior:
            m = _MECHANISM_OPTION.search(text)
            key = m.group(0).split("=")[1].strip() if m else ""
            i = self.mechanism.findData(key)
            if i >= 0 and i != self.mechanism.currentIndex():
                self.mechanism.blockSignals(True)
                self.mechanism.setCurrentIndex(i)
                self.mechanism.blockSignals(False)
        try:
            if other:
                _, eps, delta, _, alpha = self.values()
                q = read_request(self.schema, text, eps, delta, alpha).cells
                verdict = f"✓ valid {kind.label} request — reads {q.support_size()} of {q.n_cells} cells"
            else:
                q = parse_query(text, self.schema)
                verdict = f"✓ valid — sensitivity {q.sensitivity:g}, {q.support_size()} of {q.n_cells} cells"
        except DpdeskError as exc:
            self.query, verdict = None, f"✗ {exc}"
        else:
            self.query = q
            if not other:
                self._follow_text(q)
        self.status.setText(verdict)
        self.status.setStyleSheet("color: #237a36;" if self.query is not None else "color: #a8321f;")
        ok_btn.setEnabled(self.query is not None)

    def _follow_text(self, q: Query) -> None:
        """Tick the labels (and set the weight) a typed one-term count names, so the boxes follow the text;
        a query they cannot show (several terms, other coefficients) leaves them as they are."""
        if q.terms is None or len(q.terms) != 1:
            return
        term = q.terms[0]
        ticks = {}
        for attr, factor in zip(self.schema.attributes, term.factors):
            f = [float(v) for v in factor]
            if any(v not in (0.0, 1.0) for v in f):
                return
            ticks[attr.name] = [] if all(v == 1.0 for v in f) else [v == 1.0 for v in f]
        widgets = [cb for cbs in self.checks.values() for cb in cbs] + [self.weight]
        for w in widgets:
            w.blockSignals(True)
        try:
            for name, cbs in self.checks.items():
                want = ticks.get(name) or [False] * len(cbs)
                for cb, on in zip(cbs, want):
                    cb.setChecked(on)
            self.weight.setValue(term.weight)
        finally:
            for w in widgets:
                w.blockSignals(False)

    def _mechanism_chosen(self) -> None:
        """Write the chosen mechanism into a posterior's text form (or take it out: dpdesk chooses)."""
        text = self.text.text()
        if kind_of_text(text).name != "posterior":
            return
        key = self.mechanism.currentData()
        text = _MECHANISM_OPTION.sub("", text)
        if key:
            text = text.rstrip().removesuffix(")") + f"; mechanism={key})"
        self.text.setText(text)

    def set_values(
        self, text: str, eps: float | None, delta: float | None, requester: str, alpha: float | None = None
    ) -> None:
        """Start from an existing request's values (editing a pending request)."""
        self.price.setCurrentIndex(1 if alpha is not None else 0 if eps is not None else 2)
        if eps is not None:
            self.eps.setValue(eps)
        if delta is not None:
            self.delta.setValue(delta)
        if alpha is not None:
            self.alpha.setValue(alpha)
        self.requester.setText(requester)
        self.text.setText(text)

    def keep_query(self, query: Query) -> None:
        """Edit a request whose query has no text form: keep ``query`` as recorded unless a text form is
        typed (or labels ticked) to replace it."""
        self.kept = query
        self.kept_note.setText(
            f"Query as recorded (an index list with no text form): "
            f"{describe_query(query, self.schema)}. It is kept while the text below is "
            "empty; type a text form or tick labels to replace it."
        )
        self.kept_note.setVisible(True)
        self.text.setPlaceholderText("empty: keep the recorded query")
        self.text.setText("")
        self._validate("")

    def submit_values(self) -> None:
        """OK: hand the values to ``submit``; stay open with its message if it refuses them."""
        if self.submit is not None:
            try:
                self.result_value = self.submit(*self.values())
            except DpdeskError as exc:
                self.status.setText(f"✗ {exc}")
                self.status.setStyleSheet("color: #a8321f;")
                return
        self.accept()

    def values(self) -> tuple[Any, float | None, float | None, str, float | None]:
        """(query, eps, delta, requester, alpha): the query is the typed text form, or the kept query's JSON;
        a count states its accuracy and confidence (as the miss probability delta), another kind what
        its price says."""
        text = self.text.text().strip()
        query: Any = self.kept.to_json() if self.kept is not None and not text else text
        eps, delta, alpha = self.eps.value(), self.delta.value(), None
        if kind_of_text(text).name != "count":
            by = self.price.currentIndex()
            if by == 1:
                eps, alpha = None, self.alpha.value()
                delta = None if kind_of_text(text).name == "posterior" else delta
            elif by == 2:
                eps = delta = None
        return query, eps, delta, self.requester.text().strip(), alpha
