"""``eval_all.py --batch``: run the budget-starved evaluation and write its section of docs/evaluation.md."""

from __future__ import annotations

import json
import multiprocessing as mp
import tempfile
import time
from pathlib import Path

import numpy as np

from evaluation import batch_eval as B
from evaluation import data as D
from evaluation.sections import write_section

WORKLOADS = ("eq37", "ranges")
# repetition 0 was looked at while the planner was written; the headline uses the others only
HELD_OUT_FROM = 1

_DS: dict = {}


def _task(args):
    workload, rep, system, k, batch = args
    ds = _DS["demo"]
    t0 = time.perf_counter()
    out = B.run(system, ds, B.stream(workload, ds, rep, k), seed=1000 * rep + B.SYSTEMS.index(system), batch=batch)
    return (workload, rep, system), out, time.perf_counter() - t0


def main(args) -> int:
    t_start = time.perf_counter()
    k = args.requests or (120 if args.quick else 1000)
    reps = args.reps or (1 if args.quick else 3)
    out_dir = args.out or (Path(tempfile.mkdtemp(prefix="dpdesk-eval-")) if args.quick else Path(__file__).resolve().parents[2] / "docs")
    out_dir.mkdir(parents=True, exist_ok=True)
    ds = D.demo()
    if ds is None:
        raise SystemExit("the demo table (resources/demo) is needed for the batch evaluation")
    _DS["demo"] = ds
    rep_ids = list(range(HELD_OUT_FROM, HELD_OUT_FROM + reps))
    if args.from_json is not None:  # rewrite the section from a saved run (same streams, no re-simulation)
        saved = json.loads(args.from_json.read_text(encoding="utf-8"))
        results = {}
        for key, v in saved["results"].items():
            w, r, s = key.split("|")
            results[(w, int(r), s)] = (B.Outcome(**v), 0.0)
        rep_ids = sorted({r for (_w, r, _s) in results})
        md = render(results, rep_ids, saved["k"], False, saved["seconds"], saved["jobs"], ds)
        if saved.get("note"):
            md = md.replace("\n\nSetting:", f"\n\n{saved['note']}\n\nSetting:", 1)
        write_section(out_dir / "evaluation.md", "batch-starved", md)
        print(f"wrote {out_dir / 'evaluation.md'} (section batch-starved) from {args.from_json}")
        return 0
    tasks = [(w, r, s, k, 20) for w in WORKLOADS for r in rep_ids for s in B.SYSTEMS]
    tasks.sort(key=lambda t: t[2] != "dpdesk batch")  # the long ones first
    results: dict = {}
    with mp.get_context("fork").Pool(args.jobs) as pool:
        for key, o, secs in pool.imap_unordered(_task, tasks):
            results[key] = (o, secs)
            print(f"  {key}: answered {o.answered}, {secs:.0f}s", flush=True)
    seconds = time.perf_counter() - t_start
    md = render(results, rep_ids, k, args.quick, seconds, args.jobs, ds)
    write_section(out_dir / "evaluation.md", "batch-starved", md)
    (out_dir / "batch_starved.json").write_text(json.dumps(
        {"k": k, "seconds": seconds, "jobs": args.jobs,
         "results": {f"{w}|{r}|{s}": vars(o) for (w, r, s), (o, _) in results.items()}}, indent=1), encoding="utf-8")
    print(f"wrote {out_dir / 'evaluation.md'} (section batch-starved)")
    return 0


def oracle(ds, workload: str, rep: int, k: int) -> tuple[int, str]:
    """How many of the stream's requests one strategy chosen knowing all of them, released at the whole
    budget at once on an empty ledger, would answer (the search's reckoning, κ conservative) — a reference
    for what per-batch planning leaves on the table, not a bound any online system can reach."""
    from dpdesk.engine.answering.workflow import Request
    from dpdesk.engine.planning.planner import _needed_scales
    from dpdesk.engine.planning.strategies import candidate_strategies

    reqs = [Request(str(i), s.query, s.eps, s.delta) for i, s in enumerate(B.stream(workload, ds, rep, k))]
    ordered = [a.kind == "numeric" for a in ds.cube.schema.attributes]
    best, name = 0, "none"
    for s in candidate_strategies([r.query for r in reqs], [1.0] * len(reqs), ordered=ordered):
        if s.name.startswith("requests"):
            continue
        got = int(np.sum(_needed_scales(s, reqs) <= B.TOTAL))
        if got > best:
            best, name = got, s.name
    return best, name


def render(results, rep_ids, k, quick, seconds, jobs, ds=None) -> str:
    lines = []
    mode = "QUICK (pipeline check, not results)" if quick else "full"
    lines.append("## Answering the queue: batch plans where the budget is scarce (issue 19)\n")
    lines.append(f"Mode: **{mode}**. Regenerate with `.venv/bin/python benchmarks/eval_all.py --batch` ({jobs} worker "
                 f"processes; this run took {seconds:.0f} s while other jobs shared the 2 cores). Code: "
                 "`benchmarks/evaluation/batch_eval.py` (systems, workloads) and `batch_report.py` (this section).\n")
    lines.append(f"Setting: total budget {B.TOTAL:g}, δ = {B.DELTA}, 2ε ~ U[{B.EPS2[0]:g}, {B.EPS2[1]:g}], {k} requests per "
                 "stream arriving in batches of 20, over the demo cube (720 cells). Noise: continuous Laplace for "
                 "every system (simulation sampler). Workloads: `eq37` — the paper's Eq. 37–38 requests (1–10 cells "
                 "drawn with the skewed weights, so most mass sits on the first cells in C order); `ranges` — random "
                 "1-D and 2-D ranges over the ordered attributes (age, hours), the other attributes summed, so every "
                 "query spreads over the whole cube.\n")
    lines.append("Under the flat prior no decision reads the data (only the requests, their (ε, δ), the history's "
                 "queries and budgets and the per-cell costs), so which table the cube holds changes only the "
                 "answers, not which requests are answered; the streams are what differ between repetitions.\n")
    lines.append(f"Held-out streams: repetitions {rep_ids[0]}–{rep_ids[-1]} (repetition 0 was looked at while the "
                 "planner was written and is not in the tables). Nothing was tuned on these streams: the batch system "
                 "runs without a spend policy (cap 1), `dpdesk today` with the policy fixed earlier in the paper "
                 "evaluation (floor 0.1, cap 0.5).\n")
    lines.append("| workload | system | answered (mean ± sd) | vs paper (per stream) | hits | Σ claimed | (hits − Σ claimed)/answered (mean ± sd over streams) | ᾱ |")
    lines.append("|---|---|---|---|---|---|---|---|")
    summary = {}
    for w in WORKLOADS:
        for s in B.SYSTEMS:
            rows = [results[(w, r, s)][0] for r in rep_ids if (w, r, s) in results]
            if not rows:
                continue
            ans = np.array([o.answered for o in rows], float)
            base = np.array([results[(w, r, "paper inference")][0].answered for r in rep_ids], float)
            ratio = ans / np.maximum(base, 1)
            gap = np.array([(o.hits - o.claimed) / max(o.answered, 1) for o in rows])
            sd = lambda x: float(np.std(x, ddof=1)) if len(x) > 1 else float("nan")  # noqa: E731
            summary[(w, s)] = (float(ans.mean()), float(ratio.mean()))
            lines.append(f"| {w} | {s} | {ans.mean():.1f} ± {sd(ans):.1f} | ×{ratio.mean():.2f} (min ×{ratio.min():.2f}) | "
                         f"{sum(o.hits for o in rows)} | {sum(o.claimed for o in rows):.1f} | {gap.mean():+.3f} ± {sd(gap):.3f} | "
                         f"{np.mean([o.system_cost for o in rows]):.3f} |")
    lines.append("")
    for w in WORKLOADS:
        if (w, "dpdesk batch") in summary and (w, "paper inference") in summary:
            b, p = summary[(w, "dpdesk batch")][0], summary[(w, "paper inference")][0]
            t = summary.get((w, "dpdesk today"), (float("nan"),))[0]
            lines.append(f"- `{w}`: dpdesk batch answers ×{b / p:.2f} as many requests as the paper's inference system "
                         f"(ratio of the held-out means; dpdesk today ×{t / p:.2f}).")
    if ds is not None and not quick:
        lines.append("")
        lines.append("What bounds the ratio. A reference (not an online system): one strategy chosen knowing the whole "
                     "stream, released at the whole budget on an empty ledger, answers (by the search's conservative "
                     "reckoning) — per held-out stream:\n")
        lines.append("| workload | " + " | ".join(f"stream {r}" for r in rep_ids) + " |")
        lines.append("|---|" + "---|" * len(rep_ids))
        for w in WORKLOADS:
            cells = []
            for r in rep_ids:
                n, name = oracle(ds, w, r, k)
                got = results.get((w, r, "dpdesk batch"))
                cells.append(f"{n} ({name}); batch {got[0].answered if got else '—'}")
            lines.append(f"| {w} | " + " | ".join(cells) + " |")
        lines.append("\nPer-batch planning is myopic: each batch buys the cheapest rows for its own 20 requests, so the "
                     "early batches' strategies (and strict early requests) take budget that a strategy for the whole "
                     "workload would have spread; the reference shows what that costs. Even the reference stays near "
                     "2× the paper's count on these streams: requests whose ε is below what a whole-budget strategy "
                     "can give at δ = 0.2 (2ε near 1 on a popular cell) cannot be answered by any plan within total 1. "
                     "The 2× target is therefore **not met** by dpdesk batch as built (×1.72 and ×1.41); closing the "
                     "gap needs planning across batches (e.g. pacing the batch like a purchase, or a strategy sized "
                     "for the expected workload) — the spend policy's cap applies to a batch but was not tuned here.\n")
    plan_t = [t for (w, r, s), (o, _) in results.items() if s == "dpdesk batch" for t in o.plan_seconds]
    lines.append("")
    if plan_t:
        lines.append(f"Planning one batch of 20 took {np.median(plan_t):.2f} s median, {max(plan_t):.2f} s at most "
                     "(under the shared machine's load).\n")
    lines.append("Calibration: every answered request claims a confidence (an inferred answer its posterior mass at "
                 "±ε, a fresh one its exact mass, a fused one the fused posterior's); a calibrated system's hits "
                 "match the sum of its claims. The spread is taken over repetitions (streams with their own noise), "
                 "not from a binomial formula: answers inferred from the same history share its noise, so they "
                 "are not independent trials.\n")
    return "\n".join(lines)
