"""A confidence, typed and shown as people state it (``95 %``), whose value is the miss probability δ.

The engine and the project file keep a request's accuracy as ``(eps, delta)`` — the half-width and the
probability of a miss — while the curator reads and types a confidence ("±20 at 95 %",
:mod:`dpdesk.engine.vocabulary`). :class:`ConfidenceBox` is a spin box whose :meth:`value` is δ (so the
code that reads ``value()`` and the stored requests are unchanged) and whose text is the confidence
``100 · (1 − δ)`` in percent; the arrows raise and lower the confidence.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QDoubleSpinBox, QWidget


class ConfidenceBox(QDoubleSpinBox):
    """A spin box showing the confidence ``1 − δ`` in percent; ``value()``/``setValue()`` are in δ."""

    def __init__(
        self,
        delta: float = 0.05,
        *,
        smallest: float = 1e-6,
        largest: float = 0.5,
        decimals: int = 6,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setDecimals(decimals)  # of δ: 6 decimals show a confidence to 4 (99.9999 %)
        self.setRange(smallest, largest)
        self.setSingleStep(0.01)
        self.setSuffix(" %")
        self.setValue(delta)

    def _number(self, text: str) -> str:
        return text.replace(self.suffix(), "").replace("%", "").strip()

    def textFromValue(self, value: float) -> str:
        shown = f"{100 * (1 - Decimal(repr(float(value)))):.{max(self.decimals() - 2, 0)}f}"
        return shown.rstrip("0").rstrip(".") if "." in shown else shown

    def valueFromText(self, text: str) -> float:
        try:
            return float(1 - Decimal(self._number(text)) / 100)
        except InvalidOperation:
            return self.value()

    def validate(self, text: str, pos: int) -> object:
        number = self._number(text)
        if number in ("", "."):
            return QValidator.State.Intermediate, text, pos
        try:
            delta = 1 - Decimal(number) / 100
        except InvalidOperation:
            return QValidator.State.Invalid, text, pos
        inside = Decimal(repr(self.minimum())) <= delta <= Decimal(repr(self.maximum()))
        return (QValidator.State.Acceptable if inside else QValidator.State.Intermediate), text, pos

    def stepBy(self, steps: int) -> None:
        super().stepBy(-steps)  # up raises the confidence, i.e. lowers δ
