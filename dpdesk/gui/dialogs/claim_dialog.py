"""The *Watch a claim* dialog: a query θ, a claim L₀ ≤ θ ≤ U₀ (one side may be open), a threshold τ and
a risk budget. It checks everything before it closes (the store's own checks, one line naming the
field) and says where claims must come from: public knowledge or policy, never the true counts.
"""

from __future__ import annotations

import math

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.schema import Schema
from dpdesk.gui.widgets.examples import count_example
from dpdesk.gui.widgets.screen_fit import keep_on_screen
from dpdesk.store.watch import claim_payload

ADVICE = (
    "Choose claims from public knowledge or policy (for example: groups of fewer than 5 people are "
    "sensitive), never by looking at the true counts. A claim picked because a cell <i>is</i> small, "
    "and releases declined because of it, tell the world the cell is small. dpdesk never suggests "
    "claims from the data."
)
SIDES = ("between", "at most", "at least")


def _number(text: str, field: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise DpdeskError(f"{field}: {text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise DpdeskError(f"{field}: {text.strip()!r} must be a finite number")
    return value


class ClaimDialog(QDialog):
    """Asks for one claim; :attr:`claim` holds ``(query, low, high, threshold, risk, name)`` once accepted."""

    def __init__(self, schema: Schema, query: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle("Watch a claim")
        self.schema = schema
        self.claim: tuple | None = None
        lay = QVBoxLayout(self)
        advice = QLabel(ADVICE)
        advice.setWordWrap(True)
        advice.setObjectName("claimAdvice")
        advice.setStyleSheet("QLabel { background: #fff4d6; padding: 6px; border-radius: 3px; }")
        lay.addWidget(advice)
        form = QFormLayout()
        self.query = QLineEdit(query)
        self.query.setPlaceholderText(count_example(schema))
        self.side = QComboBox()
        self.side.addItems(SIDES)
        self.low = QLineEdit("0")
        self.high = QLineEdit("")
        self.side.currentTextChanged.connect(self._sides)
        self.threshold = QLineEdit("0.8")
        self.risk = QLineEdit("0.05")
        self.name = QLineEdit("")
        self.name.setPlaceholderText("(the query's text)")
        for label, w, hint in (
            ("Query θ", self.query, "the count (or linear query) the claim is about"),
            ("Claim", self.side, "L₀ ≤ θ ≤ U₀, or one open side"),
            ("L₀", self.low, "lower end of the claim"),
            ("U₀", self.high, "upper end of the claim"),
            ("Threshold τ", self.threshold, "Pr(claim) must not reach τ, in (0, 1)"),
            (
                "Risk budget",
                self.risk,
                "the most probability, over all later releases and at any "
                "true θ in the claim, that Pr(claim) reaches τ; in (0, 1)",
            ),
            ("Name", self.name, "a label for lists and messages"),
        ):
            w.setToolTip(hint)
            form.addRow(label, w)
        self.form = form
        lay.addLayout(form)
        self.error = QLabel("")
        self.error.setObjectName("claimError")
        self.error.setStyleSheet("color: #a8321f;")
        self.error.setWordWrap(True)
        lay.addWidget(self.error)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Watch")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self._sides(self.side.currentText())
        self.resize(520, 0)

    def _sides(self, side: str) -> None:
        self.low.setEnabled(side in ("between", "at least"))
        self.high.setEnabled(side in ("between", "at most"))

    def read(self) -> tuple:
        """The claim as typed, checked (raises a one-line error naming the field)."""
        side = self.side.currentText()
        low = _number(self.low.text(), "L₀") if side in ("between", "at least") else None
        high = _number(self.high.text(), "U₀") if side in ("between", "at most") else None
        threshold = _number(self.threshold.text(), "threshold τ")
        risk = _number(self.risk.text(), "risk budget")
        query, name = self.query.text().strip(), self.name.text().strip()
        if not query:
            raise DpdeskError("query θ: type the query the claim is about")
        claim_payload(
            self.schema, query, low, high, threshold, risk, name, where="claim"
        )  # the store's checks
        return query, low, high, threshold, risk, name

    def accept(self) -> None:
        try:
            self.claim = self.read()
        except DpdeskError as exc:
            self.error.setText(str(exc))
            return
        super().accept()


def run_dialog(dialog: ClaimDialog) -> bool:
    """Show the dialog modally (a hook tests replace)."""
    return dialog.exec() == QDialog.DialogCode.Accepted
