"""Data for the evaluation: synthetic cubes of the paper's sizes, the demo table, and request streams.

The paper's §6.4 uses net-trace (65,536 cells) and search logs (32,768 cells) from Hay et al.; they are
not available, so we generate cubes of the same sizes with the skew of such histograms:

* ``trace``: 65,536 cells (one per IP address). 70% of addresses are silent (count 0); the others have
  ``floor(LogNormal(1.5, 1.6))`` connections — a heavy right tail (a few cells with thousands).
* ``search``: 32,768 cells (time units). A log-intensity AR(1) process (mean 2, stationary sd 1,
  ρ = 0.99) with a weekly-like period of 168 units; counts are Poisson of its exponential: long
  quiet and busy stretches, bursts.
* ``demo``: the cube of ``resources/demo/adult.parquet`` over ``adult.schema.json`` (720 cells), when
  it is present.

Requests follow paper Eq. 37–38: cell ``j`` (1-based, C order) has weight ``10^-floor((j−1)/10)``
(normalised — the paper's constant 0.9 does not make the weights sum to 1), a request draws
``n_t ~ U{1..10}`` cells with replacement and its coefficient on a cell is how often it was drawn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpdesk.engine.cube import Cube
from dpdesk.engine.queries.query import Query, query_from_vector
from dpdesk.engine.schema import Schema

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo"


@dataclass(frozen=True)
class Dataset:
    name: str
    cube: Cube
    description: str

    @property
    def n(self) -> int:
        return self.cube.schema.n_cells

    @property
    def counts(self) -> np.ndarray:
        return self.cube.flat

    @property
    def total(self) -> int:
        return int(self.cube.total)


def _flat_schema(n: int) -> Schema:
    # one numeric attribute with unit bins [j, j+1): cell j is "j"
    return Schema.from_dict(
        {"attributes": [{"name": "cell", "column": "cell", "kind": "numeric", "edges": list(range(n + 1))}]}
    )


def trace_like(n: int = 65536, seed: int = 1) -> Dataset:
    rng = np.random.default_rng(seed)
    x = (rng.random(n) < 0.3) * np.floor(rng.lognormal(1.5, 1.6, n))
    counts = x.astype(np.int64)
    return Dataset(
        "trace",
        Cube(_flat_schema(n), counts),
        f"trace-like: {n} cells, 70% zero, lognormal(1.5, 1.6) counts elsewhere",
    )


def search_like(n: int = 32768, seed: int = 2) -> Dataset:
    rng = np.random.default_rng(seed)
    rho, sd = 0.99, 1.0
    z = np.empty(n)
    z[0] = rng.normal(0, sd)
    eta = rng.normal(0, sd * np.sqrt(1 - rho**2), n)
    for t in range(1, n):
        z[t] = rho * z[t - 1] + eta[t]
    lam = np.exp(2.0 + z + 0.5 * np.sin(2 * np.pi * np.arange(n) / 168))
    counts = rng.poisson(lam).astype(np.int64)
    return Dataset(
        "search",
        Cube(_flat_schema(n), counts),
        f"search-log-like: {n} cells, Poisson of an AR(1) log-intensity with a 168-unit period",
    )


def demo() -> Dataset | None:
    parquet, schema_file = DEMO / "adult.parquet", DEMO / "adult.schema.json"
    if not (parquet.exists() and schema_file.exists()):
        return None
    import pandas as pd

    from dpdesk.engine.cube import build_cube

    schema = Schema.from_dict(json.loads(schema_file.read_text()))
    cube = build_cube(pd.read_parquet(parquet), schema)
    return Dataset(
        "demo", cube, f"demo table (adult-like, {len(pd.read_parquet(parquet))} rows): {schema.n_cells} cells"
    )


def cell_weights(n: int) -> np.ndarray:
    """Paper Eq. 37, normalised."""
    j = np.arange(n)
    w = 10.0 ** (-np.floor(j / 10.0))
    return w / w.sum()


@dataclass(frozen=True)
class RequestSpec:
    query: Query
    eps: float
    delta: float


def request_stream(
    n: int,
    shape: tuple[int, ...],
    count: int,
    eps2_range: tuple[float, float],
    delta: float,
    rng: np.random.Generator,
) -> list[RequestSpec]:
    """Paper Eq. 37–38 queries with ``2ε ~ U[eps2_range]``."""
    p = cell_weights(n)
    # only cells with non-negligible weight can be drawn; sample among the first 200 (weight beyond < 1e-19)
    k = min(n, 200)
    pk = p[:k] / p[:k].sum()
    out = []
    for _ in range(count):
        nt = int(rng.integers(1, 11))
        cells = rng.choice(k, size=nt, p=pk)
        idx, cnt = np.unique(cells, return_counts=True)
        vec = np.zeros(n)
        vec[idx] = cnt
        q = query_from_vector(vec, shape)
        out.append(RequestSpec(q, float(rng.uniform(*eps2_range)) / 2.0, delta))
    return out
