"""Requests for the batch-planning tests: ranges over one ordered attribute of N cells."""

from __future__ import annotations

import numpy as np

from dpdesk.engine.answering.workflow import Request
from dpdesk.engine.queries.query import query_from_vector

N = 16


def range_query(lo: int, hi: int):
    """The count of cells ``lo..hi−1``."""
    v = np.zeros(N)
    v[lo:hi] = 1.0
    return query_from_vector(v, (N,))


def range_batch(seed: int, k: int, eps2=(4.0, 60.0), delta=0.2) -> list[Request]:
    """``k`` random short ranges with 2ε ~ U[eps2]."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(k):
        lo = int(rng.integers(0, N - 1))
        hi = int(rng.integers(lo + 1, min(N, lo + 6) + 1))
        out.append(Request(f"r{i}", range_query(lo, hi), float(rng.uniform(*eps2)) / 2, delta))
    return out
