"""The posterior of proportions: Beta density curves (two categories) or per-category bars with bands.

It draws named Dirichlet parameter vectors handed to it — the prior, the released posterior, an
alternative — using the engine's :mod:`dpdesk.engine.dirichlet.display` for densities and credible
bands; nothing here reads data or computes what the engine owns.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
from PySide6.QtWidgets import QWidget

from dpdesk.engine.dirichlet.display import DirichletMixture, bands_of, curve_range, density_of
from dpdesk.gui.widgets.plots import pg, show_axes, show_empty

# one style per role, in the order series are usually given: prior, released, alternative
_COLOURS = ("#8a8a8a", "#1f5fa8", "#c0392b", "#2e8b57")
_DASH = (True, False, False, False)


class ProportionsPlot(pg.PlotWidget):
    """Prior, released posterior and alternatives of a categorical attribute's proportions."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, background="w")
        self.setMinimumHeight(200)
        self.plotItem.showGrid(x=True, y=True, alpha=0.2)
        self.plotItem.addLegend(offset=(-10, 10))
        self.clear_plot()

    def clear_plot(self, message: str = "Preview to see the prior and what each mechanism releases") -> None:
        show_empty(self, message)
        self.mode = "empty"

    def set_series(
        self,
        labels: Sequence[str],
        series: Sequence[tuple[str, np.ndarray | DirichletMixture]],
        level: float = 0.95,
    ) -> None:
        """Draw each ``(name, Dirichlet parameters or a mixture of them)``; two labels give Beta curves,
        more give bars (a mixture: its mean and the band of its marginal law)."""
        self.clear_plot()
        if not series:
            return
        self.plotItem.clear()
        show_axes(self)
        if len(labels) == 2:
            self._curves(labels, series)
        else:
            self._bars(labels, series, level)

    def _pen(self, i: int) -> object:
        style = pg.QtCore.Qt.PenStyle.DashLine if _DASH[i % len(_DASH)] else pg.QtCore.Qt.PenStyle.SolidLine
        return pg.mkPen(_COLOURS[i % len(_COLOURS)], width=2, style=style)

    def _curves(self, labels: Sequence[str], series: Sequence[tuple[str, np.ndarray]]) -> None:
        self.mode = "curves"
        # the window where the posteriors (not the flat prior) lie; the prior is drawn on it too
        lo, hi = curve_range([p for _, p in (series[1:] or series)])
        grid = np.linspace(max(lo, 0.0005), min(hi, 0.9995), 800)
        top = 0.0
        for i, (name, params) in enumerate(series):
            mixture = isinstance(params, DirichletMixture)
            dens = density_of(params if mixture else np.asarray(params), grid)
            top = max(top, float(np.max(dens[np.isfinite(dens)])))
            label = name if mixture else f"{name}: Beta({params[0]:.4g}, {params[1]:.4g})"
            self.plotItem.plot(grid, dens, pen=self._pen(i), name=label)
        self.plotItem.setLabel("bottom", html.escape(f"share of {labels[0]!r}"))  # the label is rich text
        self.plotItem.setLabel("left", "density")
        self.plotItem.setXRange(lo, hi, padding=0.01)
        self.plotItem.setYRange(0, top * 1.1 if top > 0 else 1.0, padding=0)
        self.plotItem.getAxis("bottom").setTicks(None)

    def _bars(self, labels: Sequence[str], series: Sequence[tuple[str, np.ndarray]], level: float) -> None:
        self.mode = "bars"
        width = 0.8 / len(series)
        for i, (name, params) in enumerate(series):
            bands = bands_of(params if isinstance(params, DirichletMixture) else np.asarray(params), level)
            x = np.arange(len(labels)) - 0.4 + width * (i + 0.5)
            colour = _COLOURS[i % len(_COLOURS)]
            self.plotItem.addItem(
                pg.BarGraphItem(x=x, height=bands.mean, width=width * 0.9, brush=pg.mkBrush(colour), pen=None)
            )
            self.plotItem.addItem(
                pg.ErrorBarItem(
                    x=x,
                    y=bands.mean,
                    top=bands.high - bands.mean,
                    bottom=bands.mean - bands.low,
                    beam=width * 0.4,
                    pen=pg.mkPen("#222", width=1.2),
                )
            )
            self.plotItem.legend.addItem(
                pg.BarGraphItem(x=[0], height=[0], width=1, brush=pg.mkBrush(colour)), name
            )
        self.plotItem.setLabel(
            "bottom", f"category (bar: mean proportion; whiskers: {100 * level:g}% credible band)"
        )
        self.plotItem.setLabel("left", "proportion")
        self.plotItem.getAxis("bottom").setTicks([[(i, str(lab)) for i, lab in enumerate(labels)]])
        self.plotItem.setXRange(-0.6, len(labels) - 0.4, padding=0)
        self.plotItem.setYRange(0, 1, padding=0.02)
