"""The Xiao–Xiong–Yuan seed's max mechanism (§4.1.2, §7) exactly as written — for the benchmark only.

Start from the uniform distribution over the ``β`` output values; for each record ``x`` (in ascending
order, so that the output is a function of the table), with ``r⁺ = [x − ε, x + ε]`` and
``r⁻ = [lo, x − ε)`` (``lo`` the table's minimum, §7's ``min(D)``; or the domain's minimum), move
``t = min(PM₂(e^α − 1), PM₁(1 − e^{−α}))`` of probability from ``r⁻`` to ``r⁺``, each cell in
proportion to its mass; finally draw one value. ``r⁻`` is taken half-open so the two ranges do not
overlap (the seed writes both closed at ``x − ε``). The output *distribution* is deterministic given the
table, so its privacy can be checked exactly: :func:`worst_log_ratio` over neighbouring tables.

dpdesk never releases through this mechanism: it is not α-DP (the window depends on the data, and
each record's move depends on the moves of the records before it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np

Anchor = Literal["data", "domain"]


def seed_max_distribution(
    records: Sequence[int], beta: int, eps: int, alpha: float, anchor: Anchor = "data"
) -> np.ndarray:
    """Output probabilities over values ``0..β−1`` of the seed's mechanism on ``records`` (value indices)."""
    p = np.full(beta, 1.0 / beta)
    if not len(records):
        return p
    lo = int(min(records)) if anchor == "data" else 0
    grow, shrink = math.exp(alpha) - 1.0, 1.0 - math.exp(-alpha)
    for x in sorted(int(r) for r in records):
        a, b = max(0, x - eps), min(beta, x + eps + 1)
        m_hi = x - eps  # r⁻ = [lo, x − ε)
        pm2 = p[a:b].sum()
        pm1 = p[lo:m_hi].sum() if m_hi > lo else 0.0
        t = min(pm2 * grow, pm1 * shrink)
        if pm2 > 0:
            p[a:b] *= 1.0 + t / pm2
        if pm1 > 0:
            p[lo:m_hi] *= 1.0 - t / pm1
    return p


def seed_max_from_counts(counts: np.ndarray, eps: int, alpha: float, anchor: Anchor = "data") -> np.ndarray:
    """The same from a histogram of records per value (records with equal values in any order: identical)."""
    records = np.repeat(np.arange(counts.size), counts)
    return seed_max_distribution(records, counts.size, eps, alpha, anchor)


def worst_log_ratio(
    tables: Iterable[Sequence[int]], beta: int, eps: int, alpha: float, anchor: Anchor
) -> tuple[float, tuple]:
    """Largest ``|log Pr[D](r) − log Pr[D + one record](r)|`` over the tables, added values and outputs."""
    worst: tuple[float, tuple] = (0.0, ())
    for d in tables:
        p0 = seed_max_distribution(list(d), beta, eps, alpha, anchor)
        for v in range(beta):
            p1 = seed_max_distribution(list(d) + [v], beta, eps, alpha, anchor)
            r = float(np.max(np.abs(np.log(p1 / p0))))
            if r > worst[0]:
                worst = (r, (tuple(sorted(d)), v))
    return worst


def all_small_tables(beta: int, max_records: int) -> Iterable[tuple[int, ...]]:
    """Every table (multiset of values) with at most ``max_records`` records."""
    for n in range(max_records + 1):
        yield from itertools.combinations_with_replacement(range(beta), n)


def random_tables(beta: int, count: int, max_records: int, seed: int) -> list[list[int]]:
    """Tables of up to ``max_records`` records: uniform, clustered (a rounded normal) or all one value."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(1, max_records + 1))
        kind = i % 3
        if kind == 0:
            t = rng.integers(0, beta, n)
        elif kind == 1:
            t = np.clip(
                np.rint(rng.normal(rng.integers(0, beta), rng.uniform(0.5, beta / 4), n)), 0, beta - 1
            )
        else:
            t = np.full(n, rng.integers(0, beta))
        out.append([int(v) for v in t])
    return out
