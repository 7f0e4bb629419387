"""Open demo: copy the bundled demo table into a fresh project in the user's data folder.

The bundled files (``resources/demo/``) are never modified: the table is copied next to the new
project file, the project is bound to the copy, and the bundled request queue is imported into it.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

from dpdesk.appdata.bundled import resource

DEMO_BUDGET = 1.0
DEMO_NAME = "Adult census demo"
DEMO_DELTA_CAP = 1e-6  # lets the demo try (α, δ) releases; far below 1/n for its 60 000 records


def data_folder() -> Path:
    """The per-user folder where dpdesk keeps demo projects (platformdirs)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("dpdesk", "dpdesk"))


def create_demo_project(folder: Path | None = None, *, total_budget: float = DEMO_BUDGET) -> Path:
    """Make ``<folder>/demo-<timestamp>/demo.dpdesk`` bound to a private copy of the demo table."""
    from dpdesk.store.project import Project

    base = Path(folder) if folder is not None else data_folder()
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    target = base / f"demo-{stamp}"
    target.mkdir(parents=True, exist_ok=False)
    table = target / "adult.parquet"
    shutil.copyfile(resource("demo", "adult.parquet"), table)
    schema = json.loads(resource("demo", "adult.schema.json").read_text(encoding="utf-8"))
    path = target / "demo.dpdesk"
    with Project.create(path, name=DEMO_NAME, schema=schema, source_location=str(table),
                        total_budget=total_budget, delta_cap=DEMO_DELTA_CAP) as project:
        project.import_requests(resource("demo", "requests.json"))
    return path
