"""How long *Plan batch…* / ``dpdesk batch plan`` take on the demo project with and without the look-ahead.

Run (from anywhere; it prints its table):

    .venv/bin/python benchmarks/bench_batch_look_ahead.py --repeat 3
    .venv/bin/python benchmarks/bench_batch_look_ahead.py --repeat 3 --write-docs   # replaces docs/performance.md's section

A fresh copy of the demo project (720 cells, total budget 1, its 37 pending count requests) is planned
through the product's path, ``store.batch.plan_pending``, as the dialog and the CLI call it: the whole
queue, and its first five requests (the other 32 are then the queue the look-ahead also serves), each
with the look-ahead off and at shares 0.5 and 1. *Free after* counts the queue's other pending requests
that history would answer for free once the plan is released (the engine's decision on the would-be
history; under the flat prior no decision reads a released value, so the measurements' values are not
needed). Planning reads no data.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI sets it

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluation.sections import DOCS, add_write_docs, write_section

from dpdesk.appdata.demo import create_demo_project
from dpdesk.engine.answering.workflow import assess
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.store import Project
from dpdesk.store.batch import plan_pending

SHARES = (None, 0.5, 1.0)


def free_after(project, plan, others) -> int:
    """How many of ``others`` (stored requests) history answers for free once ``plan`` is released."""
    with project.view().assessing() as s:
        after = History(s.history.shape, rows=list(s.history.rows))
    for m in plan.measurements:
        after.append(HistoryRow(m.query, m.alpha, 0.0, m.family))
    settings = project.answering_settings()
    return sum(
        assess(after, r.to_request(), settings, cell_costs=plan.cell_costs_after, decision_only=True).decision
        == "infer"
        for r in others
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="runs per case; the median is reported")
    add_write_docs(ap, "the section 'batch-look-ahead' of docs/performance.md")
    args = ap.parse_args(argv)
    rows, loads = [], [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        path = create_demo_project(Path(tmp))
        with Project.open(path, "r") as p:
            pending = [r for r in p.requests("pending") if r.kind == "count"]
            for name, batch in (("all 37 pending", None), ("first 5 pending", [r.id for r in pending[:5]])):
                others = [] if batch is None else [r for r in pending if r.id not in batch]
                for share in SHARES:
                    times = []
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        plan = plan_pending(p, batch, look_ahead=share)
                        times.append(time.perf_counter() - t0)
                        loads.append(os.getloadavg()[0])
                    la = plan.look_ahead
                    free = free_after(p, plan, others) if others else None
                    rows.append((name, share, statistics.median(times), times, plan, la, free))
                    print(
                        f"{name:16} share {share!s:5} {statistics.median(times):7.2f} s  {plan.strategy}  "
                        f"answers {plan.answered}/{len(plan.requests)}  cost → {plan.system_cost_after:.4g}"
                        f"{'' if la is None else f'  (look-ahead alone {la.system_cost_after:.4g})'}"
                        f"{'' if free is None else f'  free after: {free}/{len(others)}'}",
                        flush=True,
                    )
    md = [
        "## Batch plans with the look-ahead, through the product (issue 19)",
        "",
        "Reproduce: `.venv/bin/python benchmarks/bench_batch_look_ahead.py --write-docs` (a fresh demo copy: 720 cells, total "
        f"budget 1, 37 pending count requests; `store.batch.plan_pending` as *Plan batch…* and `dpdesk batch plan` "
        f"call it; median of {args.repeat} run(s) per case). Load average during the run: "
        f"{min(loads):.1f}–{max(loads):.1f} on 2 cores.",
        "",
        "| batch | look-ahead | seconds (median) | strategy | answered | system cost after | look-ahead alone | "
        "free after (rest of queue) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, share, med, times, plan, la, free in rows:
        md.append(
            f"| {name} | {'off' if share is None else f'{share:g}'} | {med:.2f} | {plan.strategy} | "
            f"{plan.answered}/{len(plan.requests)} | {plan.system_cost_after:.4g} | "
            f"{'—' if la is None else f'{la.system_cost_after:.4g} ({la.measurements} rows)'} | "
            f"{'—' if free is None else f'{free}/32'} |"
        )
    md += [
        "",
        "*Free after*: the queue's other pending requests history answers for free once the plan is released "
        "(not the whole story: without the look-ahead the budget it did not spend is still there to buy answers "
        "for the rest one by one; docs/evaluation.md's batch section compares whole streams). "
        "The look-ahead plans twice (the batch alone, then on top of the look-ahead's rows) and its exact checks "
        "run on a history holding its rows (one per unspent cell for `ahead: identity`), so it costs more time "
        "than the batch alone; it runs on the dialog's worker with progress and Cancel. It is kept when it "
        "serves the queue at least as well as the batch alone (`engine/planning/ahead.py` `queue_score`: the "
        "batch's answers plus the queue's requests its rows meet without having been bought for them, the "
        "batch included as part of that sample of what the queue asks).",
    ]
    whole = {share: plan for name, share, _m, _t, plan, _la, _f in rows if name == "all 37 pending"}
    off, full = whole.get(None), whole.get(1.0)
    if off is not None and full is not None and full.look_ahead is not None and full.answered < off.answered:
        md[-1] += (
            f" Planning the whole queue at once at share 1, the look-ahead is kept although it answers "
            f"{full.answered} of {len(full.requests)} at system cost {full.system_cost_after:.3g} where the "
            f"batch alone answers {off.answered} at {off.system_cost_after:.3g}: the rule reads the batch as "
            "a sample of requests still to come (as many again as it has shown), which rows measured for "
            "the workload serve for free and fresh answers to each request do not. A curator who knows "
            "the queue is complete plans it with the look-ahead off."
        )
    print("\n".join(md))
    if args.write_docs:
        write_section(DOCS / "performance.md", "batch-look-ahead", "\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
