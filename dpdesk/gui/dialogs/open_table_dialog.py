"""The *Open table* dialog: a file, a PostgreSQL table, or a table or lake path counted by Spark.

Each tab gathers what :func:`dpdesk.sources.open_source` needs, ``(location, table)``; nothing is read
here (the Data page opens the source in the background). OK is enabled once the current tab names a
source, and a line says what is still missing.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dpdesk.gui.widgets.screen_fit import keep_on_screen

TABLE_FILTERS = (
    "Tables (*.csv *.tsv *.txt *.csv.gz *.parquet *.pq *.xlsx *.xls *.sqlite *.sqlite3 *.db);;All files (*)"
)
LAKE_FILTERS = "Lake files (*.parquet *.pq *.csv *.tsv *.csv.gz);;All files (*)"
DEFAULT_SPARK_MASTER = "local[*]"


def _browse_row(edit: QLineEdit, browse) -> QWidget:  # type: ignore[no-untyped-def]
    row = QWidget()
    lay = QHBoxLayout(row)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(edit, 1)
    button = QPushButton("Browse…")
    button.clicked.connect(browse)
    lay.addWidget(button)
    return row


class OpenTableDialog(QDialog):
    """Choose a table to open; :meth:`choice` gives ``(location, table)`` after OK."""

    FILE, POSTGRESQL, SPARK = 0, 1, 2

    def __init__(self, parent: QWidget | None = None, spark_master: str = DEFAULT_SPARK_MASTER) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle("Open table")
        self.resize(620, 260)
        lay = QVBoxLayout(self)
        self.tabs = QTabWidget()
        lay.addWidget(self.tabs)

        file_tab = QWidget()
        form = QFormLayout(file_tab)
        self.file_path = QLineEdit()
        self.file_path.setPlaceholderText(
            "a CSV/TSV, Parquet, Excel or SQLite file, or a glob such as parts/*.parquet"
        )
        form.addRow("File:", _browse_row(self.file_path, self._browse_file))
        self.file_table = QLineEdit()
        self.file_table.setPlaceholderText(
            "optional: a worksheet; SQLite asks when the file has several tables"
        )
        form.addRow("Table or sheet:", self.file_table)
        self.tabs.addTab(file_tab, "File")

        pg_tab = QWidget()
        form = QFormLayout(pg_tab)
        self.pg_url = QLineEdit()
        self.pg_url.setPlaceholderText("postgresql://user@host:5432/database")
        form.addRow("Server URL:", self.pg_url)
        self.pg_table = QLineEdit()
        self.pg_table.setPlaceholderText("table or view, optionally schema.table")
        form.addRow("Table or view:", self.pg_table)
        form.addRow(
            self._note("The server counts the rows; only cell counts come back. Needs dpdesk[postgresql].")
        )
        self.tabs.addTab(pg_tab, "PostgreSQL")

        spark_tab = QWidget()
        form = QFormLayout(spark_tab)
        self.spark_master = QLineEdit(spark_master)
        self.spark_master.setPlaceholderText("local[*], spark://host:7077, yarn or k8s://…")
        form.addRow("Spark master:", self.spark_master)
        self.spark_table = QLineEdit()
        self.spark_table.setPlaceholderText("catalog table (db.people) or a Parquet/CSV/Delta path")
        form.addRow("Table or path:", _browse_row(self.spark_table, self._browse_lake))
        form.addRow(
            self._note(
                "Spark runs the count where the data lives; only (cell, count) rows come back to this computer. "
                "A Delta table is a folder with _delta_log (or write delta:PATH). Needs dpdesk[spark] and Java 17."
            )
        )
        self.tabs.addTab(spark_tab, "Spark")

        self.problem = QLabel("")
        self.problem.setStyleSheet("QLabel { color: #b00020; }")
        lay.addWidget(self.problem)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        for edit in (self.file_path, self.pg_url, self.pg_table, self.spark_master, self.spark_table):
            edit.textChanged.connect(lambda _t: self.check())
        self.tabs.currentChanged.connect(lambda _i: self.check())
        self.check()

    @staticmethod
    def _note(text: str) -> QLabel:
        label = QLabel(text)
        label.setWordWrap(True)
        label.setStyleSheet("QLabel { color: #505050; }")
        return label

    def _browse_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open table", "", TABLE_FILTERS)
        if path:
            self.file_path.setText(path)

    def _browse_lake(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "A file for Spark to read", "", LAKE_FILTERS)
        if path:
            self.spark_table.setText(path)

    def problem_text(self) -> str:
        """What the current tab still lacks ('' when it names a source)."""
        tab = self.tabs.currentIndex()
        if tab == self.FILE:
            return "" if self.file_path.text().strip() else "Name a file (or Browse…)."
        if tab == self.POSTGRESQL:
            url = self.pg_url.text().strip()
            if not url.startswith(("postgresql://", "postgres://")):
                return "The server URL starts with postgresql://."
            return "" if self.pg_table.text().strip() else "Name the table or view."
        if not self.spark_master.text().strip():
            return "Name the Spark master (local[*] runs Spark on this computer)."
        return "" if self.spark_table.text().strip() else "Name a table in Spark's catalog or a path."

    def check(self) -> None:
        bad = self.problem_text()
        self.problem.setText(bad)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(not bad)

    def choice(self) -> tuple[str, str | None]:
        """``(location, table)`` for :func:`dpdesk.sources.open_source`, from the current tab."""
        tab = self.tabs.currentIndex()
        if tab == self.FILE:
            return self.file_path.text().strip(), self.file_table.text().strip() or None
        if tab == self.POSTGRESQL:
            return self.pg_url.text().strip(), self.pg_table.text().strip()
        from dpdesk.sources.spark import spark_location

        return spark_location(self.spark_master.text()), self.spark_table.text().strip()
