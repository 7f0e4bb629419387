"""Reproduce the Chen–Zhou–Bhowmick seed §5.2 (data publishing) on dpdesk's engine, against Private-PGM.

On the IPUMS-like table of §5.1 (benchmarks/estimates/ipums_like.py: 500 000 rows, 9 attributes,
79·2·17·51·9·7·6·50·50 ≈ 1.3·10¹¹ cells) release every cell of all 36 two-way marginals (29 570 cells)
with Laplace noise of scale 36 drawn by dpdesk's vetted sampler (OpenDP): each row touches 36 cells, so
ε = 1 in total. Then, post-processing only:

- dpdesk: the closed-form consistent projection (engine/estimates/marginals.py), the seed's maximum-
  entropy fit to it (exact Gibbs sweeps + stochastic scaling with a convergence test), a synthetic table of N rows;
- Private-PGM (mbi, the ``bench`` extra): exact mirror descent on a maximum spanning tree of the same
  noisy marginals (by their mutual information) and its synthetic data; and mirror descent with convex
  generalised belief propagation over all 36 (pseudo-marginals on the pairs only: no synthetic data);
- baselines: the projected marginals themselves (2-way only), the product of their 1-way marginals, and
  a bootstrap sample of N rows of the true table (the sampling floor of any N-row synthetic table).

Measured (seed Eq. 42, Figs. 6–7): L1 error of every 2-way joint distribution, of a random sample of
3-way ones, and the RMSE of random k-D range queries, k = 1..4, rescaled to n rows. Run:

    .venv/bin/python benchmarks/synth_publishing.py --write-docs   # full scale, ~40 min on a loaded machine
    .venv/bin/python benchmarks/synth_publishing.py --quick        # a smaller look (~10 min)

or split in two processes sharing one release (``--release R.npz``; see the section's last line). It prints
its section; ``--write-docs`` also rewrites the ``estimates-publishing`` section of docs/evaluation.md
(``--from-json F --write-docs`` rewrites it from a saved run).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see tests/conftest.py: loaded machines

import argparse
import dataclasses
import itertools
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from estimates import publishing as pub  # noqa: E402
from estimates.ipums_like import NAMES, SIZES, marginal, table  # noqa: E402
from evaluation.sections import DOCS, add_write_docs, write_section  # noqa: E402
from synth_cv import SOLVER  # noqa: E402

from dpdesk.engine.estimates.marginal_fit import fit_marginals  # noqa: E402
from dpdesk.engine.estimates.marginals import Marginal, consistent_marginals  # noqa: E402
from dpdesk.engine.mechanisms.laplace import LAPLACE  # noqa: E402
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler  # noqa: E402

B = 36.0  # the seed's scale: d(d − 1)/2 cells per row, ε = 1
PAIRS = tuple(itertools.combinations(range(len(SIZES)), 2))


def run(args: argparse.Namespace) -> dict:
    res: dict = {
        "quick": args.quick,
        "b": B,
        "tau": args.tau,
        "particles": args.particles,
        "seed": args.seed,
        "gtol": args.gtol,
        "max_iter": args.max_iter,
        "mbi_iters": args.mbi_iters,
        "sweeps": args.sweeps,
        "sample_sweeps": args.sample_sweeps,
    }
    codes = table()
    n = float(codes.shape[0])
    rows = args.rows or int(n)
    res.update(n=n, rows=rows, cells=sum(SIZES[i] * SIZES[j] for i, j in PAIRS))
    truth = {p: marginal(codes, p) for p in PAIRS}
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    if args.release and args.release.exists():  # a saved release: both halves of a split run read one draw
        saved = np.load(args.release)
        noisy = {p: saved[f"{p[0]}-{p[1]}"] for p in PAIRS}
    else:
        sampler = OpenDPSampler()
        noisy = {p: sampler.release_vector(LAPLACE, truth[p], B) for p in PAIRS}
        if args.release:
            np.savez(args.release, **{f"{p[0]}-{p[1]}": v for p, v in noisy.items()})
    res["release_s"] = time.perf_counter() - t0
    margs = [Marginal(p, noisy[p], LAPLACE.variance(B)) for p in PAIRS]
    t0 = time.perf_counter()
    cons = dict(zip(PAIRS, consistent_marginals(SIZES, margs, n)))
    res["project_s"] = time.perf_counter() - t0
    res["negative_cells"] = int(sum((c < 0).sum() for c in cons.values()))
    synth: dict[str, np.ndarray] = {}
    times: dict[str, dict] = {}
    # dpdesk: the seed's maximum entropy
    res["load_before"] = list(os.getloadavg())
    t0 = time.perf_counter()
    fit = (
        None
        if args.no_maxent
        else fit_marginals(
            SIZES,
            margs,
            table_size=n,
            tau=args.tau,
            particles=args.particles,
            seed=args.seed,
            max_iter=args.max_iter,
            gtol=args.gtol,
            sweeps=args.sweeps,
            trust=0.5,
            progress=lambda f: print(
                f"  max-ent {f * args.max_iter:.0f} {time.perf_counter() - t0:.0f} s", flush=True
            ),
        )
    )
    t1 = time.perf_counter()
    res["load_after_fit"] = list(os.getloadavg())
    if fit is not None:
        # with no sweeps the rows are the fit's last particles resampled (iterative scaling's weighted sample)
        me = "dpdesk max-ent" if args.sample_sweeps else "dpdesk max-ent (particles)"
        synth[me] = fit.sample(rows, rng, sweeps=args.sample_sweeps)
        times[me] = {
            "fit_s": t1 - t0,
            "sample_s": time.perf_counter() - t1,
            "iterations": fit.iterations,
            "converged": fit.converged,
            "bias_rms": fit.bias_rms,
            "trace": fit.trace.tolist(),
            "z_trace": fit.z_trace.tolist(),
            "check": dataclasses.asdict(fit.check),
            "tests": fit.tests.tolist(),
            "averaged": fit.averaged,
        }
        print("max-ent", times[me], flush=True)
    # Private-PGM on a spanning tree of the same marginals (exact inference; synthetic data)
    tree = pub.spanning_tree(cons, len(SIZES))
    res["tree"] = [[NAMES[i], NAMES[j]] for i, j in tree]
    sd = math.sqrt(LAPLACE.variance(B))
    if not args.no_mbi:
        synth["mbi tree"], times["mbi tree"] = pub.mbi_tree(
            noisy, tree, NAMES, SIZES, n, sd, rows, args.mbi_iters, args.seed
        )
        print("mbi tree", times["mbi tree"], flush=True)
        rg, times["mbi region graph"] = pub.mbi_region_graph(noisy, NAMES, SIZES, n, sd, args.mbi_iters)
        print("mbi region graph", times["mbi region graph"], flush=True)
    # baselines
    t0 = time.perf_counter()
    one_way = [
        np.clip(
            next(c for p, c in cons.items() if d in p).sum(axis=1 - next(p for p in cons if d in p).index(d)),
            0,
            None,
        )
        for d in range(len(SIZES))
    ]
    synth["independent"] = np.stack(
        [rng.choice(k, size=rows, p=w / w.sum()) for k, w in zip(SIZES, one_way)], axis=1
    )
    times["independent"] = {"fit_s": time.perf_counter() - t0}
    synth["bootstrap (floor)"] = codes[rng.integers(0, codes.shape[0], rows)]
    # measurements
    tri = pub.triples(np.random.default_rng(args.seed + 1), len(SIZES), args.triples)
    res["triples"] = [[NAMES[a] for a in t] for t in tri]
    qrng = np.random.default_rng(args.seed + 2)
    queries = {k: pub.range_queries(qrng, k, args.queries, SIZES) for k in (1, 2, 3, 4)}
    true_range = {k: pub.range_answers(codes, q, n) for k, q in queries.items()}
    methods: dict[str, dict] = {}
    for name, rows_ in synth.items():
        l2 = {f"{i}-{j}": pub.l1_error(pub.joint(rows_, (i, j), SIZES), truth[(i, j)]) for i, j in PAIRS}
        l3 = [pub.l1_error(pub.joint(rows_, t, SIZES), marginal(codes, t)) for t in tri]
        rm = {k: pub.rmse(pub.range_answers(rows_, q, n), true_range[k]) for k, q in queries.items()}
        methods[name] = {"l1_2way": l2, "l1_3way": l3, "range_rmse": rm, **times.get(name, {})}
    tables = {"released, projected": cons, "released, raw": noisy}
    if not args.no_mbi:
        tables["mbi region graph"] = rg
    for name, tabs in tables.items():
        l2 = {f"{i}-{j}": pub.l1_error(tabs[(i, j)], truth[(i, j)]) for i, j in PAIRS}
        rm = {k: pub.rmse(pub.range_from_marginals(queries[k], tabs), true_range[k]) for k in (1, 2)}
        methods[name] = {"l1_2way": l2, "l1_3way": None, "range_rmse": rm, **times.get(name, {})}
    res["methods"] = methods
    return res


def _summary(m: dict) -> tuple[float, float, float | None, float | None]:
    v2 = np.array(list(m["l1_2way"].values()))
    v3 = None if m["l1_3way"] is None else float(np.median(m["l1_3way"]))
    return (
        float(np.median(v2)),
        float(v2.max()),
        v3,
        (None if m["l1_3way"] is None else float(np.max(m["l1_3way"]))),
    )


def render(res: dict) -> str:
    meth = res["methods"]
    order = [
        k
        for k in (
            "dpdesk max-ent",
            "dpdesk max-ent (particles)",
            "mbi tree",
            "mbi region graph",
            "released, projected",
            "released, raw",
            "independent",
            "bootstrap (floor)",
        )
        if k in meth
    ]
    fmt = lambda x: "—" if x is None else f"{x:.3f}"
    lines = [
        "## Data publishing from all 2-way marginals: dpdesk's max-entropy table vs Private-PGM (seed §5.2)",
        "",
        f"Table: the IPUMS-like {res['n']:.0f}-row table of §5.1 (generated, `benchmarks/estimates/ipums_like.py`), "
        f"9 attributes, domain 79·2·17·51·9·7·6·50·50. Released: every cell of all 36 two-way marginals "
        f"({res['cells']} cells) with Laplace noise of scale {res['b']:.0f} from dpdesk's OpenDP sampler "
        "(each row touches 36 cells: ε = 1). Synthetic tables have "
        f"{res['rows']} rows. {'QUICK RUN (smaller settings): ' if res['quick'] else ''}"
        f"max-ent τ = {res['tau']}, {res['particles']} particles; {len(res['triples'])} random triples; "
        f"{res['queries']} random range queries per k. Machine: 2 cores shared by several engineers (loaded); "
        "times are single runs.",
        "",
        "| method | L1 2-way median (max) | L1 3-way median (max) | range RMSE k=1 | k=2 | k=3 | k=4 | time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k in order:
        m = meth[k]
        med2, max2, med3, max3 = _summary(m)
        rm = {int(a): b for a, b in m["range_rmse"].items()}
        t = m.get("fit_s")
        tt = (
            "—"
            if t is None
            else f"{t:.0f} s fit" + (f" + {m['sample_s']:.0f} s sample" if m.get("sample_s") else "")
        )
        lines.append(
            f"| {k} | {fmt(med2)} ({fmt(max2)}) | {fmt(med3)} ({fmt(max3)}) | "
            + " | ".join(f"{rm[q]:.0f}" if q in rm else "—" for q in (1, 2, 3, 4))
            + f" | {tt} |"
        )
    lines += [
        "",
        *_compare(res),
        "",
        *_findings(res),
        "",
        *_pair_matrix(res, "dpdesk max-ent", "mbi tree"),
        "",
        *_notes(res),
        "",
        *_cv(res.get("cv_run")),
        *DISCUSSION[:-2],
        *_not_done(res),
        *DISCUSSION[-2:],
    ]
    return "\n".join(lines)


def _compare(res: dict) -> list[str]:
    """Who wins by how much: error ratios of dpdesk's max-ent table to each competitor (below 1: dpdesk wins)."""
    meth = res["methods"]
    me = meth.get("dpdesk max-ent")
    if me is None:
        return []
    out = [
        "Ratios dpdesk max-ent / competitor (below 1: dpdesk's table is more accurate):",
        "",
        "| competitor | 2-way L1 median | 3-way L1 median | range k=1 | k=2 | k=3 | k=4 |",
        "|---|---|---|---|---|---|---|",
    ]
    a2, _, a3, _ = _summary(me)
    for k in ("mbi tree", "mbi region graph", "independent", "bootstrap (floor)"):
        if k not in meth:
            continue
        b2, _, b3, _ = _summary(meth[k])
        rm = {int(q): v for q, v in meth[k]["range_rmse"].items()}
        mine = {int(q): v for q, v in me["range_rmse"].items()}
        cells = [f"{a2 / b2:.2f}", "—" if b3 is None else f"{a3 / b3:.2f}"]
        cells += [f"{mine[q] / rm[q]:.2f}" if q in rm else "—" for q in (1, 2, 3, 4)]
        out.append(f"| {k} | " + " | ".join(cells) + " |")
    return out


DISCUSSION = [
    "Why the comparison has this shape:",
    "",
    "- **Private-PGM cannot take all 36 measurements with exact inference here.** Its exact estimator needs a junction "
    "tree of the measured cliques; all pairs of 9 attributes form a complete graph whose junction tree is one clique "
    "holding the whole 1.3·10¹¹-cell domain. Two ways remain and both are run: (a) exact mirror descent on a maximum "
    "spanning tree of the pairs (8 of the 36 measurements, chosen from the projected marginals' mutual information — "
    "post-processing), which yields a model and synthetic rows; (b) mirror descent with convex generalised belief "
    "propagation over all 36 (mbi's approximate inference), which yields pseudo-marginals on the measured pairs only — "
    "mbi itself states that region graphs cannot generate synthetic data, so it has no 3-way or k ≥ 3 range answers.",
    "- **dpdesk's max-ent table uses all 36 measurements** through Gibbs sampling, which is what lets it model "
    "three-way structure the tree cannot. Its cost is Monte Carlo error, in the fit and in the rows: the particle "
    "estimate of a cell with expected count c has standard deviation √(c·n/M) (n rows, M particles) — at M = 200 000 "
    "that is 17 noise scales for the largest 2-way cell (c ≈ 150 000) and on average 1.14 noise scales² of variance "
    "per cell (4.5 at 50 000). A plain mean of squared misfits over the 29 570 cells therefore has a standard error "
    "of its own of 0.045 noise scales² at 200 000 particles (0.18 at 50 000), dominated by the largest cells: the "
    "convergence test is a one-sided upper bound that accounts for it, and a tolerance of 0.25 noise scales "
    "(0.0625 scales²) cannot be certified at 200 000 particles at all; 0.5 can.",
    "- **Reference rows.** 'released, projected' is the closed-form consistent projection (the BLUE of every released "
    "cell: the best linear unbiased post-processing of the release, on the pairs only; 'released, raw' the noisy "
    "tables). 'bootstrap (floor)' is an N-row resample of the true table — no noise, only the sampling error every "
    "N-row synthetic table pays on top of its model's. 'independent' is the product of "
    "the projected 1-way marginals — a method that beats it on 2-way structure has learned something.",
    "- **What the seed claims and what follows.** The seed compares only with randomized-response perturbations "
    "(retention-replacement, flipping), not with any marginal-based estimator, and its Figs. 6–7 carry no numbers, so "
    "only shapes compare: Fig. 6a's errors grow with the attributes' domain sizes (sampling variance per cell), which "
    "the pair matrix above shows too (pairs with birth-place, occupation, salary or age have the largest errors, as in "
    "the bootstrap floor). 'Best in all cases' holds against its baselines, not against Private-PGM's structure "
    "learning: the table above gives the measured ranking. The seed's ε = 1 for scale 36 holds under add/remove "
    "neighbours (each row touches one cell of each of the 36 marginals), which is how dpdesk charges it (1/36 per cell).",
    "- **Why the earlier fit stalled (diagnosis).** The previous solver, log-ratio iterative proportional fitting "
    "on the importance-weighted particles, plateaued at ≈ 9–10 noise scales (50 000 particles) and ≈ 3 (200 000). At "
    "its fitted θ (quick scale), chains restarted from the prior and swept 120 times agreed with the persistent "
    "chains to binomial Monte Carlo error (their difference had mean z² 0.90) — the sampler mixes — but both missed "
    "the largest targets by ~10 % (e.g. 111 340 and 113 840 against 124 492): a real misfit of θ, not Monte Carlo "
    "error. The log-ratio update's Jensen bias raises every sparsely sampled cell each round, taking mass from the "
    "large ones; the fix is a step unbiased in counts, (a⁺ − μ̂)/(a⁺ + κ), with a Robbins–Monro 1/k step after the "
    "full-step plateau (`fit_marginals` docstring). Same start and release at quick scale: plateau ≈ 9.3 → ≈ 0.6–1.2 "
    "noise scales after 20–27 rounds. A second trap: persistent chains remember the sample θ was fitted to, which "
    "flatters an in-loop statistic (on an enumerable case the exact misfit was about twice the in-loop estimate), so a "
    "passing round is re-measured on fresh chains from the prior.",
    "- **Why the 1/k fit plateaued at ≈ 0.5 noise scales, and the fix (diagnosis; measured once on this release, "
    "200 000 particles, not regenerated by this script's run).** The previous solver (targets: the projection's "
    "negative cells clipped to 0; step 1/j after the plateau; last iterate returned) sat at an in-loop RMS misfit of "
    "0.31–0.69 from round 15 to 40. Its θ at round 40, measured on 200 000 fresh chains from the prior: mean squared "
    "misfit beyond Monte Carlo error B = 4.68 noise scales² after 10 sweeps (chains not yet mixed), 0.32, 0.27, 0.50 "
    "after 30, 60, 120; by target size (60 sweeps; summed excess, standard error of the group mean in brackets): "
    "cells of 1–100 counts 578 (mean 0.057 ± 0.002), 100–1 000 1 710 (0.128 ± 0.008), 1 000–10 000 2 278 "
    "(0.80 ± 0.17), above 10 000 3 290 (Monte Carlo noise dominates), target 0 only 1. Each hypothesis against "
    "that: (a) jitter of the last iterate — predicted to vanish when θ is averaged; the Polyak–Ruppert average of "
    "rounds 20–40 gave B = 0.23 / 0.36 (40 / 80 sweeps), no better, so under 1/j steps θ was not jittering but "
    "stalled. (c) cells with target 0 — they carry no misfit (above); but clipping the negative cells (2 885 of "
    "29 570) makes the targets **inconsistent**: marginals sharing an attribute then disagree on its 1-way counts, "
    "and the nearest consistent non-negative marginals (Dykstra's projection) lie B = 0.051 (RMS 0.23 noise "
    "scales) from them — a floor under every fit, a fifth of the test's whole budget (B + 2·se ≤ 0.25 with "
    "se = 0.045) — and the dual has no finite optimum for them inside a 27.8-nat box the steps cannot reach, so θ "
    "drifts. (d) Gibbs mixing at the test's sweeps — the group excesses agree at 30, 60 and 120 sweeps: not it. "
    "(b) 1/j stalling — the decaying phase's in-loop misfit in the 100–10 000-count cells kept falling round "
    "after round at η ≈ 0.15 (decay 0.6): slowly contracting directions of the sequential pass, which a 1/j step "
    "sums only like log j. Fixes, each measured on fresh chains (40 / 80 sweeps): consistent non-negative targets "
    "alone (1/j, last iterate) B = 0.09 (one measurement); with decay 0.6 the last iterate jitters (B = 0.41 / 0.34) "
    "and the average of rounds 20–40 gives B = 0.040 / −0.030 (upper bound 0.36 / 0.25). So the main cause is (c) "
    "in the form of inconsistent clipped targets (B 0.27–0.50 → 0.09 at the same schedule); (b) with (a) — larger "
    "steps, averaged — lowered it further (single measurements, each with a standard error of ≈ 0.045); not (d). The solver "
    "now fits `nonnegative_marginals` (the projection onto consistent non-negative marginals, no farther from the "
    "true ones than the plain projection), decays its step as j^−0.6, returns the average of the decaying phase's "
    "latter half and tests only that average, on fresh chains, every 8 rounds (`fit_marginals` docstring).",
    "- `--sample-sweeps 0` adds a row 'dpdesk max-ent (particles)': the fit's own particles (the fresh chains of its "
    "last test, under the returned θ) resampled without further Gibbs sweeps; the default rows are moved by 5 more "
    "sweeps. Not in this run (time).",
    "",
    "Regenerate: `.venv/bin/python benchmarks/synth_publishing.py` (needs the `bench` extra: `pip install -e .[bench]`); "
    "split across two processes sharing one release: `--no-mbi --release R.npz --json A.json` and "
    "`--no-maxent --release R.npz --json B.json`, then `--from-json A.json B.json`; the τ cross-validation: "
    "`benchmarks/synth_cv.py --release R.npz --json C.json`, then add `--cv-json C.json`. `--quick` is a smaller look.",
]


def _findings(res: dict) -> list[str]:
    """Who wins where, by how much and why — read off this run's numbers."""
    meth = res["methods"]
    me, tree = meth.get("dpdesk max-ent"), meth.get("mbi tree")
    if me is None or tree is None:
        return []
    a2, _, a3, _ = _summary(me)
    b2, _, b3, _ = _summary(tree)
    mine = {int(q): v for q, v in me["range_rmse"].items()}
    theirs = {int(q): v for q, v in tree["range_rmse"].items()}
    wins = [q for q in (1, 2, 3, 4) if mine[q] < theirs[q]]
    rg = meth.get("mbi region graph")
    proj = (
        {int(q): v for q, v in meth["released, projected"]["range_rmse"].items()}
        if "released, projected" in meth
        else None
    )
    in_tree = {"-".join(str(NAMES.index(x)) for x in sorted(e, key=NAMES.index)) for e in res["tree"]}
    gaps = sorted(
        ((tree["l1_2way"][k] - me["l1_2way"][k], k) for k in me["l1_2way"] if k not in in_tree), reverse=True
    )
    gap = "–".join(NAMES[int(x)] for x in gaps[0][1].split("-"))
    big = {str(NAMES.index(a)) for a in ("age", "birthplace", "occupation", "salary")}
    by_size = [
        k
        for k, v in meth.items()
        if all(set(p.split("-")) <= big for p in sorted(v["l1_2way"], key=lambda p: -v["l1_2way"][p])[:6])
    ]
    out = [
        f"**Who wins.** Against Private-PGM's tree, dpdesk's max-ent table is {'better' if a3 < b3 else 'worse'} on "
        f"3-way joints (median L1 {a3:.3f} vs {b3:.3f}, ×{a3 / b3:.2f}) and {'better' if a2 < b2 else 'worse'} on "
        f"2-way joints ({a2:.3f} vs {b2:.3f}, ×{a2 / b2:.2f}); on k-D ranges it wins for k = "
        f"{', '.join(map(str, wins)) or 'none'} (RMSE ×"
        + ", ×".join(f"{mine[q] / theirs[q]:.2f}" for q in (1, 2, 3, 4))
        + " for k = 1..4). Why: the tree keeps 8 of the 36 measured pairs, so a pair off the tree is only implied "
        f"through it (largest such gap: {gap}, {tree['l1_2way'][gaps[0][1]]:.3f} vs {me['l1_2way'][gaps[0][1]]:.3f}) "
        "and three-way structure follows the tree's paths; the max-ent model holds all 36."
        + (
            f" Where it trails the projected marginals themselves (k = 1 ranges: RMSE {mine[1]:.0f} vs "
            f"{proj[1]:.0f}; an N-row table's sampling floor is {meth['bootstrap (floor)']['range_rmse']['1']:.0f}) is the fit's remaining misfit and Monte Carlo error in the largest cells, which "
            "dominate 1-way statistics and wide ranges (the solver line below)."
            if proj and mine[1] > proj[1]
            else ""
        )
        + (
            f" Private-PGM's region graph, fed all 36 pairs, gives pseudo-marginals only (no table): 2-way median L1 "
            f"{_summary(rg)[0]:.3f} (dpdesk's table ×{a2 / _summary(rg)[0]:.2f} of it), range RMSE k = 1, 2 "
            f"{rg['range_rmse']['1']:.0f}, {rg['range_rmse']['2']:.0f}."
            if rg
            else ""
        ),
        "",
        "**The seed's shapes.** Fig. 6a: errors grow with the attributes' domain sizes — here the 6 pairs among age (79), "
        f"birth-place (51), occupation (50) and salary (50) are the 6 largest errors for {', '.join(repr(k) for k in by_size)}; the others' "
        f"worst pairs are pairs whose dependence they drop. Fig. 6b: 3-way errors exceed 2-way ones ({a3:.3f} vs {a2:.3f} median). Fig. 7: the seed plots RMSE "
        f"against k without numbers; here it falls with k ({mine[1]:.0f} → {mine[4]:.0f}) because a range on more "
        "attributes selects fewer rows.",
    ]
    return out


def _pair_matrix(res: dict, upper: str, lower: str) -> list[str]:
    """Fig. 6a's layout: the 2-way L1 error of every pair, ``upper`` above the diagonal, ``lower`` below."""
    meth = res["methods"]
    if upper not in meth or lower not in meth:
        return []
    out = [
        f"2-way L1 error per pair (Fig. 6a layout): above the diagonal {upper}, below it {lower}.",
        "",
        "| | " + " | ".join(NAMES) + " |",
        "|---" * (len(NAMES) + 1) + "|",
    ]
    for i, a in enumerate(NAMES):
        cells = []
        for j in range(len(NAMES)):
            if i == j:
                cells.append("—")
            else:
                key = f"{min(i, j)}-{max(i, j)}"
                cells.append(f"{meth[upper if i < j else lower]['l1_2way'][key]:.3f}")
        out.append(f"| {a} | " + " | ".join(cells) + " |")
    return out


def _not_done(res: dict) -> list[str]:
    """What this run did not reach, read off its own record."""
    me = res["methods"].get("dpdesk max-ent", {})
    cv = res.get("cv_run")
    fit = (
        f"The max-ent fit passed its convergence test (upper bound ≤ {res.get('gtol')} noise scales) in "
        f"{me.get('iterations')} rounds."
        if me.get("converged")
        else f"The max-ent fit did not pass its convergence test (upper bound ≤ {res.get('gtol')} noise scales) in "
        f"{me.get('iterations')} rounds: its table is the solver's state then (the solver line above gives how far)."
    )
    scale = (
        ""
        if not cv
        else f" τ was cross-validated with {cv['particles']} particles and at most {cv['max_iter']} rounds per fit"
        + (
            " (smaller than the published fit: a full-scale CV is k × grid fits of this size, beyond this run's time)"
            if cv["particles"] < res["particles"]
            else ""
        )
        + f"; the table above uses τ = {res['tau']}."
    )
    return [
        f"- **Not run / not reached.** {fit}{scale} The randomized-response baselines (not a dpdesk release "
        "kind; the issue asks for Private-PGM). Private-PGM with exact inference on all pairs (intractable, above)."
    ]


def _cv(run: dict | None) -> list[str]:
    """The cross-validation of τ (benchmarks/synth_cv.py), if it was run."""
    if not run:
        return []
    cv = run["cv"]
    fold = np.array(cv["fold_mse"])
    best = cv["taus"].index(cv["best_tau"])
    # paired across folds: each fold scores every τ on the same held-out marginals
    diff = fold - fold[best]
    k = fold.shape[1]
    dse = diff.std(axis=1, ddof=1) / math.sqrt(k) if k > 1 else np.zeros(len(diff))
    rows = [
        f"| {t:g} | {t * run['n'] / run['b']:.1f} | {m:.0f} ± {s:.0f} | {d.mean():+.0f} ± {e:.0f} | {tm:.0f} | {sum(c)}/{len(c)} |"
        for t, m, s, d, e, tm, c in zip(
            cv["taus"], cv["mse"], cv["se"], diff, dse, run["true_mse"], cv["converged"]
        )
    ]
    per_fold = cv["seconds_per_fit"] * len(cv["taus"])
    return [
        f"**Choosing τ by cross-validation** (`marginal_cv.cross_validate_marginals`, {run['k']}-fold over whole "
        f"marginals, {run['particles']} particles, at most {run['max_iter']} rounds of {run['sweeps']} sweeps per fit, "
        "warm starts from the larger τ): the CV estimate of the mean squared error per held-out 2-way cell "
        "(counts²; released minus predicted, squared, minus the noise variance 2b² and the prediction's Monte Carlo "
        "variance), against the true held-out error (benchmark only: the true table is known here).",
        "",
        "| τ | box τn/b (nats) | CV MSE ± se | vs chosen τ (paired over folds) | true MSE | fits converged |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"{run['summary']}. Noise floor: the subtracted variance alone puts a standard deviation of "
        f"{cv['floor_sd']:.0f} counts² (b²√(20/m), m = {cv['m']}) on every estimate, so RMSEs below "
        f"{(2 * cv['floor_sd']) ** 0.5:.0f} cannot be resolved. Time: {run['wall_s'] / 60:.1f} min in all, "
        f"{cv['seconds_per_fit']:.0f} s per fit, {per_fold:.0f} s per fold (all τ); load average "
        f"{'/'.join(f'{x:.1f}' for x in run['load_before'])} before, {'/'.join(f'{x:.1f}' for x in run['load_after'])} after.",
        "",
        f"Reading it: the CV estimate is within {np.max(np.abs(np.array(cv['mse']) - np.array(run['true_mse']))):.0f} "
        "counts² of the true held-out error at every τ (the noise it subtracts is independent of the fits). The "
        "between-fold ± is large because held-out pairs differ in how well the training folds' pairs imply them; the paired column compares τ values on the same folds. A held-out pair's "
        "own interaction is not implied by the others, so a marginal the model was not given is predicted only to "
        f"≈ {math.sqrt(max(cv['best_mse'], 0)):.0f} counts RMS per cell (the release's noise sd is "
        f"{run['b'] * math.sqrt(2):.0f}) — the population CV measures is pairs the history has not released. The "
        "small box shrinks toward independence and costs (the true error agrees); the curve is flat from a box of ~14 nats up (the seed's "
        "exact-fit limit), where the published fit's τ lies. The fits ran a fixed number of rounds (none passed its "
        "convergence test in that budget): the curve is the solver's at that budget."
        + (
            ""
            if run.get("solver") == SOLVER
            else " This CV run predates the present solver (it fitted the clipped "
            "projection with 1/j steps and returned the last iterate) and was not rerun with it (time): its τ curve is "
            "the old solver's."
        ),
        "",
    ]


def _notes(res: dict) -> list[str]:
    meth = res["methods"]
    me = meth.get("dpdesk max-ent", {})
    chk = me.get("check") or {}
    load = ""
    if res.get("load_before"):
        load = (
            f" Load average (1/5/15 min) {'/'.join(f'{x:.1f}' for x in res['load_before'])} before the fit, "
            f"{'/'.join(f'{x:.1f}' for x in res.get('load_after_fit', []))} after."
        )
    tests = me.get("tests") or []
    out = [
        f"Max-ent solver (`fit_marginals`: Gibbs particles, linearised scaling of the consistent non-negative targets, "
        f"steps decaying as j^−0.6 after the full-step plateau, θ averaged over the latter half of them): {me.get('iterations')} rounds of {res.get('sweeps')} Gibbs sweeps over "
        f"{res['particles']} particles, converged = {me.get('converged')} (test: the 97.7 % upper bound on the RMS misfit "
        f"beyond Monte Carlo error ≤ {res.get('gtol')} noise scales, of the averaged θ on {res['particles']} fresh chains "
        "from the prior). Tests (round: RMS misfit, upper bound): "
        + ", ".join(f"{int(r)}: {b:.2f}, {u:.2f}" for r, b, u in tests)
        + f". The returned θ averages {me.get('averaged')} iterates; its test: RMS misfit beyond Monte Carlo error "
        f"{me.get('bias_rms', float('nan')):.2f} noise scales (standard error of its square "
        f"{chk.get('bias_se', float('nan')):.3f}; upper bound "
        f"{math.sqrt(max(chk.get('bias_ms', 0.0) + 2 * chk.get('bias_se', 0.0), 0.0)):.2f}), z-weighted "
        f"{chk.get('z_rms', float('nan')):.2f} (upper bound {chk.get('z_upper', float('nan')):.2f}). "
        "In-loop trace of each round's iterate on the persistent chains (a progress record, not the test) "
        + ", ".join(f"{x:.2f}" for x in me.get("trace", []))
        + "."
        + load
    ]
    if "mbi tree" in meth:
        out.append(
            "Private-PGM spanning tree (chosen by the projected marginals' mutual information, post-processing): "
            + ", ".join("–".join(e) for e in res["tree"])
            + "."
        )
    if len(res.get("merged_from", [])) > 1:
        out.append(
            "Rows merged from separate runs on one saved release (`--release`): the max-ent rows from the first, "
            "the others from the rest where the first has none (their times are from those runs)."
        )
    out.append(
        f"Released cells whose consistent value is negative: {res['negative_cells']} of {res['cells']}. "
        f"Release {res['release_s']:.1f} s (OpenDP), structured projection {res['project_s'] * 1000:.0f} ms."
    )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="smaller settings: fewer particles, rows, queries, iterations"
    )
    ap.add_argument("--tau", type=float, default=0.002)
    ap.add_argument("--particles", type=int, default=None)
    ap.add_argument("--rows", type=int, default=None, help="synthetic rows (default n)")
    ap.add_argument("--max-iter", type=int, default=40, help="max-ent rounds")
    ap.add_argument("--sweeps", type=int, default=5, help="Gibbs sweeps per max-ent round")
    ap.add_argument("--sample-sweeps", type=int, default=5, help="Gibbs sweeps moving each synthetic row")
    ap.add_argument(
        "--gtol",
        type=float,
        default=0.5,
        help="max-ent convergence: upper bound on the RMS misfit, noise scales",
    )
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--triples", type=int, default=None)
    ap.add_argument("--mbi-iters", type=int, default=None)
    ap.add_argument("--no-mbi", action="store_true")
    ap.add_argument("--no-maxent", action="store_true")
    ap.add_argument(
        "--release",
        type=Path,
        default=None,
        help="a .npz of the noisy marginals: read if it exists, else drawn and saved (split runs share it)",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None, help="also save the raw results here")
    ap.add_argument(
        "--from-json",
        type=Path,
        nargs="+",
        default=None,
        help="render saved runs instead of running (methods of later files are merged into the first)",
    )
    add_write_docs(ap, "the section 'estimates-publishing' of docs/evaluation.md")
    ap.add_argument(
        "--cv-json", type=Path, default=None, help="a saved benchmarks/synth_cv.py run to include"
    )
    args = ap.parse_args(argv)
    q = args.quick
    args.particles = args.particles or (50_000 if q else 200_000)
    args.rows = args.rows or (100_000 if q else None)
    args.queries = args.queries or (50 if q else 200)
    args.triples = args.triples or (6 if q else 20)
    args.mbi_iters = args.mbi_iters or (200 if q else 1000)
    if args.from_json:
        res = json.loads(args.from_json[0].read_text())
        res["merged_from"] = [str(p) for p in args.from_json]
        for extra in args.from_json[1:]:
            more = json.loads(extra.read_text())
            res["methods"].update({k: v for k, v in more["methods"].items() if k not in res["methods"]})
            for key in ("tree", "mbi_iters"):
                res.setdefault(key, more.get(key))
    else:
        res = run(args)
        res["queries"] = args.queries
        if args.json:
            args.json.write_text(json.dumps(res, indent=1))
    if args.cv_json:
        res["cv_run"] = json.loads(args.cv_json.read_text())
    text = render(res)
    print(text)
    if args.write_docs:
        write_section(DOCS / "evaluation.md", "estimates-publishing", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
