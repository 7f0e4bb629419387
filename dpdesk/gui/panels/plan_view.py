"""What the answer panel shows for a queued request of a kind other than a count: its plan in the kind's
own words (what the CLI prints: ``kind.preview``), then its release (``kind.outcome``), beside the
kind's chart when it has one (:mod:`dpdesk.gui.kinds.kind_views`: a max/argmax's exact output probabilities,
for the curator's eyes only; a posterior's prior, reference posterior and baseline). A kind without a
chart is shown by its words alone.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QStackedWidget, QVBoxLayout, QWidget

from dpdesk.gui.kinds.kind_views import CHARTS, KindChart
from dpdesk.gui.widgets.screen_fit import scrolling

if TYPE_CHECKING:
    from dpdesk.engine.kinds.base import Kind
    from dpdesk.engine.mechanisms.base import ReleasePlan
    from dpdesk.engine.schema import Schema
    from dpdesk.store.release import Release


class PlanView(QWidget):
    """A plan (and, once recorded, its release) of one queued request of any kind."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text = QLabel("")
        self.text.setObjectName("planText")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.views: dict[str, KindChart] = {name: chart() for name, chart in CHARTS.items()}
        self.charts = QStackedWidget()
        for view in self.views.values():
            self.charts.addWidget(view.widget())
        self.charts.setMinimumHeight(150)  # as a count's posterior plot: never a strip
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        # the words scroll when the panel is short (a posterior's preview is a dozen lines at 1024×700)
        self.words = scrolling(self.text, 90)
        lay.addWidget(self.words, 1)
        lay.addWidget(self.charts, 2)

    # the charts by name, as the views draw them (tests and the screenshots reach them so)
    @property
    def selection(self) -> QWidget:  # a SelectionChart
        return self.views["selection"].widget()

    @property
    def proportions(self) -> QWidget:  # a ProportionsPlot
        return self.views["posterior"].widget()

    def clear(self) -> None:
        self.text.setText("")
        for view in self.views.values():
            view.clear()

    def _chart(self, kind: Kind) -> KindChart | None:
        view = self.views.get(kind.name)
        self.charts.setVisible(view is not None)
        if view is not None:
            self.charts.setCurrentWidget(view.widget())
        return view

    def show_plan(
        self, kind: Kind, plan: ReleasePlan, private: object = None, schema: Schema | None = None
    ) -> None:
        """The plan's words, and its chart (``private``: what the chart read of the data, if anything)."""
        lines = [html.escape(t) for t in kind.preview(plan)]
        if not plan.releasable:
            lines[-1] = f"<b style='color:#c0392b'>{lines[-1]}</b>"
        self.text.setText("<br>".join(lines))
        view = self._chart(kind)
        if view is not None:
            view.show_plan(plan, private, schema)

    def show_release(self, kind: Kind, plan: ReleasePlan, release: Release) -> None:
        """The recorded release: its words, and the chart's record of it."""
        self.text.setText("<br>".join(html.escape(t) for t in kind.outcome(release, plan)))
        view = self._chart(kind)
        if view is not None:
            view.show_release(plan, release)
