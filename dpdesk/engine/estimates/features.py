"""Released queries as features of a Gibbs distribution over huge domains: cliques, particles, sweeps.

The maximum-entropy distribution of the Chen–Zhou–Bhowmick seed (§4, Eq. 36 with the prior of §4.3)
is ``p_w(t) ∝ p0(t) · exp(Σ_i w_i f_i(t))`` where ``f_i`` is released query i. A query that depends on
a few attributes ``C`` only is a table over ``C``; grouping the queries by ``C`` turns ``Σ_i w_i f_i``
into one potential table per clique, ``θ_C = F_Cᵀ w_C`` — a graphical model whose size is the sum of its
cliques' tables, never the domain's. Everything here works on *particles*: rows of attribute codes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.estimates.kernel import AnyQuery, LocalQuery

__all__ = ["MAX_CLIQUE_CELLS", "Clique", "CliqueModel", "cliques_of"]

# Largest table a query may need over the attributes it depends on.
MAX_CLIQUE_CELLS = 1 << 20
# Particles handled at once in a Gibbs sweep (bounds the M × |A_k| temporaries).
_CHUNK = 1 << 16


@dataclass(frozen=True, eq=False)
class Clique:
    """Released rows ``rows`` that depend only on attributes ``axes``; row i's table is ``tables[i]``."""

    axes: tuple[int, ...]
    dims: tuple[int, ...]
    rows: np.ndarray  # positions in the released rows
    tables: sp.csr_matrix  # k × Π dims

    @property
    def cells(self) -> int:
        return int(math.prod(self.dims))


def _query_table(q: AnyQuery, shape: tuple[int, ...], row: int) -> tuple[tuple[int, ...], np.ndarray]:
    """``(axes, table)`` of a query as a function of the attributes it depends on (``()`` if constant)."""
    if isinstance(q, LocalQuery):
        return q.axes, np.asarray(q.table)
    if q.terms is None:
        if math.prod(shape) > MAX_CLIQUE_CELLS:
            raise DpdeskError(
                f"maximum entropy: released row {row} is a cell list over a domain of {math.prod(shape):.3g} cells; "
                f"it needs queries on at most {MAX_CLIQUE_CELLS} cells of a few attributes"
            )
        return tuple(range(len(shape))), q.dense().reshape(shape)
    axes: set[int] = set()
    for t in q.terms:
        axes |= {d for d, f in enumerate(t.factors) if np.ptp(f) != 0.0}
    ax = tuple(sorted(axes))
    if math.prod(shape[a] for a in ax) > MAX_CLIQUE_CELLS:
        raise DpdeskError(
            f"maximum entropy: released row {row} depends jointly on attributes {list(ax)} "
            f"({math.prod(shape[a] for a in ax):.3g} cells); at most {MAX_CLIQUE_CELLS} are supported"
        )
    table = np.zeros(tuple(shape[a] for a in ax)) if ax else np.zeros(())
    for t in q.terms:
        w = t.weight * math.prod(float(f[0]) for d, f in enumerate(t.factors) if d not in axes)
        piece = np.array(w)
        for a in ax:
            piece = np.multiply.outer(piece, t.factors[a])
        table = table + piece
    return ax, table


def cliques_of(queries: Sequence[AnyQuery], shape: tuple[int, ...]) -> tuple[list[Clique], dict[int, float]]:
    """Group queries by the attributes they depend on; also return the constant rows ``{i: c}`` (``c·u``)."""
    groups: dict[tuple[int, ...], tuple[list[int], list[tuple[np.ndarray, np.ndarray]]]] = {}
    constant: dict[int, float] = {}
    for i, q in enumerate(queries):
        got = _query_table(q, shape, i)
        if not got[0]:
            constant[i] = float(got[1])
            continue
        rows, tabs = groups.setdefault(got[0], ([], []))
        rows.append(i)
        flat = np.asarray(got[1]).reshape(-1)
        nz = np.flatnonzero(flat)
        tabs.append((nz, flat[nz]))
    out = []
    for axes in sorted(groups):
        rows, tabs = groups[axes]
        dims = tuple(shape[a] for a in axes)
        ptr = np.cumsum([0] + [t[0].size for t in tabs])
        mat = sp.csr_matrix(
            (np.concatenate([t[1] for t in tabs]), np.concatenate([t[0] for t in tabs]), ptr),
            shape=(len(rows), int(math.prod(dims))),
        )
        out.append(Clique(axes, dims, np.asarray(rows, dtype=np.int64), mat))
    return out, constant


class CliqueModel:
    """``log p_w(t) = Σ_d log p0_d(t_d) + Σ_C θ_C[t_C] − log Z`` on a fixed list of cliques."""

    def __init__(
        self,
        shape: tuple[int, ...],
        cliques: list[Clique],
        prior: Sequence[np.ndarray],
        constant: dict[int, float] | None = None,
    ) -> None:
        self.shape = shape
        self.cliques = cliques
        self.constant = dict(constant or {})
        with np.errstate(divide="ignore"):
            self.log_prior = [np.log(np.asarray(p, dtype=np.float64)) for p in prior]
        self.by_attr = [[c for c in range(len(cliques)) if d in cliques[c].axes] for d in range(len(shape))]

    def potentials(self, w: np.ndarray) -> list[np.ndarray]:
        """``θ_C = F_Cᵀ w_C`` for every clique, from weights indexed like the released rows."""
        return [np.asarray(c.tables.T @ w[c.rows]).reshape(-1) for c in self.cliques]

    def codes(self, particles: np.ndarray) -> list[np.ndarray]:
        """Each particle's cell in each clique's table."""
        return [np.ravel_multi_index(tuple(particles[:, a] for a in c.axes), c.dims) for c in self.cliques]

    def scores(self, theta: list[np.ndarray], codes: list[np.ndarray]) -> np.ndarray:
        out = np.zeros(codes[0].size if codes else 0)
        for t, k in zip(theta, codes):
            out += t[k]
        return out

    def expectations(self, weights: np.ndarray, codes: list[np.ndarray], m: int) -> np.ndarray:
        """``E[f_i]`` under particle weights (summing to 1), indexed like the released rows (m of them)."""
        out = np.zeros(m)
        for i, c in self.constant.items():
            out[i] = c  # a multiple of the universal query: its expectation is that multiple
        for clique, k in zip(self.cliques, codes):
            hist = np.bincount(k, weights=weights, minlength=clique.cells)
            out[clique.rows] = clique.tables @ hist
        return out

    def sample_prior(self, rng: np.random.Generator, count: int) -> np.ndarray:
        cols = [rng.choice(len(lp), size=count, p=np.exp(lp)) for lp in self.log_prior]
        return np.stack(cols, axis=1).astype(np.int64)

    def sweep(self, particles: np.ndarray, theta: list[np.ndarray], rng: np.random.Generator) -> None:
        """One systematic-scan Gibbs sweep of ``p_w`` over every attribute, in place (exact conditionals)."""
        views = []
        for c, t in zip(self.cliques, theta):
            views.append(t.reshape(c.dims))
        for d, k in enumerate(self.shape):
            for s in range(0, particles.shape[0], _CHUNK):
                block = particles[s : s + _CHUNK]
                logits = np.broadcast_to(self.log_prior[d], (block.shape[0], k)).copy()
                for ci in self.by_attr[d]:
                    c = self.cliques[ci]
                    pos = c.axes.index(d)
                    table = np.moveaxis(views[ci], pos, -1).reshape(-1, k)
                    others = [a for a in c.axes if a != d]
                    if others:
                        idx = np.ravel_multi_index(
                            tuple(block[:, a] for a in others), tuple(self.shape[a] for a in others)
                        )
                        logits += table[idx]
                    else:
                        logits += table[0][None, :]
                # Gumbel-max draws one label per particle from its conditional distribution
                block[:, d] = np.argmax(logits - np.log(-np.log(rng.random(logits.shape))), axis=1)
