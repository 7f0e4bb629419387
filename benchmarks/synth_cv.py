"""Choose the max-entropy trade-off τ of seed §5.2's fit by cross-validation over whole marginals.

The same release as benchmarks/synth_publishing.py (all 36 two-way marginals of the IPUMS-like table,
Laplace scale 36; ``--release R.npz`` shares one draw), k-fold cross-validation of τ with
:func:`dpdesk.engine.estimates.marginal_cv.cross_validate_marginals`: each fold refits the model on the
other folds' marginals (warm starts across τ) and scores the held-out marginals' cells against their
released values minus the noise variance. Saves JSON; ``synth_publishing.py --cv-json F`` puts the curve
into docs/evaluation.md. Run (≈ 15–30 min on the shared machine at the default scale):

    .venv/bin/python benchmarks/synth_cv.py --release R.npz --json cv.json
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see tests/conftest.py: loaded machines

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from estimates.ipums_like import SIZES, marginal, table  # noqa: E402

from dpdesk.engine.estimates.marginal_cv import cross_validate_marginals  # noqa: E402
from dpdesk.engine.estimates.marginals import Marginal  # noqa: E402
from dpdesk.engine.mechanisms.laplace import LAPLACE  # noqa: E402
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler  # noqa: E402

B = 36.0
PAIRS = tuple(itertools.combinations(range(len(SIZES)), 2))


# the fit_marginals solver this run used (synth_publishing.py says when a saved CV run predates it)
SOLVER = "non-negative targets, steps j^-0.6, averaged"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--release",
        type=Path,
        default=None,
        help="the noisy marginals (.npz): read if it exists, else drawn and saved",
    )
    ap.add_argument("--taus", type=str, default="1e-4,1e-3,1e-2")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--particles", type=int, default=50_000)
    ap.add_argument("--max-iter", type=int, default=12)
    ap.add_argument("--sweeps", type=int, default=5)
    ap.add_argument("--gtol", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args(argv)
    codes = table()
    n = float(codes.shape[0])
    if args.release and args.release.exists():
        saved = np.load(args.release)
        noisy = {p: saved[f"{p[0]}-{p[1]}"] for p in PAIRS}
    else:
        sampler = OpenDPSampler()
        noisy = {}
        for p in PAIRS:
            t = marginal(codes, p)
            noisy[p] = sampler.release_vector(LAPLACE, t, B)
        if args.release:
            np.savez(args.release, **{f"{p[0]}-{p[1]}": v for p, v in noisy.items()})
    margs = [Marginal(p, noisy[p], LAPLACE.variance(B)) for p in PAIRS]
    taus = [float(t) for t in args.taus.split(",")]
    load0 = list(os.getloadavg())
    t0 = time.perf_counter()
    cv = cross_validate_marginals(
        SIZES,
        margs,
        table_size=n,
        taus=taus,
        k=args.k,
        seed=args.seed,
        particles=args.particles,
        max_iter=args.max_iter,
        sweeps=args.sweeps,
        gtol=args.gtol,
        trust=0.5,
        progress=lambda f: print(f"  cv {f:.0%} {time.perf_counter() - t0:.0f} s", flush=True),
    )
    wall = time.perf_counter() - t0
    # the true held-out error (benchmark only: the true table is known here, never in the product)
    truth = np.concatenate([marginal(codes, p).reshape(-1) for p in PAIRS])
    pred = np.asarray(cv.predicted)
    true_mse = np.mean((pred - truth) ** 2 - pred * (n - pred) / args.particles, axis=1)
    out = {
        "cv": cv.to_json(),
        "true_mse": true_mse.tolist(),
        "wall_s": wall,
        "n": n,
        "b": B,
        "particles": args.particles,
        "k": args.k,
        "max_iter": args.max_iter,
        "sweeps": args.sweeps,
        "load_before": load0,
        "load_after": list(os.getloadavg()),
        "summary": cv.summary(),
        "solver": SOLVER,
    }
    args.json.write_text(json.dumps(out, indent=1))
    print(cv.summary())
    print("mse", np.round(cv.mse), "se", np.round(cv.se), "true", np.round(true_mse), f"wall {wall:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
