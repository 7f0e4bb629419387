"""The charts the app draws beside a plan of a release kind, found by the kind's name: the one place the
app adds to a kind's words (``kind.preview``/``kind.outcome``, shown for every kind). A kind without a
chart here is shown by its words alone, so a new kind needs nothing in the app.

Each :class:`KindChart` makes its widget once, draws a plan (with the private values it asks the data
for, computed on a worker — a max/argmax's exact output law) and the release once recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QWidget

from dpdesk.gui.model.state import PrivateWork
from dpdesk.gui.widgets.proportions_plot import ProportionsPlot
from dpdesk.gui.widgets.selection_chart import SelectionChart

if TYPE_CHECKING:
    from dpdesk.engine.schema import Schema
    from dpdesk.store.release import Release

__all__ = ["CHARTS", "KindChart", "chart_for"]


class KindChart:
    """A kind's chart: its widget, what it reads of the data (for the curator's eyes), how it draws."""

    def widget(self) -> QWidget:
        raise NotImplementedError

    @staticmethod
    def private(plan: Any, schema: Schema) -> PrivateWork | None:
        """Work reading the data for the chart, given a sibling project on a worker (None: none). Called
        on the worker: it makes no widget."""
        return None

    def show_plan(self, plan: Any, private: Any, schema: Schema | None) -> None:
        raise NotImplementedError

    def show_release(self, plan: Any, release: Release) -> None:
        raise NotImplementedError

    def clear(self) -> None:
        pass


class SelectionView(KindChart):
    """A max/argmax: the mechanism's exact output probabilities (PRIVATE), the drawn label outlined."""

    def __init__(self) -> None:
        self.chart = SelectionChart()

    def widget(self) -> QWidget:
        return self.chart

    @staticmethod
    def private(plan: Any, schema: Schema) -> PrivateWork:
        return lambda sibling: plan.rnm.probabilities(sibling.cube().counts, schema)

    def show_plan(self, plan: Any, private: Any, schema: Schema | None) -> None:
        q = plan.rnm.query
        self.chart.set_selection(
            q.candidates(schema),
            private,
            plan.rnm.accuracy_text(schema, plan.delta),
            title=f"Output probabilities of {q.text}",
        )

    def show_release(self, plan: Any, release: Release) -> None:
        if self.chart.labels:
            self.chart.mark_released(int(release.entry.payload["index"]))

    def clear(self) -> None:
        self.chart.clear()


class PosteriorView(KindChart):
    """A posterior of proportions: prior, reference posterior and what each mechanism releases there on
    average; after the release, the released posterior beside the Laplace baseline at the same α."""

    def __init__(self) -> None:
        self.plot = ProportionsPlot()

    def widget(self) -> QWidget:
        return self.plot

    def show_plan(self, plan: Any, private: Any, schema: Schema | None) -> None:
        from dpdesk.engine.dirichlet.alternatives import expected_release_series

        self.plot.set_series(plan.query.labels, expected_release_series(plan))

    def show_release(self, plan: Any, release: Release) -> None:
        from dpdesk.engine.dirichlet.alternatives import released_series
        from dpdesk.engine.dirichlet.plan import PosteriorRelease

        posterior = PosteriorRelease.from_payload(release.entry.payload)
        self.plot.set_series(plan.query.labels, released_series(plan, posterior))

    def clear(self) -> None:
        self.plot.clear_plot()


# kind name -> the chart class drawn beside its plans
CHARTS: dict[str, type[KindChart]] = {"selection": SelectionView, "posterior": PosteriorView}


def chart_for(kind_name: str) -> type[KindChart] | None:
    return CHARTS.get(kind_name)
