"""One frozen moment of the ledger: every public input a plan of any kind is priced from.

A :class:`LedgerSnapshot` is made by the store's one assess function (``store/assessing.py``) from a
consistent read of the ledger view — history, per-cell costs and δ, head, the releases answered from
their own structure — and the settings in force. Its arrays are read-only. The :attr:`history` is the
view's own History, valid while the view is held for assessing (the assess function holds it for the
duration of :meth:`~dpdesk.engine.kinds.base.ReleaseKind.plan`); everything else may be kept.

The seams the next kinds need are here: the privacy unit and the accounting mode of a project
(docs/architecture.md) become fields of the snapshot, read by the kinds whose map depends on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.budget.person import PersonRule, person_rule
from dpdesk.engine.inference.history import History
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.schema import Schema

__all__ = ["LedgerSnapshot"]


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` (per-cell values) as a read-only float array (no copy when it already is
    one: a cube may have 10⁶ cells)."""
    out = np.asarray(a, dtype=float)
    if out.flags.writeable:
        out = out.copy()
        out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class LedgerSnapshot:
    """The public inputs of one moment (see the module docstring)."""

    schema: Schema
    settings: Settings
    cell_costs: np.ndarray  # per-cell α so far (read-only)
    cell_deltas: np.ndarray  # per-cell δ so far (read-only)
    head: tuple[int, str | None] = (0, None)  # (seq, hash) of the newest entry; hash None outside a project
    delta_cap: float = 0.0  # the largest per-cell δ the project allows
    history: History | None = None  # the released rows' History (while held; None: not read)
    releases: tuple[Any, ...] = ()  # (entry seq, release) answered from their own structure
    left_out: int = 0  # releases whose rows the History does not hold

    def __post_init__(self) -> None:
        object.__setattr__(self, "cell_costs", _read_only(self.cell_costs))
        object.__setattr__(self, "cell_deltas", _read_only(self.cell_deltas))
        object.__setattr__(self, "delta_cap", float(self.delta_cap))

    @property
    def total_budget(self) -> float:
        return self.settings.total_budget

    @property
    def rule(self) -> PersonRule:
        """How per-cell costs add up to one person's loss: the schema's privacy unit
        (:mod:`~dpdesk.engine.budget.person`)."""
        return person_rule(self.schema)

    @property
    def basis(self) -> Basis:
        """What a plan made from this moment records; ``Project.release`` refuses it once the ledger or
        the settings move on."""
        seq, head = self.head
        return Basis(head, seq, self.settings.to_json())

    def public(self) -> dict[str, Any]:
        """The inputs a box-shaped kind is priced with, as keyword arguments: per-cell α and δ, the total,
        the δ cap, the basis, the accounting (None: pure ε; under zCDP the costs and total are in ρ) and
        the person rule."""
        return {
            "cell_costs": self.cell_costs,
            "cell_deltas": self.cell_deltas,
            "total_budget": self.total_budget,
            "delta_cap": self.delta_cap,
            "basis": self.basis,
            "accounting": self.settings.accounting,
            "rule": self.rule,
        }
