"""The Data page: open a table, preview it, declare the schema, build the cube, create a project.

*Who is one person?* (:class:`~dpdesk.gui.widgets.unit_question.UnitQuestion`) asks the privacy unit;
choosing a column counts rows per person in the background, for the curator's eyes only (PRIVATE, never
written): the distribution helps choose the bound ``k``.

Tables are chosen in the *Open table* dialog (a file, a PostgreSQL table, a Spark table or lake path) and
opened through :func:`dpdesk.sources.open_source`; the
preview is a bounded number of rows in a virtual model and, like the cube, is PRIVATE. The cube is
built by the source in the background with progress and Cancel. With a project open, the page shows
the project's bound source and its (fixed) schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.errors import DpdeskError
from dpdesk.gui import dialogs
from dpdesk.gui.dialogs.open_table_dialog import OpenTableDialog
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.badge import PrivateBadge
from dpdesk.gui.widgets.models import DataFrameModel
from dpdesk.gui.widgets.progress import set_progress
from dpdesk.gui.widgets.schema_editor import SchemaEditor
from dpdesk.gui.widgets.unit_question import UnitQuestion

PREVIEW_ROWS = 5000
STEPS = (
    "open a table",
    "tick the columns to use",
    "declare their domains",
    "review the schema",
    "create the project (then its budget ε)",
)
NO_TABLE = (
    "No table open. CSV/TSV, Parquet, Excel and SQLite files, PostgreSQL tables and "
    "Spark tables or lake paths are supported."
)


def run_dialog(dialog: OpenTableDialog) -> bool:
    """Show the *Open table* dialog; True on Open (a hook tests replace to fill it in instead)."""
    return dialog.exec() == OpenTableDialog.DialogCode.Accepted


def choose_table(parent: QWidget, location: str, names: list[str]) -> str | None:
    """Ask which table of a database to open (a hook tests replace)."""
    name, ok = QInputDialog.getItem(
        parent, "Choose a table", f"Tables in {Path(location).name}:", names, 0, False
    )
    return name if ok else None


def ask_new_project(parent: QWidget) -> tuple[Any, ...] | None:
    """Ask where to save a new project, its total budget, its δ cap and its accounting mode with the δ of
    a zCDP total: ``(path, budget, δ cap)`` for a pure project, ``(path, budget, δ cap, "zcdp", δ)`` for
    a zCDP one (a hook tests replace)."""
    from dpdesk.gui.dialogs.new_project_dialog import NewProjectDialog

    path, _ = QFileDialog.getSaveFileName(parent, "Create project", "", "dpdesk projects (*.dpdesk)")
    if not path:
        return None
    limits = NewProjectDialog.ask(parent)
    if limits is None:
        return None
    budget, cap, mode, delta = limits
    path = path if path.endswith(".dpdesk") else path + ".dpdesk"
    return (path, budget, cap) if mode == "pure" else (path, budget, cap, mode, delta)


class DataPage(QWidget):
    """Open a table, edit its schema, build the cube; or show a project's bound source."""

    sigProjectCreated = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = None
        self.source = None
        self.cube = None
        self.preview_frame = None
        self.runner = TaskRunner(self)
        lay = QVBoxLayout(self)
        top = QHBoxLayout()
        self.open_btn = QPushButton("Open table…")
        self.open_btn.clicked.connect(self.choose_source)
        top.addWidget(self.open_btn)
        self.steps = QLabel("")
        self.steps.setObjectName("newProjectSteps")
        self.location = QLabel(NO_TABLE)
        self.location.setWordWrap(True)
        top.addWidget(self.location, 1)
        lay.addLayout(top)
        lay.addWidget(self.steps)
        split = QSplitter(Qt.Orientation.Vertical)
        self.splitter = split
        split.addWidget(self._preview_box())
        self.editor = SchemaEditor()
        self.editor.suggest_btn.clicked.connect(self.suggest)
        self.editor.sigEdited.connect(self._schema_edited)
        split.addWidget(self.editor)
        self.unit = UnitQuestion()
        self.unit.sigChanged.connect(self._schema_edited)
        self.unit.sigColumnChosen.connect(self.count_people)
        # the question scrolls inside its pane, so the page still fits a laptop's 700 px with every pane open
        unit_pane = QScrollArea()
        unit_pane.setWidgetResizable(True)
        unit_pane.setFrameShape(QFrame.Shape.NoFrame)
        unit_pane.setWidget(self.unit)
        split.addWidget(unit_pane)
        split.addWidget(self._cube_box())
        split.setSizes([200, 180, 240, 160])
        lay.addWidget(split, 1)
        self.runner.sigProgress.connect(lambda f: set_progress(self.progress, int(1000 * f)))
        self.runner.sigStarted.connect(
            lambda label: (self.cancel_btn.setEnabled(True), self.progress.setFormat(f"{label} %p%"))
        )
        self.runner.sigFinished.connect(lambda: self.cancel_btn.setEnabled(False))
        self._update_buttons()

    def _preview_box(self) -> QWidget:
        """The table's first rows (private: for the curator's eyes)."""
        box = QWidget()
        bl = QVBoxLayout(box)
        bl.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        self.preview_label = QLabel("<b>Preview</b>")
        head.addWidget(self.preview_label)
        self.preview_badge = PrivateBadge("the table preview")
        head.addWidget(self.preview_badge)
        head.addStretch(1)
        bl.addLayout(head)
        self.model = DataFrameModel()
        self.preview = QTableView()
        self.preview.setModel(self.model)
        bl.addWidget(self.preview)
        return box

    def _cube_box(self) -> QWidget:
        """Build the cube, review the schema, create the project; the cube's counts (private)."""
        cube_box = QWidget()
        cl = QVBoxLayout(cube_box)
        cl.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.build_btn = QPushButton("Build cube")
        self.build_btn.clicked.connect(self.build_cube)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.clicked.connect(self.runner.cancel)
        self.cancel_btn.setEnabled(False)
        self.create_btn = QPushButton("Create project from this table…")
        self.create_btn.clicked.connect(self.create_project)
        self.reviewed = QCheckBox("Schema reviewed: every domain is publicly known")
        self.reviewed.setToolTip(
            "Domains read off the data can disclose rare values. Tick once you have checked "
            "every column's domain; any edit asks for a new review."
        )
        self.reviewed.toggled.connect(lambda _b: self._update_buttons())
        for w in (self.build_btn, self.progress, self.cancel_btn, self.reviewed, self.create_btn):
            row.addWidget(w)
        cl.addLayout(row)
        res = QHBoxLayout()
        self.cube_info = QLabel("")
        self.cube_info.setWordWrap(True)
        res.addWidget(self.cube_info, 1)
        self.cube_badge = PrivateBadge("the cube's counts")
        self.cube_badge.hide()
        res.addWidget(self.cube_badge)
        cl.addLayout(res)
        self.cube_model = DataFrameModel()
        self.cube_view = QTableView()
        self.cube_view.setModel(self.cube_model)
        cl.addWidget(self.cube_view)
        return cube_box

    # -- opening -------------------------------------------------------------------------------
    def set_session(self, session) -> None:
        """Show a project's bound source and fixed schema (None: back to new-project mode)."""
        self.session = session
        self.cube = None
        self.cube_info.setText("")
        self.cube_model.set_frame(None)
        self.cube_badge.hide()
        if session is None:
            self._reset()
            return
        src = session.source()
        self.open_table(src.location, src.table, schema=session.schema)

    def _reset(self) -> None:
        """Back to an empty new-project page: no table, no preview, an editable empty schema."""
        self.runner.cancel()
        self.source = None
        self.preview_frame = None
        self.model.set_frame(None)
        self.preview_label.setText("<b>Preview</b>")
        self.location.setText(NO_TABLE)
        self.editor.clear()
        self._update_buttons()

    def choose_source(self) -> None:
        dialog = OpenTableDialog(self)
        if run_dialog(dialog):
            location, table = dialog.choice()
            self.open_table(location, table)

    def open_table(self, location: str, table: str | None = None, schema=None) -> None:
        """Open ``location`` in the background: columns and a bounded preview."""
        from dpdesk.engine.errors import DpdeskError
        from dpdesk.sources import is_sqlite_file
        from dpdesk.sources.sqlite_source import table_names

        if table is None and is_sqlite_file(location):
            try:
                names = table_names(location)
            except DpdeskError as exc:
                dialogs.show_error(self, "Cannot open the database", f"{exc}\n\nIs it a SQLite file?")
                return
            if not names:
                dialogs.show_error(self, "No tables", f"{location} has no tables or views.")
                return
            table = names[0] if len(names) == 1 else choose_table(self, location, names)
            if table is None:
                return

        def work(state) -> tuple[Any, list[str], Any]:
            from dpdesk.sources import open_source

            src = open_source(location, table=table)
            cols = src.columns()
            state.progress(0.5)
            return src, cols, src.preview(PREVIEW_ROWS)

        self.location.setText(f"Opening {location}…")
        self.runner.start(
            work, lambda out: self._opened(out, schema), self._open_failed, label="opening table"
        )

    def _open_failed(self, exc: BaseException, trace: str) -> None:
        self.location.setText("No table open.")
        self.source = None
        self.model.set_frame(None)
        self._update_buttons()
        dialogs.report_exception(exc, trace, parent=self)

    def _opened(self, out: tuple[Any, list[str], Any], schema) -> None:
        self.source, columns, frame = out
        self.preview_frame = frame
        self.model.set_frame(frame)
        where = f"{self.source.location}{f' (table {self.source.table})' if self.source.table else ''}"
        bound = "Project source: " if self.session is not None else ""
        self.location.setText(f"{bound}{where} — {len(columns)} columns")
        self.preview_label.setText(f"<b>Preview</b> (first {len(frame):,} rows)")
        self.editor.set_columns(columns)
        self.unit.set_columns(columns)
        if schema is not None:
            self.editor.set_schema(schema, read_only=self.session is not None)
            self.unit.set_unit(schema.unit.to_dict(), read_only=self.session is not None)
        self._update_buttons()

    def suggest(self) -> None:
        if self.preview_frame is not None:
            self.editor.suggest(self.preview_frame)

    # -- who is one person ----------------------------------------------------------------------
    def count_people(self, column: str) -> None:
        """Count rows per person by ``column`` in the background (over the schema's cells when it is
        complete); the distribution goes to the unit question only — private, never written."""
        if self.source is None or self.session is not None:
            return
        try:
            schema = self.editor.schema()
        except DpdeskError:
            schema = None  # every row with an identifier, until the domains are declared
        source = self.source
        self.runner.start(
            lambda st: source.contributions(column, schema, progress=st.progress, cancelled=st.cancelled),
            self.unit.show_contributions,
            lambda exc, trace: dialogs.report_exception(exc, trace, parent=self),
            label="counting rows per person",
        )

    def project_schema(self):  # type: ignore[no-untyped-def]
        """The schema a new project gets: the editor's attributes with the unit the question states."""
        from dataclasses import replace

        from dpdesk.engine.unit import parse_unit

        schema = self.editor.schema()
        return replace(schema, unit=parse_unit(self.unit.unit(), schema.names, "privacy unit"))

    # -- cube ----------------------------------------------------------------------------------
    def build_cube(self) -> None:
        if self.source is None:
            return
        try:
            schema = self.editor.schema()
        except Exception as exc:
            dialogs.report_exception(exc, parent=self)
            return
        source = self.source
        self.cube_info.setText("Building the cube…")
        self.runner.start(
            lambda st: source.build_cube(schema, progress=st.progress, cancelled=st.cancelled),
            self._built,
            self._build_failed,
            label="building cube",
        )

    def _build_failed(self, exc: BaseException, trace: str) -> None:
        self.cube_info.setText("The cube was not built.")
        self.progress.setFormat("cube not built")
        dialogs.report_exception(exc, trace, parent=self)

    def _built(self, cube) -> None:
        import pandas as pd

        self.cube = cube
        self.progress.setFormat("cube built")  # not 'building cube 100%' once it is done
        schema = cube.schema
        self.cube_info.setText(
            f"Cube: {' × '.join(map(str, schema.shape))} = {schema.n_cells:,} cells · {cube.total:,} records "
            f"inside the declared domains · {cube.out_of_domain:,} out of domain (missing or undeclared values; "
            "counted, never placed in a cell)"
        )
        flat = cube.flat
        order = flat.argsort()[::-1][:200]
        self.cube_model.set_frame(
            pd.DataFrame(
                {
                    "cell": [schema.describe_cell(int(i)) for i in order],
                    "count": [int(flat[i]) for i in order],
                }
            )
        )
        self.cube_view.resizeColumnsToContents()
        self.cube_badge.show()

    def create_project(self) -> None:
        if self.source is None or self.session is not None:
            return
        try:
            schema = self.project_schema()
        except Exception as exc:
            dialogs.report_exception(exc, parent=self)
            return
        if self.editor.data_derived and not dialogs.confirm(
            self,
            "Data-derived schema",
            "The domains were suggested from the data. Create the project anyway?",
        ):
            return
        answer = ask_new_project(self)
        if answer is None:
            return
        path, budget, delta_cap, *mode = answer
        accounting, delta = mode if mode else ("pure", None)
        src = self.source
        name = Path(path).stem

        def work(_state) -> str:
            from dpdesk.store.project import Project

            with Project.create(
                path,
                name=name,
                schema=schema,
                source_location=src.location,
                source_table=src.table,
                total_budget=budget,
                delta_cap=delta_cap,
                accounting=accounting,
                delta=delta,
            ):
                pass
            return path

        self.runner.start(work, self.sigProjectCreated.emit, label="creating project")

    def _schema_edited(self) -> None:
        self.reviewed.setChecked(False)  # a changed schema needs a new review
        self._update_buttons()

    def step(self) -> int:
        """Where a new project stands: 1 table, 2 columns, 3 domains, 4 review, 5 create (budget next)."""
        if self.source is None:
            return 1
        if not self.editor.schema_dict()["attributes"]:
            return 2
        try:
            self.editor.schema()
        except DpdeskError:
            return 3
        return 5 if self.reviewed.isChecked() else 4

    def _update_buttons(self) -> None:
        has = self.source is not None
        new = self.session is None
        self.build_btn.setEnabled(has)
        self.create_btn.setVisible(new)
        self.reviewed.setVisible(new)
        step = self.step() if new else 0
        self.reviewed.setEnabled(step >= 4)
        self.create_btn.setEnabled(step == 5)
        self.open_btn.setEnabled(new)
        self.steps.setVisible(new)
        self.steps.setText(
            "New project: "
            + "  →  ".join(
                f"<b>{i}. {name}</b>" if i == step else (f"✓ {name}" if i < step else f"{i}. {name}")
                for i, name in enumerate(STEPS, start=1)
            )
        )
