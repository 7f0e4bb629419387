"""Time zero-cost estimates over the seed's 1.3·10¹¹-cell domain: fit, one estimate, 5-fold CV of τ.

Run from the repository root:

    .venv/bin/python benchmarks/bench_estimates.py --kind range --m 5000
    .venv/bin/python benchmarks/bench_estimates.py --kind counting --m 5000 --refit --repeat 3

A history of ``m`` queries of one kind (random 2-D range queries, or random 0/1 functions on Aᵢ×Aⱼ) over
the IPUMS-like domain 79·2·17·51·9·7·6·50·50 (benchmarks/estimates/), released with Laplace noise of
scale 5 000 (the answers are drawn at random: only the time is measured). *Fit* is the product-prior
inner products and the eigen-decomposition (`ShrinkageModel.fit`); *one estimate* is the median over 20
new queries of the same kind (`estimate`, its inner products included); *CV* is
`cross_validate(model, k=5)` (the 25-point τ grid and the refinement of its minimum, block method).
``--refit`` also times the seed's procedure, one eigen-decomposition per training set after which
every τ is a diagonal reweighting (`method="refit"`, same grid, no refinement); ``--repeat N`` times the CV
N times on the one model and reports medians. Targets (issue 17):
one estimate < 1 s once the model is built; the CV choice of τ < 1 minute.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see tests/conftest.py: multithreaded BLAS under load
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from benchmarks.estimates.ipums_like import SIZES
from benchmarks.estimates.workloads import counting_queries, range_queries
from dpdesk.engine.estimates.crossval import cross_validate
from dpdesk.engine.estimates.released import Released
from dpdesk.engine.estimates.shrinkage import ShrinkageModel


def run(kind: str, m: int, refit: bool = False, repeat: int = 1, seed: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    make = range_queries if kind == "range" else counting_queries
    released = Released.laplace(SIZES, make(rng, m, SIZES), rng.normal(1e5, 1e4, m), 5000.0)
    t = time.perf_counter()
    model = ShrinkageModel.fit(released, table_size=500_000.0)
    out = {"kind": kind, "m": m, "rank": model.rank, "fit_s": time.perf_counter() - t}
    one = []
    for q in make(rng, 20, SIZES):
        t = time.perf_counter()
        model.estimate(q, 1.0)
        one.append(time.perf_counter() - t)
    out["one_estimate_s"] = statistics.median(one)
    cvs, grids = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        cv = cross_validate(model, k=5)
        cvs.append(time.perf_counter() - t)
        t = time.perf_counter()
        cross_validate(model, k=5, refine=False)
        grids.append(time.perf_counter() - t)
    out["cv_s"], out["cv_grid_s"], out["best_tau"] = (
        statistics.median(cvs),
        statistics.median(grids),
        cv.best_tau,
    )
    out["cv_runs_s"] = cvs
    if refit:
        t = time.perf_counter()
        cross_validate(model, k=5, taus=cv.taus, method="refit", refine=False)
        out["refit_grid_s"] = time.perf_counter() - t
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=("range", "counting"), default="range")
    ap.add_argument("--m", type=int, default=5000)
    ap.add_argument("--refit", action="store_true", help="also time one eigen-decomposition per fold")
    ap.add_argument("--repeat", type=int, default=1, help="time the CV this many times on one model (median)")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    r = run(args.kind, args.m, args.refit, max(1, args.repeat))
    line = (
        f"{r['kind']} m={r['m']} (rank {r['rank']}): fit (inner products + eigh) {r['fit_s']:.1f} s, one estimate "
        f"{1000 * r['one_estimate_s']:.1f} ms (median of 20), 5-fold CV {r['cv_s']:.1f} s (best τ {r['best_tau']:.3g}; "
        f"its 25-point grid alone {r['cv_grid_s']:.1f} s; medians of {len(r['cv_runs_s'])}: "
        f"{', '.join(f'{v:.1f}' for v in r['cv_runs_s'])} s); load average {load:.0f} → {os.getloadavg()[0]:.0f}"
    )
    if "refit_grid_s" in r:
        line += f", the same grid by refitting every fold {r['refit_grid_s']:.1f} s"
    print(line)


if __name__ == "__main__":
    main()
