"""The DP bound for a claim about one person: posterior odds ≤ e^B × prior odds, no adversary model.

Per-cell accounting (paper Thm 5.4) gives each cell ``j`` a privacy loss ``B_j``: adding one record to
cell ``j`` changes the probability of everything released by a factor of at most ``e^{B_j}``. For a
claim about one person — "Alice's record is in one of the cells ``J``" — against the alternative
"it is in one of the cells ``K``" (or "she is not in the table", ``K`` empty), compare both with the
table ``D`` without her: ``Pr(out | J) ≤ e^{max_J B} Pr(out | D)`` and ``Pr(out | K) ≥ e^{−max_K B}
Pr(out | D)`` whatever the mixture over cells, hence

    posterior odds(J : K) ≤ e^{max_J B + max_K B} × prior odds(J : K),

for any prior and any adversary knowing everyone else's record. It needs no model of θ's posterior, and
it holds however the releases were chosen (adaptive or not), unlike the crossing risk of
:mod:`dpdesk.engine.claims.control`, which is about counts, not one person.

When a person holds up to ``k`` rows (the project's privacy unit), "the person" is the unit: their rows
fall in ``J`` (or in ``K``), and adding them one by one multiplies the factors, so each ``max`` above
becomes the person rule's sum over the cells of ``J`` (or ``K``) their rows can fall in
(:mod:`dpdesk.engine.budget.person`; docs/person-level.md, Theorem 3). With ``k = 1`` it is the max.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.budget.person import ROW_RULE, PersonRule
from dpdesk.engine.errors import DpdeskError

__all__ = ["OddsBound", "odds_bound"]


def _cells(name: str, cells: Sequence[int], n: int) -> np.ndarray:
    idx = np.asarray(list(cells), dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise DpdeskError(f"{name}: cell index out of range 0..{n - 1}")
    return idx


@dataclass(frozen=True)
class OddsBound:
    """``posterior odds ≤ factor × prior odds`` for "the person is in ``cells``" against the alternative.

    Attributes
    ----------
    exponent : float
        ``max_J B + max_K B`` (``K`` empty: "not in the table", adding 0).
    """

    exponent: float

    @property
    def factor(self) -> float:
        return math.exp(self.exponent)

    def posterior_at_most(self, prior: float) -> float:
        """The largest posterior probability of the claim given its prior probability ``prior``."""
        if not (isinstance(prior, (int, float)) and 0.0 <= prior <= 1.0):
            raise DpdeskError(f"prior probability ({prior!r}) must lie in [0, 1]")
        if prior in (0.0, 1.0):
            return float(prior)
        odds = self.factor * prior / (1.0 - prior)
        return 1.0 if math.isinf(odds) else odds / (1.0 + odds)


def odds_bound(
    cell_costs: np.ndarray,
    cells: Sequence[int],
    others: Sequence[int] | None = None,
    rule: PersonRule = ROW_RULE,
) -> OddsBound:
    """The odds bound of a one-person claim from the per-cell losses ``cell_costs`` (``B``, flat).

    Parameters
    ----------
    cell_costs : array_like
        ``B_j`` per cell (``History.cell_costs`` or the ledger view's).
    cells : sequence of int
        ``J``: flat indices of the cells the claim puts the person in (non-empty).
    others : sequence of int, optional
        ``K``: the cells of the alternative; None means "not in the table".
    rule : PersonRule, optional
        How a person's rows add up (the project's privacy unit; default one row is one person).

    Examples
    --------
    >>> odds_bound(np.array([0.5, 0.2, 0.1]), [0]).factor == math.exp(0.5)
    True
    >>> round(odds_bound(np.array([0.5, 0.2, 0.1]), [0], [1, 2]).exponent, 12)
    0.7
    """
    b = np.asarray(cell_costs, dtype=float).reshape(-1)
    j = _cells("claim cells", cells, b.size)
    if j.size == 0:
        raise DpdeskError("claim cells: name at least one cell")
    k = _cells("alternative cells", others or (), b.size)
    if rule.rows_are_people:
        return OddsBound(float(b[j].max()) + (float(b[k].max()) if k.size else 0.0))
    return OddsBound(_within(b, j, rule) + (_within(b, k, rule) if k.size else 0.0))


def _within(b: np.ndarray, cells: np.ndarray, rule: PersonRule) -> float:
    """One person's loss when all their rows fall in ``cells`` (the others' costs do not count)."""
    masked = np.zeros_like(b)
    masked[cells] = b[cells]
    return rule.loss(masked)
