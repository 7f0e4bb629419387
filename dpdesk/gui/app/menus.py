"""The menu bar: every menu and action of the main window, built from one table.

A feature adds its action by adding one :class:`ActionSpec` row to :data:`ACTIONS` (menu, text,
shortcut, the window method it calls, and whether it needs an open project); nothing else builds
menus. The window keeps the built actions by key (``window.menu_actions["quit"]``) and calls
:func:`update_actions` when a project opens or closes, so project actions are never live without one.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow

MENUS = ("&File", "&Edit", "&Release", "&Help")


@dataclass(frozen=True)
class ActionSpec:
    """One menu entry; ``key`` is None for a separator."""

    menu: str
    key: str | None = None
    text: str = ""
    slot: str = ""  # name of the window method the action calls
    shortcut: str | QKeySequence.StandardKey | None = None
    needs_project: bool = False
    tip: str = ""


def _separator(menu: str) -> ActionSpec:
    return ActionSpec(menu)


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "&File",
        "new_project",
        "&New project…",
        "new_project",
        QKeySequence.StandardKey.New,
        tip="Create a project from a table: columns, domains, budget",
    ),
    ActionSpec("&File", "open_project", "&Open project…", "choose_project", QKeySequence.StandardKey.Open),
    ActionSpec(
        "&File",
        "open_demo",
        "Open &demo",
        "open_demo",
        tip="Copy the bundled demo into a fresh project and open it",
    ),
    _separator("&File"),
    ActionSpec(
        "&File",
        "close_project",
        "&Close project",
        "close_project_to_start",
        QKeySequence.StandardKey.Close,
        needs_project=True,
    ),
    ActionSpec(
        "&File",
        "export_synthetic",
        "Export &synthetic table…",
        "export_synthetic",
        needs_project=True,
        tip="A synthetic table drawn from the released answers only (free, recorded in the ledger)",
    ),
    _separator("&File"),
    ActionSpec("&File", "quit", "&Quit", "close", "Ctrl+Q"),
    ActionSpec("&Edit", "new_request", "&New request…", "new_request", "Ctrl+Shift+N", needs_project=True),
    ActionSpec("&Edit", "import_requests", "&Import requests…", "import_requests", needs_project=True),
    ActionSpec(
        "&Edit",
        "new_posterior",
        "&Posterior of proportions…",
        "new_posterior",
        needs_project=True,
        tip="Release the Dirichlet (Beta) posterior of an attribute's shares in a box",
    ),
    ActionSpec(
        "&Edit",
        "new_estimate",
        "&Zero-cost estimate…",
        "new_estimate",
        needs_project=True,
        tip="A biased estimate of a query from the released answers alone (free; no (ε, δ) promise)",
    ),
    ActionSpec(
        "&Edit",
        "edit_request",
        "&Edit request…",
        "edit_request",
        "Ctrl+E",
        needs_project=True,
        tip="Change the selected pending request",
    ),
    ActionSpec(
        "&Edit",
        "answer_all_free",
        "Answer all &free requests",
        "answer_all_free",
        needs_project=True,
        tip="Release every pending request that history answers at no cost",
    ),
    ActionSpec(
        "&Edit",
        "delete_request",
        "&Delete request",
        "delete_request",
        needs_project=True,
        tip="Remove the selected pending request from the queue",
    ),
    _separator("&Edit"),
    ActionSpec(
        "&Edit",
        "watch_claim",
        "&Watch a claim…",
        "watch_claim",
        needs_project=True,
        tip="Watch a claim releases must not make too certain (inference control)",
    ),
    # the answer panel's actions, in a menu so their shortcuts are seen (the panel's buttons say them too)
    ActionSpec(
        "&Release",
        "release_inferred",
        "Release &inferred answer",
        "release_inferred",
        "Ctrl+I",
        needs_project=True,
        tip="Release the selected request's answer from history (free)",
    ),
    ActionSpec(
        "&Release",
        "spend_and_release",
        "&Spend and release…",
        "spend_and_release",
        "Ctrl+Shift+S",
        needs_project=True,
        tip="Spend privacy budget on a fresh answer to the selected request (asks for confirmation)",
    ),
    ActionSpec(
        "&Release",
        "reject_request",
        "&Reject…",
        "reject_request",
        "Ctrl+Shift+R",
        needs_project=True,
        tip="Refuse the selected request, with a note for the requester",
    ),
    ActionSpec("&Release", "next_request", "&Next request", "next_request", "Ctrl+Down", needs_project=True),
    ActionSpec(
        "&Release", "previous_request", "&Previous request", "previous_request", "Ctrl+Up", needs_project=True
    ),
    _separator("&Release"),
    ActionSpec(
        "&Release",
        "plan_batch",
        "Plan &batch…",
        "plan_batch",
        needs_project=True,
        tip="Plan the selected pending requests (or all pending) together: one release answers them all",
    ),
    ActionSpec(
        "&Help",
        "glossary",
        "&Glossary",
        "show_glossary",
        QKeySequence.StandardKey.HelpContents,
        tip="What α, ±ε, δ, system cost and the other terms mean",
    ),
    ActionSpec(
        "&Help",
        "about",
        "&About dpdesk",
        "show_about",
        tip="dpdesk's version and licence, the versions of Qt, OpenDP and DuckDB, the project file format",
    ),
)


def build_menus(window: QMainWindow, actions: tuple[ActionSpec, ...] = ACTIONS) -> dict[str, QAction]:
    """Fill ``window``'s menu bar from ``actions``; returns the actions by key."""
    bar = window.menuBar()
    menus = {title: bar.addMenu(title) for title in MENUS}
    built: dict[str, QAction] = {}
    for spec in actions:
        menu = menus.get(spec.menu) or menus.setdefault(spec.menu, bar.addMenu(spec.menu))
        if spec.key is None:
            menu.addSeparator()
            continue
        action = QAction(spec.text, window)
        action.setObjectName(spec.key)
        if spec.shortcut is not None:
            action.setShortcut(QKeySequence(spec.shortcut))
        if spec.tip:
            action.setStatusTip(spec.tip)
            action.setToolTip(spec.tip)
        # looked up when triggered, so the window's method (or a test's replacement) is the one called
        action.triggered.connect(lambda _checked=False, slot=spec.slot: getattr(window, slot)())
        action.setProperty("needs_project", spec.needs_project)
        menu.addAction(action)
        built[spec.key] = action
    return built


def update_actions(actions: dict[str, QAction], project_open: bool) -> None:
    """Enable the actions that need a project only while one is open."""
    for action in actions.values():
        if action.property("needs_project"):
            action.setEnabled(project_open)
