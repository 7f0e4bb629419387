"""The layers hold: the import-linter contract in pyproject.toml, and the engine loads no Qt or SQL.

The contract (``[tool.importlinter]``) says engine ← sources ← store ← (gui | commands) ← entry points,
no Qt outside the gui, no database driver in the engine and no import circle inside any package. It
counts every import, including those inside functions, so a lazy ``import dpdesk.store`` in an engine
module breaks it just as a top-level one does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold(capsys):
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert code == 0, (
        "import contracts broken (see docs/architecture.md):\n" + out[out.find("Broken contracts") :]
    )


def test_importing_the_engine_loads_neither_qt_nor_sqlite():
    # The contract reads source text; this checks what actually gets loaded, lazy imports and all.
    code = (
        "import sys, dpdesk.engine.answering.workflow, dpdesk.engine.inference.history, dpdesk.engine.inference.posterior, dpdesk.engine.cube;"
        "bad = [m for m in ('PySide6', 'sqlite3', '_sqlite3', 'pyqtgraph') if m in sys.modules];"
        "print(','.join(bad))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "", f"engine import pulled in {r.stdout.strip()}"
