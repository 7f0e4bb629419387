"""*Who is one person in this table?* — the privacy unit asked as a plain question in New project.

The answer is the schema's ``privacy_unit`` (docs/schema.md): each row a different person (the default),
or the rows sharing a value of one column, with at most ``k`` rows kept per person (and optionally at
most one per cell). Once a column is chosen, the page counts rows per person off the GUI thread and
hands the distribution here (:meth:`UnitQuestion.show_contributions`): it helps the curator choose ``k``
and is shown to the curator only — PRIVATE, never written to the project file.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QRadioButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.unit import MAX_ROWS_LIMIT
from dpdesk.gui.widgets.badge import PrivateBadge

KEEP_SHARE = 0.95  # the bound first suggested: the smallest k at least this share of people fit in


class UnitQuestion(QGroupBox):
    """The privacy unit, asked plainly; the rows-per-person distribution beside it (private)."""

    sigChanged = Signal()  # the answer changed (the schema needs a new review)
    sigColumnChosen = Signal(str)  # count rows per person by this column (the page does, off the GUI thread)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Who is one person in this table?", parent)
        self.setObjectName("unitQuestion")
        self._contributions: Any = None
        lay = QVBoxLayout(self)
        self.rows_are_people = QRadioButton("Each row is a different person")
        self.rows_are_people.setChecked(True)
        self.grouped = QRadioButton("One person can have several rows: the rows with the same")
        self.column = QComboBox()
        self.column.setObjectName("unitColumn")
        group = QButtonGroup(self)
        group.addButton(self.rows_are_people)
        group.addButton(self.grouped)
        lay.addWidget(self.rows_are_people)
        row = QHBoxLayout()
        row.addWidget(self.grouped)
        row.addWidget(self.column, 1)
        lay.addLayout(row)
        bound = QHBoxLayout()
        bound.addWidget(QLabel("Keep at most"))
        self.max_rows = QSpinBox(minimum=1, maximum=MAX_ROWS_LIMIT, value=1)
        self.max_rows.setObjectName("unitMaxRows")
        bound.addWidget(self.max_rows)
        bound.addWidget(QLabel("rows per person"))
        self.one_per_cell = QCheckBox("and at most one row of a person in each cell")
        bound.addWidget(self.one_per_cell)
        bound.addStretch(1)
        lay.addLayout(bound)
        explain = (
            "Privacy losses are then per person: a person's rows can fall in up to that many cells, and "
            "the privacy loss ε of everything released is what those cells cost together. Rows beyond the "
            "bound are left out of the cube (a bias, never a privacy risk)."
        )
        for w in (self.grouped, self.max_rows, self.one_per_cell):
            w.setToolTip(explain)
        head = QHBoxLayout()
        self.badge = PrivateBadge("the rows-per-person distribution")
        head.addWidget(self.badge)
        self.summary = QLabel("")
        self.summary.setObjectName("unitSummary")
        self.summary.setWordWrap(True)
        head.addWidget(self.summary, 1)
        lay.addLayout(head)
        self.table = QTableWidget(0, 3)
        self.table.setObjectName("unitDistribution")
        self.table.setHorizontalHeaderLabels(["rows per person", "people", "people in that many cells"])
        self.table.verticalHeader().hide()
        lay.addWidget(self.table)
        self.rows_are_people.toggled.connect(self._changed)
        self.column.currentTextChanged.connect(lambda _t: self._column_changed())
        self.max_rows.valueChanged.connect(lambda _v: self._changed())
        self.one_per_cell.toggled.connect(lambda _b: self._changed())
        self._changed()

    # -- the answer ----------------------------------------------------------------------------
    def set_columns(self, columns: list[str]) -> None:
        """The table's columns (any may identify a person); back to "each row is a different person"."""
        self.column.blockSignals(True)
        self.column.clear()
        self.column.addItems(columns)
        self.column.blockSignals(False)
        self.rows_are_people.setChecked(True)
        self.show_contributions(None)

    def unit(self) -> dict[str, Any] | None:
        """The schema's ``privacy_unit`` member (None: each row is a different person)."""
        if self.rows_are_people.isChecked() or not self.column.currentText():
            return None
        out: dict[str, Any] = {"column": self.column.currentText(), "max_rows": self.max_rows.value()}
        if self.one_per_cell.isChecked():
            out["one_row_per"] = "cell"
        return out

    def set_unit(self, unit: dict[str, Any] | None, read_only: bool = False) -> None:
        """Show a project's declared unit (fixed once the project exists)."""
        if unit is None:
            self.rows_are_people.setChecked(True)
        else:
            self.grouped.setChecked(True)
            self.column.setCurrentText(str(unit["column"]))
            self.max_rows.setValue(int(unit["max_rows"]))
            self.one_per_cell.setChecked(unit.get("one_row_per") == "cell")
        for w in (self.rows_are_people, self.grouped, self.column, self.max_rows, self.one_per_cell):
            w.setEnabled(not read_only and (w in (self.rows_are_people, self.grouped) or unit is not None))

    def _column_changed(self) -> None:
        self.show_contributions(None)
        self._changed()

    def _changed(self) -> None:
        on = self.grouped.isChecked()
        for w in (self.column, self.max_rows, self.one_per_cell, self.table):
            w.setEnabled(on)
        self._summarise()
        self.sigChanged.emit()
        if on and self.column.currentText() and self._contributions is None:
            self.sigColumnChosen.emit(self.column.currentText())

    # -- the distribution (private) ------------------------------------------------------------
    def show_contributions(self, contributions: Any) -> None:
        """Show people by rows (a :class:`~dpdesk.engine.contributions.Contributions`; None clears it);
        the first time, suggest the smallest bound that keeps at least 95 % of people whole."""
        first = self._contributions is None and contributions is not None
        self._contributions = contributions
        self.table.setRowCount(0)
        self.badge.setVisible(contributions is not None)
        if contributions is None:
            self.summary.setText("")
            return
        for rows, people, cells in contributions.table():
            r = self.table.rowCount()
            self.table.insertRow(r)
            for c, text in enumerate((rows, f"{people:,}", f"{cells:,}")):
                self.table.setItem(r, c, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()
        if first:
            self.max_rows.blockSignals(True)
            self.max_rows.setValue(contributions.smallest_bound(KEEP_SHARE))
            self.max_rows.blockSignals(False)
        self._summarise()

    def _summarise(self) -> None:
        c = self._contributions
        if c is None or not self.grouped.isChecked():
            self.summary.setText("")
            return
        k = self.max_rows.value()
        whole = int(c.rows[: k + 1].sum())
        kept, total = c.rows_kept(k), c.total_rows
        share = kept / total if total else 1.0
        self.summary.setText(
            f"{c.people:,} people, up to {c.most_rows:,} rows each · at most {k} per person keeps "
            f"{kept:,} of {total:,} rows ({share:.1%}); {whole:,} people keep all their rows"
        )
