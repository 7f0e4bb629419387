"""The posterior mass plot: bars (or steps, for fine grids), credible interval, estimate, ±ε band.

Everything drawn is a field of the engine's :class:`~dpdesk.engine.answering.workflow.Assessment`: the
posterior's grid and mass, the credible interval, the estimate and the request's ε. Nothing is
computed here beyond placing the ±ε band at ``estimate ± eps`` and, for a discrete-noise posterior
finer than the integers, summing its masses into bins of a readable width (:func:`readable_bins`).

Why bins: discrete (lattice) noise combined with non-integer BLUE weights puts θ's mass on a fine,
irregular set of points (0.39·N₁ + 0.61·N₂ …), so neighbouring grid points hold very different masses
and the mass function looks like a jagged comb although the distribution is smooth at the scale that
matters. Whole bins of consecutive grid points keep every probability exact (a bin's height is the
posterior probability of that bin) and show the shape; a count's bins are one unit wide and centred on
the integers — the values the true count can take — or a whole number of units when the view is wide.
An integer-lattice posterior (integer weights) keeps one bar per point, and a continuous one its curve.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtWidgets import QWidget

from dpdesk.engine.answering.rounding import format_value
from dpdesk.engine.mechanisms.registry import noise_family
from dpdesk.gui.widgets.plots import pg, show_axes, show_empty

BAR_LIMIT = 160  # more grid points than this are drawn as steps; bins of a discrete posterior: about this many in view


def _nice(x: float) -> float:
    """The smallest of 1, 2, 5 × 10ᵏ that is ≥ ``x``."""
    k = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * 10.0**k >= x * (1 - 1e-12):
            return m * 10.0**k
    return 10.0 ** (k + 1)  # pragma: no cover - 10 × 10ᵏ always qualifies


def value_step(query) -> float:
    """The step of the lattice the query's true value lives on: the coefficients' greatest common step
    (1 for a count; 2 for ``2*count(...)``; 0.5 for weights 0.5 and 1.5), or 0 when they share none."""
    v = np.abs(np.asarray(query.sparse()[1], dtype=float))
    v = v[v > 0]
    if v.size == 0:
        return 0.0
    if query.is_integer:
        return float(np.gcd.reduce(v.astype(np.int64)))
    step = float(v.min())
    ratio = v / step
    return step if np.all(np.abs(ratio - np.round(ratio)) <= 1e-9 * ratio) else 0.0


def readable_bins(post, step: float, view: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``(centres, masses, width)``: the posterior's probability of each bin of a readable width.

    The width is at least ``view / BAR_LIMIT`` and the grid step; given the true value's lattice
    ``step`` (:func:`value_step`; 1 for a count) it is a 1-2-5 multiple of it, else a 1-2-5 number.
    Bins ``[c − width/2, c + width/2)`` are centred on the width's multiples — for a count's unit bins,
    the integers it can take. A bin's mass is the posterior's own ``Pr(θ < right) − Pr(θ < left)``, so
    nothing is re-estimated here and the masses add up to the posterior's total.
    """
    grid, h = np.asarray(post.grid, dtype=float), float(post.spacing)
    want = max(view / BAR_LIMIT, h, step)
    width = step * _nice(want / step) if step > 0 else _nice(want)
    first = math.floor((grid[0] - h / 2) / width + 0.5)
    last = math.ceil((grid[-1] + h / 2) / width - 0.5)
    centres = width * np.arange(first, last + 1)
    edges = np.append(centres - width / 2, centres[-1] + width / 2)
    if post.method == "bandlimited":  # its exact reads are a transform each: draw from its binned masses
        below = post.drawn_less(edges)
    else:
        below = np.array([post.prob_less(float(e)) for e in edges])
    return centres, np.diff(below), width


class PosteriorPlot(pg.PlotWidget):
    """Posterior mass function of the selected request's true answer."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, background="w")
        self.setMinimumHeight(180)
        self.plotItem.setLabel("bottom", "true answer θ")
        self.plotItem.setLabel("left", "posterior mass")
        self.plotItem.getAxis("left").enableAutoSIPrefix(
            False
        )  # masses are probabilities: 0.3, not 300 × 0.001
        self.plotItem.showGrid(x=True, y=True, alpha=0.2)
        self.plotItem.addLegend(offset=(-10, 10))
        self.mode = "empty"  # "bars", "steps", "binned" (a discrete posterior summed into readable bins)
        self.bin_width: float | None = None
        self.clear_plot()

    def clear_plot(self, message: str = "Select a request to see its posterior") -> None:
        """Empty: the message in the middle, no axes that promise data."""
        self.plotItem.setTitle(None)
        self.bin_width = None
        self.mode = "empty"
        show_empty(self, message)

    def _ready(self) -> None:
        """Axes back for data (after :meth:`clear_plot`)."""
        self.plotItem.clear()
        if self.plotItem.legend is not None:
            self.plotItem.legend.clear()
        self.plotItem.setLabel("left", "posterior mass")
        show_axes(self)

    def set_assessment(self, a, title: str = "") -> None:
        """Draw ``a``'s posterior; ``title`` says whose it is when that needs saying (a decided request's)."""
        post = a.posterior
        if post is None:
            self.clear_plot("Not estimable from history:\nno posterior until a fresh answer is released")
            return
        self._ready()
        self.plotItem.setTitle(title or None, size="9pt")
        grid, mass = np.asarray(post.grid), np.asarray(post.mass)
        eps = a.request.eps
        if a.interval is not None:
            ci = pg.LinearRegionItem(
                values=a.interval,
                movable=False,
                brush=pg.mkBrush(70, 130, 220, 60),
                pen=pg.mkPen(70, 130, 220, 160),
            )
            ci.setZValue(-10)
            self.plotItem.addItem(ci)
            self.plotItem.legend.addItem(
                pg.PlotDataItem(pen=pg.mkPen(70, 130, 220, 200, width=8)),
                f"{100 * a.interval_confidence:.2f}% credible interval",
            )
        counts = a.request.query.is_integer
        est = a.estimate.estimate
        half = max(eps, (a.interval[1] - a.interval[0]) / 2 if a.interval else 0.0, post.spacing)
        self.bin_width = None
        step = value_step(a.request.query)
        if self._finer_than_readable(a, post, step):
            self.mode = "binned"
            centres, sums, width = readable_bins(post, step, 5 * half)
            self.bin_width, mass = width, sums
            self.plotItem.addItem(
                pg.BarGraphItem(x=centres, height=sums, width=width * 0.92, brush="#4a4a4a", pen=None)
            )
            self.plotItem.setLabel("left", f"posterior mass per bin of width {width:g}")
        elif len(grid) <= BAR_LIMIT:
            self.mode = "bars"
            bars = pg.BarGraphItem(x=grid, height=mass, width=post.spacing * 0.9, brush="#4a4a4a", pen=None)
            self.plotItem.addItem(bars)
        else:
            self.mode = "steps"
            edges = np.append(grid - post.spacing / 2, grid[-1] + post.spacing / 2)
            self.plotItem.addItem(
                pg.PlotDataItem(
                    edges,
                    mass,
                    stepMode="center",
                    pen=pg.mkPen("#333", width=1.5),
                    fillLevel=0,
                    brush=(80, 80, 80, 60),
                )
            )
        line = pg.InfiniteLine(
            pos=est,
            angle=90,
            pen=pg.mkPen("#c0392b", width=2),
            label=f"estimate {format_value(est, counts)}",
            labelOpts={"position": 0.92, "color": "#c0392b"},
        )
        self.plotItem.addItem(line)
        # the window an inferred answer releases: θ̂ ± ε, or under known bounds the 2ε window of most mass
        bounded = getattr(a, "prior", "flat") != "flat" and a.release_interval is not None
        window = tuple(a.release_interval) if bounded else (est - eps, est + eps)
        for x in window:
            self.plotItem.addItem(
                pg.InfiniteLine(
                    pos=x, angle=90, pen=pg.mkPen("#e08a00", width=1.5, style=pg.QtCore.Qt.PenStyle.DashLine)
                )
            )
        self.plotItem.legend.addItem(
            pg.PlotDataItem(pen=pg.mkPen("#e08a00", width=2, style=pg.QtCore.Qt.PenStyle.DashLine)),
            f"best 2ε window (known bounds), ε = {eps:g}" if bounded else f"requested ±ε = ±{eps:g}",
        )
        # show the interesting part: a few times the wider of ±ε and the credible interval
        lo, hi = max(grid[0], est - 2.5 * half), min(grid[-1], est + 2.5 * half)
        lo, hi = min(lo, window[0]), max(hi, window[1])
        pad = 0.03 * (hi - lo or 1.0)
        self.plotItem.setXRange(lo - pad, hi + pad, padding=0)
        self.plotItem.setYRange(0, float(mass.max()) * 1.15 if mass.size else 1.0, padding=0)

    @staticmethod
    def _finer_than_readable(a, post, step: float) -> bool:
        """True for discrete noise whose posterior lies on points finer than the values the query can
        take (non-integer weights; for a count, finer than the integers), or on no common step at all:
        its masses are summed into bins. Continuous noise keeps its curve, and a posterior on the
        query's own lattice keeps one bar per point."""
        est = a.estimate
        discrete = (
            any(
                noise_family(f).lattice
                for f, c in zip(est.families, np.asarray(est.coefficients).ravel())
                if c != 0
            )
            if est.families and est.coefficients is not None
            else False
        )
        return bool(discrete and len(post.grid) > 1 and (step == 0 or post.spacing < step * (1 - 1e-9)))
