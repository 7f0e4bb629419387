"""The last step of *New project*: what is fixed for the project's life — total budget, δ cap and
accounting mode (pure ε, or zCDP with the δ its total is stated at).

The total budget is the most α any cell may be charged; the δ cap the most δ any cell may reach over
the (α, δ) releases charging it (a smooth-sensitivity posterior, for instance). 0, the default, allows
pure α-DP releases only. The accounting mode says how a cell's costs add up; one sentence under the
choice says when each mode is the better one (engine/budget/mode.py ``MODES``). Everything is checked by
the engine's own rules as it is typed; OK stays off until it holds, with the reason on one line.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QWidget,
)

from dpdesk.engine.budget.accounting import check_delta_cap
from dpdesk.engine.budget.mode import MODES, ZcdpAccounting
from dpdesk.engine.errors import DpdeskError
from dpdesk.gui.widgets.glossary import tip
from dpdesk.gui.widgets.screen_fit import keep_on_screen


class NewProjectDialog(QDialog):
    """Total budget α and δ cap of a project about to be created."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle("New project: privacy limits")
        form = QFormLayout(self)
        self.budget = QDoubleSpinBox(decimals=4, minimum=1e-4, maximum=1e6, value=1.0, singleStep=0.1)
        self.budget.setToolTip(tip("alpha"))
        form.addRow("Total privacy budget α (the most α any cell may be charged)", self.budget)
        self.delta_cap = QLineEdit("0")
        self.delta_cap.setObjectName("deltaCap")
        self.delta_cap.setToolTip(
            "The most δ any cell may reach, summed over the (α, δ) releases that charge it "
            "(e.g. a smooth-sensitivity posterior). 0: pure α-DP releases only. Fixed for "
            "the project's life, like the total budget."
        )
        form.addRow("δ cap (0: pure α-DP only; e.g. 1e-6)", self.delta_cap)
        self._accounting_rows(form)
        self.status = QLabel("")
        self.status.setStyleSheet("color: #a8321f;")
        form.addRow(self.status)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self.delta_cap.textChanged.connect(self._check)
        self.accounting.currentIndexChanged.connect(self._check)
        self.delta.textChanged.connect(self._check)
        self._check()

    def _accounting_rows(self, form: QFormLayout) -> None:
        """The accounting mode, its δ (zCDP only) and when each mode is the better choice."""
        self.accounting = QComboBox()
        self.accounting.setObjectName("accounting")
        self.accounting.addItem("pure (Laplace noise)", "pure")
        self.accounting.addItem("zCDP (Gaussian noise, the total stated with a δ)", "zcdp")
        form.addRow("Accounting", self.accounting)
        self.delta = QLineEdit("1e-6")
        self.delta.setObjectName("zcdpDelta")
        self.delta.setToolTip(
            "The δ of a zCDP project's total (ε, δ): the largest cell's ρ is stated as ε at it."
        )
        form.addRow("δ of the total (zCDP only)", self.delta)
        self.when = QLabel(f"• {MODES['pure']}\n• {MODES['zcdp']}")
        self.when.setObjectName("accountingWhen")
        self.when.setWordWrap(True)
        form.addRow(self.when)

    def mode(self) -> tuple[str, float | None]:
        """``("pure", None)`` or ``("zcdp", δ)``, checked (DpdeskError naming the problem otherwise)."""
        if self.accounting.currentData() != "zcdp":
            return "pure", None
        text = self.delta.text().strip()
        try:
            value = float(text)
        except ValueError:
            raise DpdeskError(f"δ of the total ({text!r}) must be a number, e.g. 1e-6") from None
        ZcdpAccounting(self.budget.value(), value)  # checks δ in (0, 1)
        return "zcdp", value

    def cap(self) -> float:
        """The δ cap typed, checked (DpdeskError naming the problem otherwise)."""
        text = self.delta_cap.text().strip()
        try:
            value = float(text)
        except ValueError:
            raise DpdeskError(f"δ cap ({text!r}) must be a number, e.g. 0 or 1e-6") from None
        check_delta_cap(value)
        return value

    def _check(self) -> None:
        self.delta.setEnabled(self.accounting.currentData() == "zcdp")
        try:
            self.cap()
            self.mode()
        except DpdeskError as exc:
            self.status.setText(f"✗ {exc}")
            self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(False)
            return
        self.status.setText("")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(True)

    def values(self) -> tuple[float, float, str, float | None]:
        """``(total budget, δ cap, accounting mode, δ of a zCDP total)``."""
        return self.budget.value(), self.cap(), *self.mode()

    @classmethod
    def ask(cls, parent: QWidget | None) -> tuple[float, float, str, float | None] | None:
        """``(total budget, δ cap, accounting mode, zCDP δ)``, or None when cancelled."""
        dlg = cls(parent)
        return dlg.values() if dlg.exec() == QDialog.DialogCode.Accepted else None
