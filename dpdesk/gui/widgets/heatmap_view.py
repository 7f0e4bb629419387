"""The per-cell privacy-budget heatmap (pyqtgraph ``ImageItem`` + ``ColorBarItem``).

It draws a 2-D matrix handed to it by the budget panel, labels the axes with attribute labels
(``setTicks``), keeps row 0 at the top (``invertY``), outlines highlighted cells (the cells a
previewed release would change), and reports the cell under the mouse through ``sigHovered`` and
a tooltip. Colour levels run from 0 to the total budget so colours mean the same thing over time.
:func:`project_2d` folds a cube of costs onto two attributes for it (max over the others, or a slice).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QToolTip, QWidget

from dpdesk.gui.widgets.plots import pg


def project_2d(
    values: np.ndarray, shape: tuple[int, ...], row: int, col: int, mode: str, fixed: dict[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Matrix over (row, col) and, per displayed cell, the flat index of the cube cell it shows."""
    arr = np.asarray(values, dtype=float).reshape(shape)
    flat_ids = np.arange(arr.size).reshape(shape)
    others = [d for d in range(len(shape)) if d not in (row, col)]
    if mode == "slice":
        index = tuple(slice(None) if d in (row, col) else fixed.get(d, 0) for d in range(len(shape)))
        sub, ids = arr[index], flat_ids[index]
        if row > col:
            sub, ids = sub.T, ids.T
        return sub, ids
    order = [row, col, *others]
    moved = np.transpose(arr, order).reshape(shape[row], shape[col], -1)
    moved_ids = np.transpose(flat_ids, order).reshape(shape[row], shape[col], -1)
    k = np.argmax(moved, axis=2)
    mat = np.take_along_axis(moved, k[..., None], axis=2)[..., 0]
    ids = np.take_along_axis(moved_ids, k[..., None], axis=2)[..., 0]  # hover names the most-spent cell
    if mode == "mean":
        mat = moved.mean(axis=2)
    return mat, ids


class HeatmapView(pg.GraphicsLayoutWidget):
    """A labelled heatmap with a colour bar and hover reporting."""

    sigHovered = Signal(int, int)  # row, column under the mouse (-1, -1 when outside)
    sigCellMenu = Signal(int, int)  # row, column right-clicked (the owner shows a cell menu)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.last: tuple | None = None  # the arguments of the last set_matrix (a mirror draws them again)
        self.setBackground("w")
        self.plot = self.addPlot()
        self.plot.setMenuEnabled(False)
        self.plot.invertY(True)
        self.plot.setAspectLocked(False)
        self.plot.hideButtons()
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.colorbar = pg.ColorBarItem(
            values=(0.0, 1.0),
            colorMap=pg.colormap.get("viridis"),
            label="privacy cost of cell",
            interactive=False,
        )
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.outline = pg.ScatterPlotItem(
            symbol="s", size=1, pxMode=False, brush=None, pen=pg.mkPen("#ff3b30", width=3)
        )
        self.plot.addItem(self.outline)
        # cells whose cost would pass the total budget: a cross, whatever the colour scale
        self.over_marks = pg.ScatterPlotItem(
            symbol="x", size=0.6, pxMode=False, brush=pg.mkBrush("#ff2d95"), pen=pg.mkPen("#ffffff", width=1)
        )
        self.plot.addItem(self.over_marks)
        self.over = np.zeros((1, 1), dtype=bool)
        self.vmax = 1.0
        self.matrix = np.zeros((1, 1))
        self.tooltip_for = None  # callable (row, col) -> str, set by the owner
        self.hover_text = ""
        self.scene().sigMouseMoved.connect(self._mouse_moved)
        self.scene().sigMouseClicked.connect(self._clicked)

    def set_matrix(
        self,
        matrix: np.ndarray,
        row_labels: Sequence[str],
        col_labels: Sequence[str],
        row_title: str,
        col_title: str,
        vmax: float,
        highlight: np.ndarray | None = None,
        over: np.ndarray | None = None,
    ) -> None:
        self.last = (matrix, row_labels, col_labels, row_title, col_title, vmax, highlight, over)
        self.matrix = np.asarray(matrix, dtype=float)
        self.vmax = float(vmax)
        self.image.setImage(self.matrix, autoLevels=False)
        self.image.setRect(0, 0, self.matrix.shape[1], self.matrix.shape[0])
        self.colorbar.setLevels(values=(0.0, self.vmax))
        self.over = np.zeros(self.matrix.shape, dtype=bool) if over is None else np.asarray(over, dtype=bool)
        r, c = np.nonzero(self.over)
        self.over_marks.setData(x=c + 0.5, y=r + 0.5)
        self.plot.getAxis("bottom").setTicks([[(j + 0.5, str(s)) for j, s in enumerate(col_labels)]])
        self.plot.getAxis("left").setTicks([[(i + 0.5, str(s)) for i, s in enumerate(row_labels)]])
        self.plot.setLabel("bottom", col_title)
        self.plot.setLabel("left", row_title)
        if highlight is not None and highlight.any():
            r, c = np.nonzero(highlight)
            self.outline.setData(x=c + 0.5, y=r + 0.5, size=0.92)
        else:
            self.outline.setData(x=[], y=[])
        self.plot.setRange(xRange=(0, self.matrix.shape[1]), yRange=(0, self.matrix.shape[0]), padding=0.02)

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int]:
        p = self.plot.vb.mapSceneToView(scene_pos)
        r, c = int(np.floor(p.y())), int(np.floor(p.x()))
        if 0 <= r < self.matrix.shape[0] and 0 <= c < self.matrix.shape[1]:
            return r, c
        return -1, -1

    def _clicked(self, event) -> None:  # type: ignore[no-untyped-def]
        if event.button() == Qt.MouseButton.RightButton:
            r, c = self.cell_at(event.scenePos())
            if r >= 0:
                self.sigCellMenu.emit(r, c)

    def _mouse_moved(self, scene_pos: QPointF) -> None:
        r, c = self.cell_at(scene_pos)
        self.sigHovered.emit(r, c)
        if r < 0 or self.tooltip_for is None:
            self.hover_text = ""
            QToolTip.hideText()
            return
        self.hover_text = self.tooltip_for(r, c)
        QToolTip.showText(QCursor.pos(), self.hover_text, self)


def show_cell_costs(view: HeatmapView, schema: Any, costs: np.ndarray, total: float) -> None:
    """Draw per-cell ``costs`` on ``view``: the first two attributes (max over the others), scaled to ``total``."""
    if len(schema.attributes) == 1:
        mat = costs.reshape(1, -1)
        rows, row_title = ["all"], ""
        cols, col_title = schema.attributes[0].labels, schema.attributes[0].name
    else:
        mat, _ = project_2d(costs, schema.shape, 0, 1, "max", {})
        rows, row_title = schema.attributes[0].labels, schema.attributes[0].name
        cols, col_title = schema.attributes[1].labels, schema.attributes[1].name
    view.set_matrix(mat, rows, cols, row_title, col_title, vmax=total)
