"""The public candidate set an exponential-mechanism posterior release chooses from.

A candidate is a Dirichlet ``Dir(prior + y)`` whose pseudo-counts ``y`` sum to a *public* size ``m``.
The notes let ``y`` range over all tables of the true size ``n``; under add/remove neighbours that
set would reveal ``n`` exactly (two neighbours' candidate sets are disjoint, so δ = 1). dpdesk fixes
``m`` from public inputs only: a size the curator declares public, or a noisy count released (and
charged) first (docs/dirichlet.md §3).

``y = (m / L)·j`` for every composition ``j`` of the integer *resolution* ``L`` into ``k`` parts, so
there are ``C(L+k-1, k-1)`` candidates; ``L = m`` is the notes' integer lattice. Both ``m`` and ``L``
are explicit, public parameters, and :meth:`CandidateSet.for_size` picks the finest ``L`` under a
public cap on the number of candidates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from math import comb
from typing import Any

import numpy as np

from dpdesk.engine.errors import DpdeskError

__all__ = ["DEFAULT_MAX_CANDIDATES", "CandidateSet", "compositions"]

DEFAULT_MAX_CANDIDATES = 100_000


@lru_cache(maxsize=64)
def compositions(total: int, parts: int) -> np.ndarray:
    """All ``j ∈ ℕ^parts`` with ``Σj = total``, one per row, in lexicographic order (read-only)."""
    if parts == 1:
        out = np.array([[total]], dtype=np.int64)
    else:
        blocks = []
        for first in range(total + 1):
            rest = compositions(total - first, parts - 1)
            block = np.empty((rest.shape[0], parts), dtype=np.int64)
            block[:, 0] = first
            block[:, 1:] = rest
            blocks.append(block)
        out = np.concatenate(blocks)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class CandidateSet:
    """``{Dir(prior + (size/resolution)·j) : j ∈ ℕ^k, Σj = resolution}`` — public by construction.

    Parameters
    ----------
    prior : array of k positive floats
        The Dirichlet prior stated by the requester.
    size : int
        The public total ``m`` the candidates' pseudo-counts sum to.
    resolution : int
        ``L``: candidates are spaced ``m/L`` apart along each axis (``L = m``: integer pseudo-counts).
        Must be ``≥ 1`` when ``size > 0``; with ``size = 0`` the only candidate is the prior.
    """

    prior: np.ndarray
    size: int
    resolution: int
    _params: list[np.ndarray] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        prior = np.array(self.prior, dtype=float).reshape(-1)
        if prior.size < 2:
            raise DpdeskError(f"prior: needs at least 2 categories, got {prior.size}")
        if not np.all(np.isfinite(prior) & (prior > 0)):
            raise DpdeskError(f"prior: every parameter must be a positive number, got {prior.tolist()}")
        prior.setflags(write=False)
        object.__setattr__(self, "prior", prior)
        if int(self.size) != self.size or self.size < 0:
            raise DpdeskError(f"candidate size ({self.size}) must be a non-negative integer")
        if int(self.resolution) != self.resolution or self.resolution < (1 if self.size > 0 else 0):
            raise DpdeskError(f"candidate resolution ({self.resolution}) must be a positive integer")
        object.__setattr__(self, "size", int(self.size))
        object.__setattr__(self, "resolution", int(self.resolution) if self.size > 0 else 0)

    @classmethod
    def for_size(
        cls, prior: np.ndarray, size: int, max_candidates: int = DEFAULT_MAX_CANDIDATES
    ) -> CandidateSet:
        """The finest resolution ``L ≤ size`` whose candidate count stays within ``max_candidates``."""
        k = np.asarray(prior).size
        if max_candidates < 1:
            raise DpdeskError(f"max_candidates ({max_candidates}) must be at least 1")
        lo, hi = (0, 0) if size <= 0 else (1, int(size))
        if size > 0 and comb(1 + k - 1, k - 1) > max_candidates:
            raise DpdeskError(
                f"max_candidates ({max_candidates}) is below the {k} candidates of the coarsest set for {k} categories"
            )
        while lo < hi:  # largest L in [lo, hi] with C(L+k-1, k-1) <= max_candidates
            mid = (lo + hi + 1) // 2
            if comb(mid + k - 1, k - 1) <= max_candidates:
                lo = mid
            else:
                hi = mid - 1
        return cls(prior, int(size), lo)

    @property
    def k(self) -> int:
        return int(self.prior.size)

    @property
    def count(self) -> int:
        """``N``, the number of candidates (public)."""
        return comb(self.resolution + self.k - 1, self.k - 1)

    @property
    def exact(self) -> bool:
        """True when the pseudo-counts are integers (resolution = size): the notes' lattice."""
        return self.resolution == self.size

    @property
    def step(self) -> float:
        return self.size / self.resolution if self.resolution else 0.0

    def parameters(self) -> np.ndarray:
        """The ``N × k`` candidate Dirichlet parameters (read-only, cached)."""
        if not self._params:
            params = self.prior + self.step * compositions(self.resolution, self.k)
            params.setflags(write=False)
            self._params.append(params)
        return self._params[0]

    def to_json(self) -> dict[str, Any]:
        """What the ledger records: the public description, never data."""
        return {
            "prior": self.prior.tolist(),
            "size": self.size,
            "resolution": self.resolution,
            "count": self.count,
        }
