"""The engine, store and sources packages stay free of Qt (and the engine of SQL and files)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QT = {"PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph", "qtpy"}


def _imports(pkg: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / "dpdesk" / pkg).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = {node.module.split(".")[0]}
            else:
                continue
            found.setdefault(str(path.relative_to(ROOT)), set()).update(names)
    return found


def test_non_gui_packages_import_no_qt():
    for pkg in ("engine", "store", "sources"):
        for path, names in _imports(pkg).items():
            assert not names & QT, f"{path} imports {names & QT}"


def test_engine_imports_no_sql():
    for path, names in _imports("engine").items():
        assert not names & {"sqlite3", "duckdb", "psycopg"}, f"{path} imports {names}"


def test_importing_the_engine_loads_neither_qt_nor_sqlite():
    code = (
        "import sys, dpdesk.engine.answering.workflow, dpdesk.engine.inference.history, dpdesk.engine.inference.posterior, dpdesk.engine.cube;"
        "bad = [m for m in ('PySide6', 'sqlite3', '_sqlite3', 'pyqtgraph') if m in sys.modules];"
        "print(','.join(bad))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "", f"engine import pulled in {r.stdout.strip()}"
