"""A person's privacy loss from the per-cell costs: the one place the privacy unit enters the accounting.

The per-cell costs ``B_j`` of paper Thm 5.4 bound what adding or removing **one row** in cell ``j`` does
to the law of everything released. A person of a project whose privacy unit is a column holds up to
``k = max_rows`` rows of the (truncated) cube, and truncation is per person, so a neighbouring table adds
or removes at most ``k`` rows, all of one person. Adding them one at a time (group privacy, chained row
by row) bounds that person's loss by the sum of the per-cell costs of the cells their rows fall in
(docs/person-level.md, Theorem 1):

* no bound per cell: the rows may all fall in one cell, so the loss is ``k · max_j B_j``;
* one row per cell: the rows fall in ``k`` distinct cells, so the loss is the sum of the ``k`` largest;
* one row per value of some attributes ``G``: at most one row in each ``G``-slice of the cube, so the
  loss is the sum of the ``k`` largest slice maxima.

With ``k = 1`` each is ``max_j B_j``, today's system cost, to the bit (the same ``max``). A measure of
another shape (a sum's per-cell sensitivity, issue 36; a query's coefficients) goes through the same rule:
:meth:`PersonRule.loss` of ``|Q_j|`` is a query's sensitivity to one person.

For a ρ-zCDP release (issue 37) :meth:`PersonRule.rho` is the zCDP group bound over the same
placements. For an (α, δ) release the same chain adds the δ of each row's step, each scaled by the odds of the steps
before it: ``δ_person ≤ Σ_{i<k} e^{i·max B}·max D`` (Theorem 2), which is ``max D`` when ``k = 1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.unit import ROW, PrivacyUnit

__all__ = ["ROW_RULE", "PersonRule", "person_rule"]


@dataclass(frozen=True)
class PersonRule:
    """How the per-cell costs add up to one person's loss (see the module docstring).

    ``k`` rows per person; ``group_axes`` None when a person's rows may share a cell, else the cube's
    axes of the attributes a person holds at most one row per value of (all axes: one row per cell).

    Examples
    --------
    >>> import numpy as np
    >>> b = np.array([0.1, 0.4, 0.3, 0.2])
    >>> ROW_RULE.loss(b), PersonRule(3, None, (4,)).loss(b), PersonRule(3, (0,), (4,)).loss(b)
    (0.4, 1.2000000000000002, 0.9)
    """

    k: int = 1
    group_axes: tuple[int, ...] | None = None
    shape: tuple[int, ...] = ()

    @property
    def rows_are_people(self) -> bool:
        return self.k == 1

    def loss(self, values: np.ndarray) -> float:
        """One person's loss given each cell's per-row loss ``values`` (flat, C order; 0 if empty)."""
        v = np.asarray(values, dtype=float).ravel()
        if v.size == 0:
            return 0.0
        if self.k == 1 or self.group_axes is None:
            top = float(v.max())
            return top if self.k == 1 else self.k * top
        slices = self._slice_maxima(v)
        if slices.size > self.k:
            slices = np.partition(slices, slices.size - self.k)[slices.size - self.k :]
        return math.fsum(slices.tolist())  # correctly rounded: the same figure whatever order they came in

    def _slice_maxima(self, v: np.ndarray) -> np.ndarray:
        """Per slice a person may hold one row of: the largest per-row loss in it."""
        assert self.group_axes is not None
        if len(self.group_axes) == len(self.shape) or not self.shape:
            return v
        cube = v.reshape(self.shape)
        other = tuple(a for a in range(len(self.shape)) if a not in self.group_axes)
        return np.asarray(cube.max(axis=other)).ravel()

    def delta(self, costs: np.ndarray, deltas: np.ndarray) -> float:
        """One person's δ given per-cell α ``costs`` and δ ``deltas`` (Theorem 2; ``max D`` when k = 1)."""
        d = np.asarray(deltas, dtype=float).ravel()
        if d.size == 0:
            return 0.0
        top = float(d.max())
        if self.k == 1 or top == 0.0:
            return top
        b = np.asarray(costs, dtype=float).ravel()
        e = float(b.max()) if b.size else 0.0
        return top * math.fsum(math.exp(i * e) for i in range(self.k))

    def rho(self, values: np.ndarray) -> float:
        """One person's zCDP ρ given each cell's per-row ρ ``values`` (``max ρ`` when k = 1).

        Group privacy of zCDP (Bun & Steinke 2016, Prop. 27: ``k²ρ`` for ``k`` rows of a ρ-zCDP release):
        a person's rows added one at a time compose as ``(Σ √ρ_j)²`` over the cells they fall in, so the
        rule is applied to ``√ρ`` and squared — ``k² · max ρ`` without a bound per cell.
        """
        v = np.asarray(values, dtype=float).ravel()
        if v.size == 0:
            return 0.0
        if self.k == 1:
            return float(v.max())
        if self.group_axes is None:  # k rows in the costliest cell: k² × its ρ, as the preview computes it
            return self.k * self.k * float(v.max())
        return self.loss(np.sqrt(v)) ** 2

    def factor(self, measure: str = "epsilon") -> int:
        """Without a bound per cell, one person's total is this × the largest cell's: ``k`` in ε, ``k²``
        in ρ (1 when one row is one person)."""
        return self.k if measure == "epsilon" else self.k * self.k

    def total(self, values: np.ndarray, measure: str = "epsilon") -> float:
        """One person's total in ``measure`` (``"epsilon"``: :meth:`loss`; ``"rho"``: :meth:`rho`)."""
        return self.loss(values) if measure == "epsilon" else self.rho(values)

    def words(self) -> str:
        """How the per-cell costs add up, in the curator's words."""
        return f"one person's privacy loss is {self.how()}"

    def how(self) -> str:
        """What one person's loss is, from the per-cell costs (``words`` without its subject)."""
        if self.k == 1:
            return "the largest cell's"
        if self.group_axes is None:
            return f"{self.k} × the largest cell's (up to {self.k} rows in one cell)"
        if len(self.group_axes) == len(self.shape):
            return f"the sum of the {self.k} largest cells' (one row per cell)"
        return (
            f"the sum, over the {self.k} costliest slices a person may hold one row of, of each slice's "
            "largest cell"
        )


ROW_RULE = PersonRule()


def person_rule(schema: object) -> PersonRule:
    """The rule of a schema's privacy unit (duck-typed: ``schema.unit``, ``schema.names``, ``schema.shape``)."""
    unit: PrivacyUnit = getattr(schema, "unit", ROW)
    if unit.rows_are_people or unit.max_rows == 1:
        return ROW_RULE
    shape = tuple(int(n) for n in schema.shape)  # type: ignore[attr-defined]
    if not unit.grouped:
        return PersonRule(unit.max_rows, None, shape)
    names = tuple(schema.names)  # type: ignore[attr-defined]
    group = unit.group_attributes(names)
    return PersonRule(unit.max_rows, tuple(names.index(n) for n in group), shape)
