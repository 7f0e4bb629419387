"""The query builder: tick labels per attribute and set a weight, or type the text form.

Both routes end in the DESIGN §6 text form, parsed by the engine (``parse_query``) on every edit so
the curator sees at once whether the query is valid, and if not, where (the engine's message names
the column). The builder's checkboxes produce text through the engine's ``count`` and
``format_terms``; the dialog returns (text, ε, δ, requester). Given ``submit``, OK hands the values to
it and closes only if it succeeds: a refused request (ε = 0, a bad query) is explained in place and
nothing typed is lost.

A pending request whose query is an index list with no text form (an irregular set of cells, as a
CSV or the command line may bring) is edited with :meth:`QueryBuilderDialog.keep_query`: the query is
named by its cells' labels and kept exactly as recorded while ε, δ and the requester change; typing a
text form (or ticking labels) replaces it, and clearing the text keeps it again.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtWidgets import (
    QCheckBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout,
    QLabel, QLineEdit, QScrollArea, QVBoxLayout, QWidget,
)

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.queries.query import Query, count
from dpdesk.engine.queries.text import describe_query, format_terms, parse_query
from dpdesk.engine.schema import Schema
from dpdesk.gui.glossary import tip


class QueryBuilderDialog(QDialog):
    """New-request dialog over a schema."""

    def __init__(self, schema: Schema, parent: QWidget | None = None,
                 submit: Callable[[str, float, float, str], Any] | None = None, title: str = "New request") -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.schema = schema
        self.submit = submit
        self.result_value: Any = None
        self.query = None
        self.kept: Query | None = None  # an index-list query kept as recorded while the text is empty
        lay = QVBoxLayout(self)
        boxes = QWidget()
        grid = QGridLayout(boxes)
        self.checks: dict[str, list[QCheckBox]] = {}
        for i, attr in enumerate(schema.attributes):
            group = QGroupBox(f"{attr.name} (none ticked = any)")
            gl = QHBoxLayout(group)
            self.checks[attr.name] = []
            for label in attr.labels:
                cb = QCheckBox(label)
                cb.toggled.connect(self._from_checks)
                gl.addWidget(cb)
                self.checks[attr.name].append(cb)
            gl.addStretch(1)
            grid.addWidget(group, i, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(boxes)
        lay.addWidget(scroll, 1)
        form = QFormLayout()
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
        self.text.setPlaceholderText('e.g. count(age="25-34", income=">50K") or 2*count(income=">50K")')
        self.text.textChanged.connect(self._validate)
        form.addRow("query (text form)", self.text)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        form.addRow("", self.status)
        self.eps = QDoubleSpinBox()
        self.eps.setRange(0.0, 1e9)  # the store says why 0 is refused, in place
        self.eps.setDecimals(4)
        self.eps.setValue(50.0)
        form.addRow("accuracy ±ε (half-width)", self.eps)
        form.labelForField(self.eps).setToolTip(tip("eps"))
        self.eps.setToolTip(tip("eps"))
        self.delta = QDoubleSpinBox()
        self.delta.setRange(1e-6, 0.999999)
        self.delta.setDecimals(6)
        self.delta.setValue(0.05)
        form.addRow("δ (1 − confidence)", self.delta)
        form.labelForField(self.delta).setToolTip(tip("delta"))
        self.delta.setToolTip(tip("delta"))
        self.requester = QLineEdit()
        form.addRow("requester", self.requester)
        lay.addLayout(form)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.submit_values)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self._from_checks()

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
        ok_btn = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        if self.kept is not None and not text.strip():
            q = self.query = self.kept
            self.status.setText(f"✓ keeps the recorded query — sensitivity {q.sensitivity:g}, "
                                f"{q.support_size()} of {q.n_cells} cells")
            self.status.setStyleSheet("color: #237a36;")
            ok_btn.setEnabled(True)
            return
        try:
            q = parse_query(text, self.schema)
        except DpdeskError as exc:
            self.query = None
            self.status.setText(f"✗ {exc}")
            self.status.setStyleSheet("color: #a8321f;")
            ok_btn.setEnabled(False)
            return
        self.query = q
        self.status.setText(f"✓ valid — sensitivity {q.sensitivity:g}, {q.support_size()} of {q.n_cells} cells")
        self.status.setStyleSheet("color: #237a36;")
        ok_btn.setEnabled(True)

    def set_values(self, text: str, eps: float, delta: float, requester: str) -> None:
        """Start from an existing request's values (editing a pending request)."""
        self.text.setText(text)
        self.eps.setValue(eps)
        self.delta.setValue(delta)
        self.requester.setText(requester)

    def keep_query(self, query: Query) -> None:
        """Edit a request whose query has no text form: keep ``query`` as recorded unless a text form is
        typed (or labels ticked) to replace it."""
        self.kept = query
        self.kept_note.setText(f"Query as recorded (an index list with no text form): "
                               f"{describe_query(query, self.schema)}. It is kept while the text below is "
                               "empty; type a text form or tick labels to replace it.")
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

    def values(self) -> tuple[Any, float, float, str]:
        """(query, ε, δ, requester): the query is the typed text form, or the kept query's JSON."""
        text = self.text.text().strip()
        query: Any = self.kept.to_json() if self.kept is not None and not text else text
        return query, self.eps.value(), self.delta.value(), self.requester.text().strip()
