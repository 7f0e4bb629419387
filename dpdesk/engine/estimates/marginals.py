"""Marginal-shaped histories: the consistent projection in closed form, and the max-entropy fit to it.

A *marginal* release publishes every cell of the table's marginal on attributes ``A`` with noise of one
variance ``σ_A²`` per cell. The seed's §5.2 releases all 36 two-way marginals of a 9-attribute table
(29 570 cells); the dense BLUE of :func:`~.maxent.consistent_answers` would factor a 29 570-row system.
This module does the same projection from the marginals' structure.

**The projection (derivation).** For a table ``y`` over attributes ``A`` and ``S ⊆ A`` let ``P_S`` be the
product over ``a ∈ S`` of ``(I − J/n_a)`` (centring along ``a``) and over ``a ∈ A∖S`` of ``J/n_a``
(averaging along ``a``). The ``P_S`` are orthogonal projections onto mutually orthogonal subspaces
``V_S`` that sum to the whole space (the ANOVA / Fourier decomposition). Write
``c_S(y) = centre_S(marg_S(y))``: the marginal of ``y`` on ``S``, centred along every axis of ``S``
(``c_∅`` is the total). Then ``P_S y = broadcast_A(c_S(y)) / N_{A∖S}`` with ``N_{A∖S} = Π_{a∈A∖S} n_a``.
Marginals ``{y_A}`` are consistent (come from one table ``x``) iff ``c_S(y_A) = c_S(x)`` for every
``S ⊆ A``, because marginalising maps ``V_S`` of ``A`` onto ``V_S`` of ``B ⊇ S`` and annihilates it for
``S ⊄ B``. So the consistent sets are parametrised by free centred tables ``{c_S}``, one per ``S`` in the
downward closure of the released attribute sets, and by orthogonality the weighted least-squares problem

    min Σ_A σ_A⁻² ‖y_A − Σ_{S⊆A} broadcast_A(c_S) / N_{A∖S}‖²

splits into one problem per ``S``: ``min Σ_{A⊇S} ‖c_S(y_A) − c_S‖² / (σ_A² N_{A∖S})`` (a broadcast table
has squared norm ``N_{A∖S}`` times its own). Its solution is the **inverse-variance weighted average**
``c_S = Σ_{A⊇S} ω_A c_S(y_A) / Σ_{A⊇S} ω_A`` with ``ω_A = 1/(σ_A² N_{A∖S})`` — ``c_S(y_A)`` sums
``N_{A∖S}`` noisy cells per entry, so that is its variance. With equal noise, a component shared by
marginals of equal size is their plain average; otherwise the marginal that sums fewer noisy cells
weighs more. A known table size fixes ``c_∅ = n`` (the BLUE with the universal query known).
Each consistent marginal is ``Σ_{S⊆A} broadcast_A(c_S) / N_{A∖S}``. This is the generalised
least-squares projection — the BLUE of every released cell — at a cost of one pass over the tables.

**The fit.** :func:`~.marginal_fit.fit_marginals` fits the seed's maximum-entropy model (§4) to the
projected marginals with one log-potential per released cell, never a query object per cell: Gibbs
particles with stochastic scaling and a stated convergence test.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.estimates.features import Clique, CliqueModel
from dpdesk.engine.estimates.kernel import check_prior

__all__ = ["Marginal", "consistent_marginals", "marginal_model", "nonnegative_marginals"]


@dataclass(frozen=True, eq=False)
class Marginal:
    """Released counts of every cell of the marginal on ``axes`` (increasing), noise variance ``variance``."""

    axes: tuple[int, ...]
    table: np.ndarray
    variance: float

    def __post_init__(self) -> None:
        axes = tuple(int(a) for a in self.axes)
        if list(axes) != sorted(set(axes)):
            raise DpdeskError(f"marginal: axes {axes} must be increasing and distinct")
        if not (math.isfinite(self.variance) and self.variance > 0):
            raise DpdeskError(f"marginal on {axes}: the noise variance ({self.variance!r}) must be positive")
        t = np.array(self.table, dtype=np.float64, copy=True)
        if t.ndim != len(axes) or not np.all(np.isfinite(t)):
            raise DpdeskError(
                f"marginal on {axes}: its table must be finite with one dimension per attribute"
            )
        t.setflags(write=False)
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "table", t)


def _check(shape: Sequence[int], marginals: Sequence[Marginal]) -> None:
    for mg in marginals:
        if mg.axes and (mg.axes[-1] >= len(shape) or mg.axes[0] < 0):
            raise DpdeskError(f"marginal on {mg.axes}: attribute out of range 0..{len(shape) - 1}")
        want = tuple(shape[a] for a in mg.axes)
        if mg.table.shape != want:
            raise DpdeskError(f"marginal on {mg.axes}: table shape {mg.table.shape}, the domain needs {want}")


def _component(table: np.ndarray, axes: tuple[int, ...], sub: tuple[int, ...]) -> np.ndarray:
    """``c_S(y)``: the marginal of ``table`` (over ``axes``) on ``sub``, centred along each axis of ``sub``."""
    drop = tuple(k for k, a in enumerate(axes) if a not in sub)
    c = table.sum(axis=drop) if drop else table
    for k in range(c.ndim):
        c = c - c.mean(axis=k, keepdims=True)
    return c


def consistent_marginals(
    shape: Sequence[int], marginals: Sequence[Marginal], total: float | None = None
) -> list[np.ndarray]:
    """The generalised least-squares consistent marginals (module docstring), one table per input.

    Parameters
    ----------
    shape : sequence of int
        The domain's attribute sizes.
    marginals : sequence of Marginal
        Released marginals with independent noise (equal variance within each).
    total : float or None
        The table size if known (declared): the projection then keeps it exactly.
    """
    shape = tuple(int(s) for s in shape)
    _check(shape, marginals)
    subsets = sorted(
        {s for mg in marginals for r in range(len(mg.axes) + 1) for s in itertools.combinations(mg.axes, r)},
        key=lambda s: (len(s), s),
    )
    comps: dict[tuple[int, ...], np.ndarray] = {}
    for sub in subsets:
        num: np.ndarray | float = 0.0
        den = 0.0
        for mg in marginals:
            if set(sub) <= set(mg.axes):
                rest = math.prod(shape[a] for a in mg.axes if a not in sub)
                w = 1.0 / (mg.variance * rest)
                num = num + w * _component(mg.table, mg.axes, sub)
                den += w
        comps[sub] = np.asarray(num) / den
    if total is not None:
        if not math.isfinite(total):
            raise DpdeskError(f"total ({total!r}) must be finite")
        comps[()] = np.asarray(float(total))
    out = []
    for mg in marginals:
        y = np.zeros(mg.table.shape)
        for r in range(len(mg.axes) + 1):
            for sub in itertools.combinations(mg.axes, r):
                rest = math.prod(shape[a] for a in mg.axes if a not in sub)
                view = tuple(shape[a] if a in sub else 1 for a in mg.axes)
                y = y + comps[sub].reshape(view) / rest
        out.append(y)
    return out


def nonnegative_marginals(
    shape: Sequence[int],
    marginals: Sequence[Marginal],
    total: float | None = None,
    *,
    tol: float = 1e-6,
    max_iter: int = 10_000,
) -> list[np.ndarray]:
    """The consistent **non-negative** marginals nearest the release, one table per input.

    The weighted least-squares projection of :func:`consistent_marginals` can leave cells negative (at
    §5.2's scale, 2 885 of 29 570); clipping them to 0 breaks consistency again (marginals sharing an
    attribute then disagree on its 1-way counts), and no distribution fits inconsistent targets: on
    §5.2 the clipped targets lie 0.23 noise scales RMS from the nearest consistent non-negative set,
    a misfit no fit can remove. This is the projection, in the same norm ``Σ_A ‖·‖²/σ_A²``, onto the
    intersection of the consistent set (total kept if given) and the non-negative orthant, by
    **Dykstra's alternating projections** (the consistent projection, then clipping, with Dykstra's
    corrections so that the limit is the nearest point, not just a point of the intersection). The true
    table's marginals lie in that convex set, so the result is no farther from them, in that norm, than
    :func:`consistent_marginals`' — never a loss of accuracy.

    Stops when the consistent iterate's most negative cell and its distance to the clipped one are below
    ``tol`` counts; returns the clipped (non-negative) iterate.
    """
    x = consistent_marginals(shape, marginals, total)
    if min(float(t.min()) for t in x) >= 0.0:
        return x
    variances = [mg.variance for mg in marginals]
    fix_k = [np.zeros_like(t) for t in x]  # Dykstra's correction for the orthant
    fix_c = [np.zeros_like(t) for t in x]  # and for the consistent set
    z = x
    for _ in range(int(max_iter)):
        z = [np.clip(a + b, 0.0, None) for a, b in zip(x, fix_k)]
        fix_k = [a + b - c for a, b, c in zip(x, fix_k, z)]
        moved = [a + b for a, b in zip(z, fix_c)]
        x = consistent_marginals(
            shape, [Marginal(mg.axes, t, v) for mg, t, v in zip(marginals, moved, variances)], total
        )
        fix_c = [a - b for a, b in zip(moved, x)]
        gap = max(float(np.abs(a - b).max()) for a, b in zip(x, z))
        if gap <= tol and min(float(t.min()) for t in x) >= -tol:
            break
    else:
        raise DpdeskError(
            f"non-negative projection: no convergence in {max_iter} rounds (gap {gap:.3g} counts)"
        )
    return [np.clip(t, 0.0, None) for t in x]


def marginal_model(
    shape: Sequence[int], marginals: Sequence[Marginal], prior: Sequence[np.ndarray] | None = None
) -> CliqueModel:
    """The clique model whose rows are the marginals' cells, in order (row-major within each table)."""
    shape = tuple(int(s) for s in shape)
    cliques, start = [], 0
    for mg in marginals:
        k = mg.table.size
        cliques.append(
            Clique(mg.axes, mg.table.shape, np.arange(start, start + k), sp.identity(k, format="csr"))
        )
        start += k
    return CliqueModel(shape, cliques, check_prior(prior, shape))


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a
