"""Spend policy: how much of what is left one fresh answer may, and must, use (budget pacing).

Paper Fig. 4 buys, for every request history cannot answer, exactly the α the request needs. Under a
fixed total budget that greedy rule has two costs the paper's system never sees:

* **one request can drain a cell.** A request with a tight ε on a popular cell can need most of that
  cell's budget; every later request touching the cell must then be inferred or rejected.
* **small purchases are poor value for later requests.** A row bought at α has noise variance
  ``∝ 1/α²``, so the information it adds to history grows as ``α²`` while its cost grows as ``α``:
  ``k`` rows at ``α/k`` carry ``1/k`` of the information of one row at ``α``. Requests with a loose ε
  buy tiny rows that help nobody after them.

A :class:`SpendPolicy` fixes both with two fractions of the *headroom* — the largest α the query's cells
can still pay for, ``min_j (B − c_j)·S/|Q_j|`` over the cells ``j`` the query touches:

* ``cap``: a request that needs more than ``cap × headroom`` is declined (its cells are kept for the
  many cheaper requests to come);
* ``floor``: a fresh answer spends at least ``floor × headroom`` (never more than the headroom). The
  answer released is then *more* accurate than requested, and the row it leaves in history answers
  later requests for free.

Both depend only on public quantities (the ledger's per-cell costs, the total budget and the query),
never on the data. With ``floor = 0`` and ``cap = 1`` the policy changes nothing (the paper's rule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.queries.algebra import abs_dense
from dpdesk.engine.queries.query import Query

__all__ = ["PolicyOutcome", "SpendPolicy", "headroom"]


def headroom(
    query: Query, cell_costs: np.ndarray, total: float, measure: str = "epsilon"
) -> tuple[float, int | None]:
    """The largest α a fresh answer to ``query`` can still be charged, and the cell that limits it.

    Under zCDP (``measure="rho"``: costs and total in ρ) a fresh answer at α adds ``(α|Q_j|/S)²/2`` to
    cell ``j`` — Gaussian noise at ``σ = S/α``, or a pure α converted — so it fits while
    ``α ≤ √(2(B − c_j))·S/|Q_j|``.

    A fresh answer at α adds ``α|Q_j|/S`` to cell ``j`` (paper Thm 5.4), so it fits while
    ``α ≤ (B − c_j)·S/|Q_j|`` for every touched cell. Returns ``(0.0, j)`` when a touched cell is spent
    and ``(inf, None)`` for a query that touches no cell.

    Examples
    --------
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> q = query_from_vector(np.array([2.0, 1.0, 0.0]), (3,))   # S = 2: costs α on cell 0, α/2 on cell 1
    >>> room, cell = headroom(q, np.array([0.5, 0.9, 1.0]), 1.0)   # cell 1: (1 − 0.9)·2/1
    >>> round(room, 12), cell
    (0.2, 1)
    """
    share = abs_dense(query) / query.sensitivity if query.sensitivity > 0 else np.zeros(query.n_cells)
    touched = np.flatnonzero(share > 0)
    if touched.size == 0:
        return math.inf, None
    left = np.maximum(total - np.asarray(cell_costs, dtype=float)[touched], 0.0)
    room = (np.sqrt(2.0 * left) if measure == "rho" else left) / share[touched]
    k = int(np.argmin(room))
    return float(room[k]), int(touched[k])


@dataclass(frozen=True)
class PolicyOutcome:
    """What the policy makes of a needed α: the α to charge, or a refusal."""

    alpha: float  # α to charge (≥ the needed α unless refused)
    needed: float  # the α the request needs (fused or Thm 5.3)
    headroom: float
    limiting_cell: int | None
    declined: bool  # the request needs more than cap × headroom
    raised: bool  # the floor raised α above what the request needs


@dataclass(frozen=True)
class SpendPolicy:
    """Pace a fixed total budget: spend at least ``floor`` and at most ``cap`` of a query's headroom.

    Parameters
    ----------
    floor : float
        Fraction in ``[0, 1]`` of the headroom every fresh answer spends at least (0: only what the
        request needs).
    cap : float
        Fraction in ``(0, 1]`` of the headroom one request may need; a request needing more is declined
        (1: any request that fits is answered).

    Examples
    --------
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> q = query_from_vector(np.array([1.0, 1.0]), (2,))
    >>> pol = SpendPolicy(floor=0.1, cap=0.25)
    >>> pol.apply(q, 0.001, np.zeros(2), 1.0).alpha      # raised to 10% of the headroom
    0.1
    >>> pol.apply(q, 0.3, np.zeros(2), 1.0).declined     # needs 30% > 25%
    True
    """

    floor: float = 0.0
    cap: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.floor) and 0.0 <= self.floor <= 1.0):
            raise DpdeskError(f"spend policy floor ({self.floor}) must be a fraction in [0, 1]")
        if not (math.isfinite(self.cap) and 0.0 < self.cap <= 1.0):
            raise DpdeskError(f"spend policy cap ({self.cap}) must be a fraction in (0, 1]")
        if self.floor > self.cap:
            raise DpdeskError(f"spend policy floor ({self.floor}) must not exceed its cap ({self.cap})")

    @property
    def neutral(self) -> bool:
        """True when the policy never changes a decision (the paper's greedy rule)."""
        return self.floor == 0.0 and self.cap == 1.0

    def describe(self) -> str:
        if self.neutral:
            return "greedy"
        parts = []
        if self.floor > 0:
            parts.append(f"spend ≥ {self.floor:.0%}")
        if self.cap < 1:
            parts.append(f"decline > {self.cap:.0%}")
        return "pacing (" + ", ".join(parts) + " of headroom)"

    def apply(self, query: Query, needed: float, cell_costs: np.ndarray, total: float) -> PolicyOutcome:
        """The α to charge for a fresh answer that needs ``needed``, given the cells' current costs."""
        room, cell = headroom(query, cell_costs, total)
        if not math.isfinite(room):
            return PolicyOutcome(needed, needed, room, cell, False, False)
        if needed > room:  # does not fit at all: the budget check rejects it, the policy has no say
            return PolicyOutcome(needed, needed, room, cell, False, False)
        if needed > self.cap * room * (1.0 + 1e-12):
            return PolicyOutcome(needed, needed, room, cell, True, False)
        target = self.floor * room
        if target > needed:
            # stay a hair inside the headroom so rounding in the cost sums never overflows a cell
            alpha = min(target, room * (1.0 - 1e-9))
            return PolicyOutcome(max(alpha, needed), needed, room, cell, False, alpha > needed)
        return PolicyOutcome(needed, needed, room, cell, False, False)
