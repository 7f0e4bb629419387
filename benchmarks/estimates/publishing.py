"""Measurements and competitors for the seed's §5.2 (data publishing from all 2-way marginals).

- :func:`l1_error`: seed Eq. 42, ``Σ |p(x) − p̃(x)|`` over a joint distribution of a few attributes,
  from two tables of codes (or a count table for the truth);
- :func:`range_queries` / :func:`range_answers`: random k-D range queries (k attributes chosen at random,
  an interval on each from two uniform end points) answered on a table of codes, rescaled to ``n`` rows;
- :func:`mbi_tree` / :func:`mbi_region_graph`: Private-PGM (``mbi``, benchmark-only) fed the same noisy
  marginals — exact inference on a maximum spanning tree of them (synthetic data), or convex generalised
  belief propagation over all of them (pseudo-marginals only: a region graph cannot sample).
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np


def joint(codes: np.ndarray, axes: tuple[int, ...], sizes: tuple[int, ...]) -> np.ndarray:
    """The empirical distribution of ``codes`` on ``axes`` (sums to 1)."""
    dims = tuple(sizes[a] for a in axes)
    flat = np.ravel_multi_index(tuple(codes[:, a].astype(np.int64) for a in axes), dims)
    return np.bincount(flat, minlength=math.prod(dims)).reshape(dims) / codes.shape[0]


def l1_error(p: np.ndarray, truth: np.ndarray) -> float:
    """Seed Eq. 42 between two distributions (each normalised here; a count table is accepted)."""
    p = np.clip(p, 0, None)
    return float(np.abs(p / p.sum() - truth / truth.sum()).sum())


def range_queries(
    rng: np.random.Generator, k: int, count: int, sizes: tuple[int, ...]
) -> list[dict[int, tuple[int, int]]]:
    out = []
    for _ in range(count):
        axes = sorted(rng.choice(len(sizes), size=k, replace=False).tolist())
        out.append({a: tuple(sorted(rng.integers(0, sizes[a], 2).tolist())) for a in axes})
    return out


def range_answers(codes: np.ndarray, queries, n: float) -> np.ndarray:
    """Each query's count on ``codes``, rescaled to a table of ``n`` rows."""
    out = np.empty(len(queries))
    for i, q in enumerate(queries):
        mask = np.ones(codes.shape[0], dtype=bool)
        for a, (lo, hi) in q.items():
            col = codes[:, a]
            mask &= (col >= lo) & (col <= hi)
        out[i] = mask.sum()
    return out * (n / codes.shape[0])


def range_from_marginals(queries, tables: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
    """Answers of 1- and 2-D range queries from count tables on pairs (any pair holding the attributes)."""
    out = np.empty(len(queries))
    for i, q in enumerate(queries):
        axes = tuple(sorted(q))
        pair = next(p for p in tables if set(axes) <= set(p))
        t = tables[pair]
        sl = tuple(slice(q[a][0], q[a][1] + 1) if a in q else slice(None) for a in pair)
        out[i] = float(np.sum(t[sl]))
    return out


def rmse(est: np.ndarray, truth: np.ndarray) -> float:
    return float(np.sqrt(np.mean((est - truth) ** 2)))


def mutual_information(table: np.ndarray) -> float:
    p = np.clip(table, 0, None)
    p = p / p.sum()
    pi, pj = p.sum(axis=1, keepdims=True), p.sum(axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(p > 0, p * np.log(p / (pi * pj)), 0.0)
    return float(term.sum())


def spanning_tree(tables: dict[tuple[int, int], np.ndarray], d: int) -> list[tuple[int, int]]:
    """Maximum spanning tree of the attributes weighted by the (noisy, consistent) pairs' mutual information."""
    edges = sorted(tables, key=lambda p: -mutual_information(tables[p]))
    parent = list(range(d))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    tree = []
    for i, j in edges:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj
            tree.append((i, j))
    return tree


def _mbi():
    import jax

    jax.config.update("jax_enable_x64", True)  # mbi warns float32 stalls past 100 000 rows
    import mbi

    return mbi


def _measurements(mbi, names, pairs, noisy, sd):
    return [mbi.LinearMeasurement(noisy[p].reshape(-1), tuple(names[a] for a in p), stddev=sd) for p in pairs]


def mbi_tree(
    noisy: dict[tuple[int, int], np.ndarray],
    tree,
    names,
    sizes,
    n: float,
    sd: float,
    rows: int,
    iters: int,
    seed: int,
) -> tuple[np.ndarray, dict]:
    """mbi's exact mirror descent on the tree's measurements, then its synthetic data (``rows`` rows)."""
    mbi = _mbi()
    domain = mbi.Domain(list(names), list(sizes))
    t0 = time.perf_counter()
    model = mbi.estimation.MirrorDescent().estimate(
        domain, _measurements(mbi, names, tree, noisy, sd), known_total=n, iters=iters
    )
    t1 = time.perf_counter()
    np.random.seed(seed)  # mbi's sampler draws from numpy's global generator
    data = model.synthetic_data(rows, method="sample")
    t2 = time.perf_counter()
    cols = data.to_dict()
    codes = np.stack([np.asarray(cols[a], dtype=np.int64) for a in names], axis=1)
    return codes, {"fit_s": t1 - t0, "sample_s": t2 - t1}


def mbi_region_graph(
    noisy: dict[tuple[int, int], np.ndarray], names, sizes, n: float, sd: float, iters: int
) -> tuple[dict[tuple[int, int], np.ndarray], dict]:
    """mbi's mirror descent with convex generalised belief propagation over all pairs: pseudo-marginals."""
    mbi = _mbi()
    from mbi import approximate_oracles, marginal_loss

    domain = mbi.Domain(list(names), list(sizes))
    pairs = list(noisy)
    ms = _measurements(mbi, names, pairs, noisy, sd)
    loss = marginal_loss.from_linear_measurements(ms, domain)
    step = 2.0 / (float(loss.lipschitz) * n)  # the step mbi's exact mirror descent starts from
    t0 = time.perf_counter()
    mu = approximate_oracles.mirror_descent(domain, loss, known_total=n, stepsize=step, iters=iters)
    t1 = time.perf_counter()
    out = {p: np.asarray(mu.project(tuple(names[a] for a in p)).datavector(flatten=False)) for p in pairs}
    return out, {"fit_s": t1 - t0, "stepsize": step}


def triples(rng: np.random.Generator, d: int, count: int) -> list[tuple[int, int, int]]:
    allt = list(itertools.combinations(range(d), 3))
    pick = rng.choice(len(allt), size=min(count, len(allt)), replace=False)
    return [allt[i] for i in sorted(pick)]
