"""The best linear unbiased estimate of a query from a partition release, never forming n × n matrices.

A release publishes ``y_g = W_g x + noise`` for each group ``g`` of its plan, all with the same noise
scale, where ``W_g = ⊗_d M_{g,d}`` aggregates blocks of labels per attribute. The BLUE of ``θ = Q·x``
(paper Thm 3.1 with equal weights) is ``Σ_g A_g·y_g`` with ``A_g = W_g G⁺ Qᵀ`` and
``G = Σ_g W_gᵀ W_g``, its variance ``v·Q G⁺ Qᵀ`` (``v`` one row's noise variance), and ``θ`` is
estimable iff ``Q`` lies in the range of ``G``.

``G⁺`` is kept as a short sum of Kronecker products ``Σ_t c_t ⊗_d R_{t,d}`` of small per-attribute
operators, so product-form queries stay factored and a cube of 10⁶ cells costs little more than its
attributes' sizes:

- one group (cells; a tree, whose levels differ only on its attribute and merge into one Gram
  ``Σ_ℓ M_ℓᵀ M_ℓ``): ``G⁺ = ⊗_d pinv(G_d)``;
- several groups whose blocks are single labels or the whole domain (marginals): every ``G_{g,d}``
  is ``I`` or ``11ᵀ``, which share the eigenspaces "constant" and "contrast" of each attribute, so
  ``G⁺ = Σ_T λ_T⁻¹ ⊗_d P_{d,T_d}`` over the 2^N combinations with ``λ_T > 0`` (HDMM's marginal
  algebra); the others span the null space.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import reduce

import numpy as np

from dpdesk.engine.errors import PlanError, QueryError
from dpdesk.engine.partition.plan import Blocks, PartitionPlan
from dpdesk.engine.queries.query import Query

__all__ = ["ESTIMABLE_TOL", "Operator", "Pieces", "PlanSolver"]

ESTIMABLE_TOL = 1e-9  # relative residual of Q outside the range of G below which Q is estimable


class TreeInverse:
    """``G⁻¹`` of an interval tree's Gram ``Σ_j M_jᵀ M_j`` (nested blocks, single labels at the bottom).

    ``G⁻¹ q`` is the least-squares leaf estimate from node observations ``y`` with ``Wᵀy = q``; putting
    ``q`` on the leaves and 0 on every other node gives one, and the least-squares estimate on a tree
    with equal noise everywhere is two passes over the levels (Gaussian belief propagation, Hay et
    al.'s consistency step for any fan-out): upwards each node combines its own observation with the
    sum of its children's estimates by inverse variance, downwards each parent's final value is shared
    out to its children in proportion to their variances. O(rows) per vector, vectorised over columns.
    """

    def __init__(self, levels: list[Blocks]) -> None:
        # levels[0] single labels, each next level's blocks unions of the previous level's
        self.levels = levels
        self.children: list[
            np.ndarray
        ] = []  # for level i ≥ 1: the first child (index into level i−1) of each block
        for lower, upper in zip(levels[:-1], levels[1:]):
            first = np.searchsorted(lower.starts, upper.starts)
            if not np.array_equal(lower.starts[first], upper.starts):
                raise PlanError("tree: levels are not nested")
            self.children.append(first)

    def __call__(self, v: np.ndarray) -> np.ndarray:
        z = np.asarray(v, dtype=float)
        var = np.ones(z.shape[0])
        ups: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for first in self.children:
            s = np.add.reduceat(z, first, axis=0)
            vs = np.add.reduceat(var, first)
            nv = vs / (1.0 + vs)  # 1 / (1 + 1/vs): own observation (0 here) and the children's sum
            ups.append((z, var, s, vs))
            z = (s / vs[:, None] if z.ndim == 2 else s / vs) * (nv[:, None] if z.ndim == 2 else nv)
            var = nv
        for (zc, vc, s, vs), first in zip(reversed(ups), reversed(self.children)):
            reps = np.diff(np.append(first, zc.shape[0]))
            corr = np.repeat((z - s) / (vs[:, None] if z.ndim == 2 else vs), reps, axis=0)
            z = zc + (vc[:, None] if zc.ndim == 2 else vc) * corr
        return z


@dataclass(frozen=True, eq=False)
class Operator:
    """``a·I + b·11ᵀ (+ dense) (+ solve)`` on one attribute's ``size`` labels."""

    size: int
    a: float = 0.0
    b: float = 0.0
    dense: np.ndarray | None = None
    solve: TreeInverse | None = None

    def matvec(self, v: np.ndarray) -> np.ndarray:
        out = (
            self.a * v + self.b * v.sum(axis=0, keepdims=True)
            if (self.a or self.b)
            else np.zeros_like(v, dtype=float)
        )
        if self.dense is not None:
            out = out + self.dense @ v
        if self.solve is not None:
            out = out + self.solve(v)
        return out

    def apply(self, x: np.ndarray, axis: int) -> np.ndarray:
        """The operator along ``axis`` of a tensor."""
        y = np.moveaxis(x, axis, 0)
        k = y.shape[0]
        flat = y.reshape(k, -1)
        return np.moveaxis(self.matvec(flat).reshape(y.shape), 0, axis)

    def quad(self, u: np.ndarray, v: np.ndarray) -> float:
        return float(u @ self.matvec(v))

    def to_dense(self) -> np.ndarray:
        return self.matvec(np.eye(self.size))


def _identity(k: int) -> Operator:
    return Operator(k, a=1.0)


def _mean(k: int) -> Operator:
    return Operator(k, b=1.0 / k)


def _contrast(k: int) -> Operator:
    return Operator(k, a=1.0, b=-1.0 / k)


def _gram(blocks: Blocks) -> np.ndarray:
    m = blocks.matrix()
    return np.asarray(m.T @ m)


# A linear combination of product vectors: [(coefficient, (v_1, ..., v_N)), ...]
Pieces = list[tuple[float, tuple[np.ndarray, ...]]]


def _query_pieces(query: Query) -> Pieces | None:
    if query.terms is None or any(len(t.factors) != len(query.shape) for t in query.terms):
        return None
    return [(t.weight, tuple(np.asarray(f, float) for f in t.factors)) for t in query.terms]


class PlanSolver:
    """``G⁺`` of a plan and what it gives for a query: estimability, variance factor, coefficients.

    Examples
    --------
    >>> from dpdesk.engine.schema import Schema
    >>> from dpdesk.engine.partition.plan import cells_plan
    >>> from dpdesk.engine.queries.predicates import count
    >>> s = Schema.from_dict({"attributes": [{"name": "a", "column": "a", "kind": "categorical",
    ...                                       "values": ["x", "y", "z"]}]})
    >>> PlanSolver(cells_plan(s)).variance_factor(count(s, a=["x", "y"]))
    2.0
    """

    def __init__(self, plan: PartitionPlan) -> None:
        self.plan = plan
        self.shape = plan.shape
        groups = plan.groups
        differing = [
            d for d in range(len(self.shape)) if len({tuple(g.blocks[d].starts) for g in groups}) > 1
        ]
        self.terms: list[tuple[float, tuple[Operator, ...]]] = []
        self.null: list[tuple[Operator, ...]] = []
        if len(differing) <= 1:
            self._single(differing[0] if differing else None)
        else:
            self._marginal()

    # -- construction --------------------------------------------------------------------------
    def _single(self, merged_axis: int | None) -> None:
        inv: list[Operator] = []
        rng: list[Operator] = []
        g0 = self.plan.groups[0]
        for d, k in enumerate(self.shape):
            if d == merged_axis:
                levels = sorted((g.blocks[d] for g in self.plan.groups), key=lambda b: -b.n_blocks)
                nested = levels[0].is_identity and all(
                    np.all(np.isin(hi.starts, lo.starts)) for lo, hi in zip(levels[:-1], levels[1:])
                )
                if nested:  # an interval tree: full rank, solved level by level
                    inv.append(Operator(k, solve=TreeInverse(levels)))
                    rng.append(_identity(k))
                    continue
                gram = sum(_gram(b) for b in levels) * 1.0
                pinv = np.linalg.pinv(gram, hermitian=True)
                inv.append(Operator(k, dense=pinv))
                rng.append(Operator(k, dense=gram @ pinv))
            elif g0.blocks[d].is_identity:
                inv.append(_identity(k))
                rng.append(_identity(k))
            elif g0.blocks[d].is_total:
                inv.append(Operator(k, b=1.0 / (k * k)))
                rng.append(_mean(k))
            else:
                gram = _gram(g0.blocks[d])
                pinv = np.linalg.pinv(gram, hermitian=True)
                inv.append(Operator(k, dense=pinv))
                rng.append(Operator(k, dense=gram @ pinv))
        # every group shares the other attributes' blocks, so all groups stack into one Kronecker factor
        self.terms = [(1.0, tuple(inv))]
        # I − ⊗Π_d = Σ_d Π_1 ⊗ … ⊗ Π_{d−1} ⊗ (I − Π_d) ⊗ I ⊗ … ⊗ I (orthogonal pieces)
        for d, k in enumerate(self.shape):
            if rng[d].a == 1.0 and rng[d].b == 0 and rng[d].dense is None:
                continue
            dense = rng[d].dense
            comp = Operator(k, a=1.0 - rng[d].a, b=-rng[d].b, dense=None if dense is None else -dense)
            self.null.append(tuple(rng[:d]) + (comp,) + tuple(_identity(j) for j in self.shape[d + 1 :]))

    def _marginal(self) -> None:
        for g in self.plan.groups:
            for d, b in enumerate(g.blocks):
                if not (b.is_identity or b.is_total):
                    raise PlanError(
                        f"plan: group {g.name!r} mixes blocks and several groups; this structure is not supported"
                    )
        choices = [("m", "c") if k > 1 else ("m",) for k in self.shape]
        for T in itertools.product(*choices):
            lam = 0.0
            for g in self.plan.groups:
                term = 1.0
                for d, b in enumerate(g.blocks):
                    if b.is_identity:
                        continue
                    term *= self.shape[d] if T[d] == "m" else 0.0
                lam += term
            ops = tuple(_mean(k) if t == "m" else _contrast(k) for t, k in zip(T, self.shape))
            if lam > 0:
                self.terms.append((1.0 / lam, ops))
            else:
                self.null.append(ops)

    # -- per query ------------------------------------------------------------------------------
    def _dense(self, query: Query) -> np.ndarray:
        return query.dense().reshape(self.shape)

    def residual(self, query: Query) -> float:
        """Relative norm of the part of ``Q`` outside the range of ``G`` (0: estimable)."""
        self._check(query)
        pieces = _query_pieces(query)
        if pieces is not None:
            total = _gram_sum(pieces, pieces, [(1.0, ops) for ops in self.null])
            norm = _gram_sum(pieces, pieces, [(1.0, tuple(_identity(k) for k in self.shape))])
        else:
            x = self._dense(query)
            total = sum(float(np.sum(_apply_all(x, ops) ** 2)) for ops in self.null)
            norm = float(np.sum(x * x))
        return math.sqrt(max(total, 0.0) / norm) if norm > 0 else 0.0

    def estimable(self, query: Query) -> bool:
        return self.residual(query) <= ESTIMABLE_TOL

    def variance_factor(self, query: Query) -> float:
        """``Q G⁺ Qᵀ``: the BLUE's variance divided by one row's noise variance (assumes estimable)."""
        self._check(query)
        pieces = _query_pieces(query)
        if pieces is not None:
            return _gram_sum(pieces, pieces, self.terms)
        x = self._dense(query)
        return float(np.sum(x * sum(c * _apply_all(x, ops) for c, ops in self.terms)))

    def group_coefficients(self, query: Query) -> list[Pieces | np.ndarray]:
        """``A_g = W_g G⁺ Qᵀ`` per group: factored pieces (product queries) or a dense array."""
        self._check(query)
        pieces = _query_pieces(query)
        out: list[Pieces | np.ndarray] = []
        if pieces is not None:
            for g in self.plan.groups:
                acc: Pieces = []
                for w, qs in pieces:
                    for c, ops in self.terms:
                        vecs = tuple(b.aggregate(op.matvec(q)) for b, op, q in zip(g.blocks, ops, qs))
                        if all(np.any(v) for v in vecs):
                            acc.append((w * c, vecs))
                out.append(acc)
            return out
        x = self._dense(query)
        z = self._combined(x)
        for g in self.plan.groups:
            out.append(g.aggregate(z))
        return out

    def apply_pinv(self, x: np.ndarray) -> np.ndarray:
        """``G⁺`` applied to an array of the cube's shape."""
        return self._combined(np.asarray(x, dtype=float))

    def _combined(self, x: np.ndarray) -> np.ndarray:
        """``Σ_t c_t · (⊗ ops_t) x`` over the pseudo-inverse's terms."""
        (c, ops), *rest = self.terms
        out: np.ndarray = c * _apply_all(x, ops)
        for c, ops in rest:
            out = out + c * _apply_all(x, ops)
        return out

    def _check(self, query: Query) -> None:
        if not isinstance(query, Query):
            raise QueryError(f"query must be a Query, got {type(query).__name__}")
        if query.n_cells != math.prod(self.shape):
            raise QueryError(
                f"query has {query.n_cells} coefficients, the cube has {math.prod(self.shape)} cells"
            )


def _apply_all(x: np.ndarray, ops: tuple[Operator, ...]) -> np.ndarray:
    for d, op in enumerate(ops):
        x = op.apply(x, d)
    return x


def _gram_sum(p: Pieces, q: Pieces, terms: list[tuple[float, tuple[Operator, ...]]]) -> float:
    """``Σ_t c_t Σ_{a,b} w_a w_b Π_d p_{a,d}ᵀ R_{t,d} q_{b,d}`` — factored quadratic forms."""
    total = 0.0
    for c, ops in terms:
        for wa, pa in p:
            for wb, qb in q:
                total += c * wa * wb * math.prod(op.quad(u, v) for op, u, v in zip(ops, pa, qb))
    return total


def pieces_dense(pieces: Pieces, shape: tuple[int, ...]) -> np.ndarray:
    """The dense array of a factored combination (for small groups or checks)."""
    out = np.zeros(shape)
    for w, vecs in pieces:
        out += w * reduce(np.multiply.outer, vecs)
    return out


def contract(pieces: Pieces, values: np.ndarray) -> float:
    """``⟨Σ w ⊗v, values⟩`` without expanding the product."""
    total = 0.0
    for w, vecs in pieces:
        x = values.astype(float, copy=False)
        for v in reversed(vecs):
            x = x @ v
        total += w * float(x)
    return total
