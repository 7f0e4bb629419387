"""What the answer panel shows for a queued max/argmax or posterior request: its plan, then its release.

A request of these kinds is not assessed against history; its kind's release plan is priced from
public inputs (:func:`dpdesk.store.assessing.assess`). The view shows the plan in the words the
CLI prints (the kind's ``preview``) and its chart:

- max/argmax: the mechanism's exact output probabilities, computed from the data for the curator's
  eyes only (:class:`~dpdesk.gui.selection_chart.SelectionChart`, PRIVATE badge), with the public
  accuracy statement; after the release the drawn label is outlined;
- posterior: the prior, the posterior at the public reference table, and what the requested mechanism
  and the Laplace baseline release there on average (:class:`~dpdesk.gui.proportions_plot.ProportionsPlot`);
  after the release, the released posterior beside the prior and the Laplace baseline at the same α.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QStackedWidget, QVBoxLayout, QWidget

from dpdesk.gui.proportions_plot import ProportionsPlot
from dpdesk.gui.selection_chart import SelectionChart


class PlanView(QWidget):
    """A selection or posterior plan (and, once recorded, its release) of one queued request."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text = QLabel("")
        self.text.setObjectName("planText")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.selection = SelectionChart()
        self.proportions = ProportionsPlot()
        self.charts = QStackedWidget()
        self.charts.addWidget(self.selection)
        self.charts.addWidget(self.proportions)
        self.charts.setMinimumHeight(200)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.text)
        lay.addWidget(self.charts, 1)

    def clear(self) -> None:
        self.text.setText("")
        self.selection.clear()
        self.proportions.clear_plot()

    def show_plan(self, kind: Any, plan: Any, probabilities: Any = None, schema: Any = None) -> None:
        """The plan's words, and its chart (``probabilities``: a max/argmax's private output law)."""
        lines = [html.escape(t) for t in kind.preview(plan)]
        if not plan.releasable:
            lines[-1] = f"<b style='color:#c0392b'>{lines[-1]}</b>"
        self.text.setText("<br>".join(lines))
        if kind.name == "selection":
            self.charts.setCurrentWidget(self.selection)
            q = plan.rnm.query
            self.selection.set_selection(
                q.candidates(schema),
                probabilities,
                plan.rnm.accuracy_text(schema, plan.delta),
                title=f"Output probabilities of {q.text}",
            )
        else:
            from dpdesk.engine.dirichlet.alternatives import expected_release_series

            self.charts.setCurrentWidget(self.proportions)
            self.proportions.set_series(plan.query.labels, expected_release_series(plan))

    def show_release(self, kind: Any, plan: Any, release: Any) -> None:
        """The recorded release: the drawn label outlined, or the released posterior beside the baseline."""
        lines = [html.escape(t) for t in kind.outcome(release, plan)]
        self.text.setText("<br>".join(lines))
        if kind.name == "selection":
            if self.selection.labels:
                self.selection.mark_released(int(release.entry.payload["index"]))
        else:
            from dpdesk.engine.dirichlet.alternatives import released_series
            from dpdesk.engine.dirichlet.plan import PosteriorRelease

            posterior = PosteriorRelease.from_payload(release.entry.payload)
            self.charts.setCurrentWidget(self.proportions)
            self.proportions.set_series(plan.query.labels, released_series(plan, posterior))
