"""One view alone over a throwaway demo project: ``python -m dpdesk.gui.app.preview VIEW``.

For working on a view without clicking through the whole window. The views are imported here and
never import this module, so the view modules stay free of start-up code.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def _answer(session: Any) -> Any:
    from dpdesk.gui.panels.answer_panel import AnswerPanel

    w = AnswerPanel(session)
    w.set_request("q10")
    return w


def _budget(session: Any) -> Any:
    from dpdesk.gui.panels.budget_panel import BudgetPanel

    return BudgetPanel(session)


def _requests(session: Any) -> Any:
    from dpdesk.gui.pages.requests_page import RequestsPage

    return RequestsPage(session)


def _audit(session: Any) -> Any:
    from dpdesk.gui.pages.audit_page import AuditPage

    return AuditPage(session)


def _query(session: Any) -> Any:
    from dpdesk.gui.dialogs.query_builder import QueryBuilderDialog

    return QueryBuilderDialog(session.schema)


def _start(session: Any) -> Any:
    from dpdesk.gui.pages.start_page import StartPage

    return StartPage()


def _data(session: Any) -> Any:
    from dpdesk.gui.pages.data_page import DataPage

    w = DataPage()
    w.set_session(session)
    return w


# view name -> the widget showing it over an open ProjectSession (a sub-widget shows in its panel)
VIEWS: dict[str, Callable[[Any], Any]] = {
    "answer": _answer,
    "posterior": _answer,
    "budget": _budget,
    "heatmap": _budget,
    "requests": _requests,
    "audit": _audit,
    "query": _query,
    "start": _start,
    "data": _data,
    "schema": _data,
}


def run_view(name: str) -> None:
    """Show the view ``name`` (a key of :data:`VIEWS`) over a fresh demo project until it is closed."""
    from dpdesk.appdata.demo import create_demo_project
    from dpdesk.gui.app.application import application
    from dpdesk.gui.runtime.scripted import SCRIPTED, work_through
    from dpdesk.gui.runtime.session import ProjectSession

    if name not in VIEWS:
        raise SystemExit(f"unknown view {name!r} (one of {', '.join(VIEWS)})")
    app = application()
    session = ProjectSession(create_demo_project(Path(tempfile.mkdtemp(prefix="dpdesk-view-"))))
    work_through(session, SCRIPTED[:8])
    w = VIEWS[name](session)
    w.resize(1100, 800)
    w.show()
    app.exec()
    session.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dpdesk.gui.app.preview", description=__doc__.splitlines()[0])
    p.add_argument("view", choices=sorted(VIEWS))
    run_view(p.parse_args(argv).view)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
