"""The posterior mass plot: bars (or steps, for fine grids), credible interval, estimate, ±ε band.

Everything drawn is a field of the engine's :class:`~dpdesk.engine.answering.workflow.Assessment`: the
posterior's grid and mass, the credible interval, the estimate and the request's ε. Nothing is
computed here beyond placing the ±ε band at ``estimate ± eps``.
"""

from __future__ import annotations

import numpy as np
from dpdesk.gui.plots import pg
from PySide6.QtWidgets import QWidget

BAR_LIMIT = 160  # more grid points than this are drawn as steps


class PosteriorPlot(pg.PlotWidget):
    """Posterior mass function of the selected request's true answer."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, background="w")
        self.setMinimumHeight(180)
        self.plotItem.setLabel("bottom", "true answer θ")
        self.plotItem.setLabel("left", "posterior mass")
        self.plotItem.showGrid(x=True, y=True, alpha=0.2)
        self.plotItem.addLegend(offset=(-10, 10))
        self.mode = "empty"
        self._message = pg.TextItem("", color="#555", anchor=(0.5, 0.5))

    def clear_plot(self, message: str = "") -> None:
        self.plotItem.clear()
        legend = self.plotItem.legend
        if legend is not None:
            legend.clear()
        self.mode = "empty"
        if message:
            self._message.setText(message)
            self.plotItem.addItem(self._message)
            self._message.setPos(0, 0)
            self.plotItem.setRange(xRange=(-1, 1), yRange=(-1, 1))

    def set_assessment(self, a) -> None:
        post = a.posterior
        if post is None:
            self.clear_plot("Not estimable from history:\nno posterior until a fresh answer is released")
            return
        self.clear_plot()
        grid, mass = np.asarray(post.grid), np.asarray(post.mass)
        eps = a.request.eps
        est = a.estimate.estimate
        if a.interval is not None:
            ci = pg.LinearRegionItem(values=a.interval, movable=False, brush=pg.mkBrush(70, 130, 220, 60),
                                     pen=pg.mkPen(70, 130, 220, 160))
            ci.setZValue(-10)
            self.plotItem.addItem(ci)
            self.plotItem.legend.addItem(pg.PlotDataItem(pen=pg.mkPen(70, 130, 220, 200, width=8)),
                                         f"{100 * a.interval_confidence:.2f}% credible interval")
        if len(grid) <= BAR_LIMIT:
            self.mode = "bars"
            bars = pg.BarGraphItem(x=grid, height=mass, width=post.spacing * 0.9, brush="#4a4a4a", pen=None)
            self.plotItem.addItem(bars)
        else:
            self.mode = "steps"
            half = post.spacing / 2
            edges = np.append(grid - half, grid[-1] + half)
            self.plotItem.addItem(pg.PlotDataItem(edges, mass, stepMode="center", pen=pg.mkPen("#333", width=1.5),
                                                  fillLevel=0, brush=(80, 80, 80, 60)))
        line = pg.InfiniteLine(pos=est, angle=90, pen=pg.mkPen("#c0392b", width=2),
                               label=f"estimate {est:.6g}", labelOpts={"position": 0.92, "color": "#c0392b"})
        self.plotItem.addItem(line)
        # the window an inferred answer releases: θ̂ ± ε, or under known bounds the 2ε window of most mass
        bounded = getattr(a, "prior", "flat") != "flat" and a.release_interval is not None
        window = tuple(a.release_interval) if bounded else (est - eps, est + eps)
        for x in window:
            self.plotItem.addItem(pg.InfiniteLine(pos=x, angle=90, pen=pg.mkPen("#e08a00", width=1.5,
                                                                                  style=pg.QtCore.Qt.PenStyle.DashLine)))
        self.plotItem.legend.addItem(pg.PlotDataItem(pen=pg.mkPen("#e08a00", width=2, style=pg.QtCore.Qt.PenStyle.DashLine)),
                                     f"best 2ε window (known bounds), ε = {eps:g}" if bounded else f"requested ±ε = ±{eps:g}")
        # show the interesting part: a few times the wider of ±ε and the credible interval
        half = max(eps, (a.interval[1] - a.interval[0]) / 2 if a.interval else 0.0, post.spacing)
        lo, hi = max(grid[0], est - 2.5 * half), min(grid[-1], est + 2.5 * half)
        lo, hi = min(lo, window[0]), max(hi, window[1])
        pad = 0.03 * (hi - lo or 1.0)
        self.plotItem.setXRange(lo - pad, hi + pad, padding=0)
        self.plotItem.setYRange(0, float(mass.max()) * 1.15 if mass.size else 1.0, padding=0)
