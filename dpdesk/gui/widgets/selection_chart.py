"""The output probabilities of a private max/argmax, for the curator's eyes only.

A selection release (report-noisy-max, :mod:`dpdesk.engine.selection.mechanism`) publishes one label.
Its exact output probabilities are computed from the data, so the bar chart carries the PRIVATE badge
and says that only one draw is released; the public accuracy statement (from public inputs only) sits
below it and is what a requester may be told. After the release the drawn label is outlined.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from dpdesk.gui.widgets.badge import PrivateBadge
from dpdesk.gui.widgets.plots import show_axes, show_empty

_BAR = "#1f77b4"
_DRAWN = "#d62728"


class SelectionChart(QWidget):
    """Bars of ``Pr(output = label)`` over the candidate labels, a PRIVATE banner and the public accuracy."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        top = QHBoxLayout()
        self.title = QLabel("Output probabilities")
        self.title.setWordWrap(True)
        self.badge = PrivateBadge("these output probabilities")
        self.note = QLabel("output probabilities computed from the data — only one draw is released")
        self.note.setStyleSheet("color: #c0392b;")
        top.addWidget(self.badge)
        top.addWidget(self.note)
        top.addStretch(1)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.setLabel("left", "probability")
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.plot.showGrid(y=True, alpha=0.2)
        self.accuracy = QLabel("")
        self.accuracy.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.title)
        lay.addLayout(top)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.accuracy)
        self._bars: pg.BarGraphItem | None = None
        self._drawn: pg.BarGraphItem | None = None
        self.labels: tuple[str, ...] = ()
        self.probabilities = np.zeros(0)
        self.clear()

    def set_selection(
        self,
        labels: Sequence[str],
        probabilities: np.ndarray,
        accuracy_text: str,
        title: str = "Output probabilities",
        released: int | None = None,
    ) -> None:
        """Show ``probabilities`` (one per label), the public ``accuracy_text`` and the drawn label if any."""
        p = np.asarray(probabilities, dtype=float)
        if p.shape != (len(labels),):
            raise ValueError(f"{len(labels)} labels but {p.size} probabilities")
        self.clear()
        show_axes(self.plot)
        self.plot.showGrid(x=False, y=True, alpha=0.2)
        self.plot.setMouseEnabled(x=False, y=False)
        self.labels, self.probabilities = tuple(labels), p
        self.title.setText(title)
        x = np.arange(p.size)
        self._bars = pg.BarGraphItem(x=x, height=p, width=0.85, brush=_BAR, pen=None)
        self.plot.addItem(self._bars)
        step = max(1, p.size // 12)  # a readable number of tick labels
        self.plot.getAxis("bottom").setTicks([[(int(i), str(labels[i])) for i in range(0, p.size, step)]])
        self.plot.setXRange(-0.6, p.size - 0.4, padding=0)
        self.plot.setYRange(0, max(float(p.max()), 1e-12) * 1.1, padding=0)
        self.accuracy.setText(f"Public accuracy: {accuracy_text}")
        if released is not None:
            self.mark_released(released)

    def mark_released(self, index: int) -> None:
        """Outline the label that was drawn (and released)."""
        if not 0 <= index < len(self.labels):
            raise ValueError(f"released index {index} outside 0..{len(self.labels) - 1}")
        if self._drawn is not None:
            self.plot.removeItem(self._drawn)
        self._drawn = pg.BarGraphItem(
            x=[index],
            height=[self.probabilities[index]],
            width=0.85,
            brush=None,
            pen=pg.mkPen(_DRAWN, width=3),
        )
        self.plot.addItem(self._drawn)
        self.title.setText(f"{self.title.text()} — released: {self.labels[index]}")

    def clear(self) -> None:
        """No selection: the plot says what will be there instead of showing empty axes."""
        show_empty(self.plot, "Preview to see each label's probability of being drawn")
        self._bars = self._drawn = None
        self.labels, self.probabilities = (), np.zeros(0)
        self.accuracy.setText("")
