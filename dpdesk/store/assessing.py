"""The one assess function: a plan of any kind, priced from one frozen moment of the ledger view.

:func:`assess` reads a consistent moment of a :class:`~dpdesk.store.view.LedgerView` — history,
per-cell α and δ, head, the releases answered from their own structure — into a
:class:`~dpdesk.engine.kinds.snapshot.LedgerSnapshot` and asks the request's kind (the registry) for its
plan. ``Project.assess``, the app's assessing worker and the command line all come here; it reads no
data and spends nothing. The view is held for assessing while the plan is made (its History's
factorisation grows while it estimates), so two assessments take turns while recording goes on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpdesk.engine import registry
from dpdesk.engine.kinds.base import Asked
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.kinds.snapshot import LedgerSnapshot
from dpdesk.engine.mechanisms.base import ReleasePlan
from dpdesk.store.view import AssessState, LedgerView

__all__ = ["assess", "snapshot_of"]


def snapshot_of(state: AssessState, view: LedgerView, settings: Settings, delta_cap: float) -> LedgerSnapshot:
    """The snapshot of one assessing moment of ``view`` under ``settings``."""
    return LedgerSnapshot(
        schema=view.schema,
        settings=settings,
        head=state.head,
        cell_costs=state.cell_costs,
        cell_deltas=np.zeros(view.schema.n_cells) if state.cell_deltas is None else state.cell_deltas,
        delta_cap=delta_cap,
        history=state.history,
        releases=tuple(state.releases),
        left_out=len(state.structured),
    )


def assess(
    view: LedgerView, asked: Asked, settings: Settings, *, delta_cap: float = 0.0, **options: Any
) -> ReleasePlan:
    """The release plan of ``asked`` (a queued request or an ad hoc one) against ``view`` now.

    ``options`` go to the kind's plan (a count's ``method``, ``seed``, ``interval``, ``progress``,
    ``cancelled``; a posterior's ``reference_size``; …); a kind ignores those it does not take.
    """
    kind = registry.kind(asked.kind)
    with view.assessing() as state:
        plan: ReleasePlan = kind.plan(asked, snapshot_of(state, view, settings, delta_cap), **options)
    return plan
