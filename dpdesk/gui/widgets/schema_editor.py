"""The schema editor: pick columns as attributes and declare their domains.

One row per table column: use it or not, the attribute name, categorical or numeric, and the domain
(categorical values, or numeric bin edges, comma-separated) with optional labels. The engine's
``Schema.from_dict`` checks the result and its message is shown as is. *Suggest from data* fills
domains from the preview rows and raises a warning banner: domains read off the data can disclose
rare values (DESIGN §1), so the curator must review them and should declare public domains.
"""

from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.errors import DpdeskError, SchemaError
from dpdesk.engine.schema import Schema, half_open_labels

COLS = (
    "use",
    "column",
    "attribute",
    "kind",
    "domain (values or edges, comma-separated)",
    "labels (optional)",
)
BANNER = (
    "⚠ DATA-DERIVED SCHEMA: these domains were read off the data. A category that appears only in the "
    "data (a rare value) is itself a disclosure. Replace them with publicly known domains before answering."
)


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _number(s: str) -> float | int:
    v = float(s)
    return int(v) if v.is_integer() else v


class SchemaEditor(QWidget):
    """Edit a schema over a table's columns; ``schema()`` returns the engine's checked Schema."""

    sigEdited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.derived_rows: set[int] = set()  # rows whose domain was read off the data and not edited since
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.banner = QLabel(BANNER)
        self.banner.setObjectName("dataDerivedBanner")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet(
            "QLabel { background: #fff3cd; color: #7a4b00; border: 2px solid #e08a00;"
            " padding: 6px; font-weight: bold; }"
        )
        self.banner.hide()
        lay.addWidget(self.banner)
        bar = QHBoxLayout()
        self.suggest_btn = QPushButton("Suggest from data")
        self.suggest_btn.setToolTip("Fill domains from the preview rows (marks the schema as data-derived)")
        bar.addWidget(self.suggest_btn)
        bar.addStretch(1)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        bar.addWidget(self.status, 3)
        lay.addLayout(bar)
        self.table = QTableWidget(0, len(COLS))
        self.table.setHorizontalHeaderLabels(list(COLS))
        self.table.horizontalHeader().setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.itemChanged.connect(self._item_changed)
        lay.addWidget(self.table, 1)
        self.read_only = False

    # -- filling -------------------------------------------------------------------------------
    def set_columns(self, columns: list[str]) -> None:
        self.table.blockSignals(True)
        self.table.setRowCount(0)
        for col in columns:
            r = self.table.rowCount()
            self.table.insertRow(r)
            use = QTableWidgetItem()
            use.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
            use.setCheckState(Qt.CheckState.Unchecked)
            self.table.setItem(r, 0, use)
            name = QTableWidgetItem(col)
            name.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.table.setItem(r, 1, name)
            self.table.setItem(r, 2, QTableWidgetItem(col))
            kind = QComboBox()
            kind.addItems(["categorical", "numeric"])
            kind.currentTextChanged.connect(lambda _t: self._edited())
            self.table.setCellWidget(r, 3, kind)
            self.table.setItem(r, 4, QTableWidgetItem(""))
            self.table.setItem(r, 5, QTableWidgetItem(""))
        self.table.blockSignals(False)
        self.set_data_derived(False)
        self._edited()

    def clear(self) -> None:
        """No columns, editable again (a project's fixed schema made it read-only)."""
        self.set_read_only(False)
        self.set_columns([])
        self.status.setText("")

    def set_read_only(self, read_only: bool) -> None:
        self.read_only = read_only
        self.table.setEnabled(not read_only)
        self.suggest_btn.setEnabled(not read_only)

    def _row_of(self, column: str) -> int:
        for r in range(self.table.rowCount()):
            if self.table.item(r, 1).text() == column:
                return r
        raise KeyError(column)

    def set_attribute(
        self, column: str, name: str, kind: str, domain: list[Any], labels: list[str] | None = None
    ) -> None:
        r = self._row_of(column)
        self.table.blockSignals(True)
        self.table.item(r, 0).setCheckState(Qt.CheckState.Checked)
        self.table.item(r, 2).setText(name)
        self.table.cellWidget(r, 3).setCurrentText(kind)
        self.table.item(r, 4).setText(", ".join(str(v) for v in domain))
        self.table.item(r, 5).setText(", ".join(labels or []))
        self.table.blockSignals(False)
        self._edited()

    def set_schema(self, schema: Schema, read_only: bool = False) -> None:
        known = {self.table.item(r, 1).text() for r in range(self.table.rowCount())}
        missing = [a.column for a in schema.attributes if a.column not in known]
        if missing:
            self.set_columns(sorted(known | set(missing)))
        for a in schema.attributes:
            domain = list(a.edges) if a.kind == "numeric" else list(a.values)
            self.set_attribute(
                a.column,
                a.name,
                a.kind,
                [_number(str(v)) if a.kind == "numeric" else v for v in domain],
                list(a.labels),
            )
        self.set_read_only(read_only)
        if read_only:
            self.status.setText("The project's schema is fixed (the ledger's genesis hash covers it).")

    def suggest(self, frame: Any) -> None:
        """Fill every checked (or, if none, every) column's domain from ``frame``; marks data-derived."""
        import pandas as pd

        rows = [
            r
            for r in range(self.table.rowCount())
            if self.table.item(r, 0).checkState() == Qt.CheckState.Checked
        ]
        rows = rows or list(range(self.table.rowCount()))
        for r in rows:
            col = self.table.item(r, 1).text()
            series = frame[col].dropna()
            numeric = pd.api.types.is_numeric_dtype(series) and series.nunique() > 12
            if numeric:
                qs = series.quantile([0, 0.2, 0.4, 0.6, 0.8, 1.0]).to_numpy()
                edges = sorted({_number(f"{q:.6g}") for q in qs})
                if len(edges) < 2:
                    edges = [edges[0], edges[0] + 1]
                self.set_attribute(col, self.table.item(r, 2).text(), "numeric", edges)
            else:
                values = sorted({str(v) for v in series.unique()})[:50]
                self.set_attribute(col, self.table.item(r, 2).text(), "categorical", values)
        self.derived_rows |= set(rows)
        self._update_banner()

    @property
    def data_derived(self) -> bool:
        """True while some used column's domain is still the one read off the data."""
        used = {
            r
            for r in range(self.table.rowCount())
            if self.table.item(r, 0).checkState() == Qt.CheckState.Checked
        }
        return bool(self.derived_rows & used)

    def set_data_derived(self, flag: bool) -> None:
        self.derived_rows = set(range(self.table.rowCount())) if flag else set()
        self._update_banner()

    def _update_banner(self) -> None:
        self.banner.setVisible(self.data_derived)

    def _item_changed(self, item: QTableWidgetItem) -> None:
        if item.column() == 4:  # the curator declared this domain by hand: it is no longer data-derived
            self.derived_rows.discard(item.row())
        self._update_banner()
        self._edited()

    # -- reading -------------------------------------------------------------------------------
    def schema_dict(self) -> dict[str, Any]:
        attrs = []
        for r in range(self.table.rowCount()):
            if self.table.item(r, 0).checkState() != Qt.CheckState.Checked:
                continue
            kind = self.table.cellWidget(r, 3).currentText()
            parts = _split(self.table.item(r, 4).text())
            entry: dict[str, Any] = {
                "name": self.table.item(r, 2).text().strip(),
                "column": self.table.item(r, 1).text(),
                "kind": kind,
            }
            if kind == "numeric":
                try:
                    entry["edges"] = [_number(p) for p in parts]
                except ValueError:
                    raise SchemaError(
                        f"column {entry['column']!r}: edges must be numbers, got "
                        f"{self.table.item(r, 4).text()!r}"
                    ) from None
            else:
                entry["values"] = parts
            labels = _split(self.table.item(r, 5).text())
            if labels:
                entry["labels"] = labels
            elif kind == "numeric" and len(entry["edges"]) >= 2:
                # "0-1" reads as "0 or 1": unlabelled bins get labels that say they are half-open
                entry["labels"] = list(half_open_labels(entry["edges"]))
            attrs.append(entry)
        return {"attributes": attrs}

    def schema(self) -> Schema:
        """The engine-checked schema (raises SchemaError naming the table column at fault)."""
        spec = self.schema_dict()
        try:
            return Schema.from_dict(spec)
        except DpdeskError as exc:
            attrs = spec["attributes"]

            def column(m: re.Match[str]) -> str:
                i = int(m.group(1))
                return f"column {attrs[i]['column']!r}" if i < len(attrs) else m.group(0)

            message = re.sub(r"attributes\[(\d+)\]\.?", lambda m: column(m) + " ", str(exc)).replace(
                "  ", " "
            )
            if not attrs:
                message = "no column is used yet: tick 'use' for at least one column"
            raise SchemaError(message) from None

    def _edited(self) -> None:
        try:
            s = self.schema()
        except DpdeskError as exc:
            self.status.setText(f"✗ {exc}")
            self.status.setStyleSheet("color: #a8321f;")
        else:
            self.status.setText(
                f"✓ {len(s.attributes)} attributes, cube shape {' × '.join(map(str, s.shape))} = "
                f"{s.n_cells:,} cells"
            )
            self.status.setStyleSheet("color: #237a36;")
        self.sigEdited.emit()
