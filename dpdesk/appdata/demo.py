"""Open demo: a project in the user's data folder bound to a private copy of the bundled demo table.

The bundled files (``resources/demo/``) are never modified: the table is copied next to the new
project file, the project is bound to the copy, and the bundled request queue is imported into it.
A copy nobody has used yet is opened again instead of making another (``demo-*`` folders would
otherwise pile up, one per start); a copy with any decision in it is never reused or removed.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import datetime
from pathlib import Path

from dpdesk.appdata.bundled import resource

DEMO_BUDGET = 1.0
DEMO_NAME = "Adult census demo"
DEMO_DELTA_CAP = 1e-6  # lets the demo try (α, δ) releases; far below 1/n for its 60 000 records
DEMO_FILE = "demo.dpdesk"
DEMO_TABLE = "adult.parquet"


def data_folder() -> Path:
    """The per-user folder where dpdesk keeps demo projects (platformdirs; ``$DPDESK_DATA_DIR`` if set)."""
    from dpdesk.store.source_key import data_folder as user_data

    return user_data()


def create_demo_project(folder: Path | None = None, *, total_budget: float = DEMO_BUDGET) -> Path:
    """Make ``<folder>/demo-<timestamp>/demo.dpdesk`` bound to a private copy of the demo table."""
    from dpdesk.store.project import Project

    base = Path(folder) if folder is not None else data_folder()
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    target = base / f"demo-{stamp}"
    target.mkdir(parents=True, exist_ok=False)
    table = target / DEMO_TABLE
    shutil.copyfile(resource("demo", DEMO_TABLE), table)
    schema = json.loads(resource("demo", "adult.schema.json").read_text(encoding="utf-8"))
    path = target / DEMO_FILE
    with Project.create(
        path,
        name=DEMO_NAME,
        schema=schema,
        source_location=str(table),
        total_budget=total_budget,
        delta_cap=DEMO_DELTA_CAP,
    ) as project:
        project.import_requests(resource("demo", "requests.json"))
    return path


def demo_project(folder: Path | None = None) -> tuple[Path, bool]:
    """The demo project to open: the newest untouched copy in ``folder``, else a new one.

    Returns
    -------
    path, reused
        The project file, and whether it is an existing copy.
    """
    base = Path(folder) if folder is not None else data_folder()
    for path in sorted(base.glob(f"demo-*/{DEMO_FILE}"), reverse=True):  # the stamp sorts by time
        if is_untouched(path):
            return path, True
    return create_demo_project(base), False


def is_untouched(path: Path) -> bool:
    """Whether ``path`` is a demo copy exactly as :func:`create_demo_project` left it, not open elsewhere.

    Untouched means: nothing in the ledger (no answer, rejection or rebind), the bundled request
    queue and nothing else (all pending), no spend policy, declared table size or look-ahead, the demo's name,
    budget and δ cap, bound to its own copy of the table and that copy byte-identical to the bundled one.
    A project another dpdesk holds open for writing is not reused (it may change any moment). Any
    problem reading it (damaged, newer format, ...) counts as touched: such a folder is left alone.
    """
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.store.lock import WriterLock
    from dpdesk.store.project import Project
    from dpdesk.store.requests import read_request_file

    table = path.parent / DEMO_TABLE
    try:
        if table.read_bytes() != resource("demo", DEMO_TABLE).read_bytes():
            return False
        with Project.open(path, "r") as project:
            bundled = read_request_file(resource("demo", "requests.json"), project.schema)
            same = (
                project.name == DEMO_NAME
                and float(project.total_budget) == DEMO_BUDGET
                and project.delta_cap == DEMO_DELTA_CAP  # a copy made before the demo had one is not it
                and project.source.location == str(table)
                and project.source.table is None
                and not project.ledger()
                and project.spend_policy is None
                and project.prior is None
                and project.look_ahead is None
                and [(r.id, r.requester, r.query_text, r.eps, r.delta, r.status) for r in project.requests()]
                == [(r.id, r.requester, r.query_text, r.eps, r.delta, "pending") for r in bundled]
            )
        if not same:
            return False
        with WriterLock(path):
            return True
    except (DpdeskError, OSError, sqlite3.Error):  # LockedError is a DpdeskError
        return False
