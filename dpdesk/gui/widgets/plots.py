"""pyqtgraph, configured once for dpdesk's plots.

Plot modules import ``pg`` from here so the global options are set before the first plot exists,
without the start-up path importing pyqtgraph at all.
"""

import pyqtgraph as pg

pg.setConfigOptions(antialias=True)

__all__ = ["pg"]  # and show_empty, show_axes below


def show_empty(plot: "pg.PlotWidget", message: str) -> None:
    """An empty plot says why in its middle, without axes that promise data (no placeholder 0…1 scales)."""
    item = plot.plotItem
    item.clear()
    if item.legend is not None:
        item.legend.clear()
    for side in ("left", "bottom"):
        item.hideAxis(side)
    item.showGrid(x=False, y=False)
    text = pg.TextItem(message, color="#666", anchor=(0.5, 0.5))
    item.addItem(text)
    text.setPos(0, 0)
    item.setRange(xRange=(-1, 1), yRange=(-1, 1), padding=0)
    item.vb.setMouseEnabled(x=False, y=False)


def show_axes(plot: "pg.PlotWidget", grid: bool = True) -> None:
    """Undo :func:`show_empty` before drawing data."""
    item = plot.plotItem
    for side in ("left", "bottom"):
        item.showAxis(side)
    item.showGrid(x=grid, y=grid, alpha=0.2)
    item.vb.setMouseEnabled(x=True, y=True)


__all__ += ["show_axes", "show_empty"]
