"""Time a partition release over a 10⁶-cell cube: plan (price + guarantees) and publish (noise every count).

Run (from anywhere; it prints its table):

    .venv/bin/python benchmarks/bench_partition.py                # the 10⁶-cell cube
    .venv/bin/python benchmarks/bench_partition.py --write-docs   # and replaces its section of docs/performance.md
    .venv/bin/python benchmarks/bench_partition.py --quick        # small cube (never written)

The cube is a 2¹⁰-label ordered attribute crossed with three 10-label attributes (1 024 000 cells).
*Plan* is `tree_plan` + `preview` at a given α (per-cell cost, budget after, the per-query guarantees of
both default query classes from the exact posterior); *plan for a target* is `preview` with an accuracy
target instead (α searched). *Publish* is `draw_release` with OpenDP's sampler: the private row counts
and one discrete-Laplace vector draw per chunk of 2¹⁸ counts. Targets (issue 15): plan < 2 s, publish < 10 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluation.sections import DOCS, add_write_docs, write_section

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler
from dpdesk.engine.partition.guarantee import preview
from dpdesk.engine.partition.plan import cells_plan, tree_plan
from dpdesk.engine.partition.release import draw_release
from dpdesk.engine.schema import Schema


def schema(leaves: int, others: int) -> Schema:
    attrs = [{"name": "age", "column": "age", "kind": "numeric", "edges": list(range(leaves + 1))}]
    attrs += [
        {"name": f"c{i}", "column": f"c{i}", "kind": "categorical", "values": [f"v{j}" for j in range(10)]}
        for i in range(others)
    ]
    return Schema.from_dict({"attributes": attrs})


def timed(f, repeat: int = 1):
    out, times = None, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    add_write_docs(ap, "the section 'partition-release' of docs/performance.md")
    args = ap.parse_args(argv)
    s = schema(256 if args.quick else 1024, 2 if args.quick else 3)
    counts = np.random.default_rng(0).poisson(1.0, s.shape)
    load0 = os.getloadavg()[0]
    rows = []
    for label, make in (
        ("tree, b = 2, crossed", lambda: tree_plan(s, "age", 2)),
        ("tree, b = 4, crossed", lambda: tree_plan(s, "age", 4)),
        ("every cell", lambda: cells_plan(s)),
    ):
        plan, t_build = timed(make)
        pv, t_plan = timed(lambda: preview(plan, alpha=1.0, delta=0.05, total_budget=2.0), repeat=3)
        target = pv.guarantees[0].halfwidth
        pv2, t_target = timed(lambda: preview(plan, accuracy=target, delta=0.05, total_budget=2.0))
        _, t_seeded = timed(lambda: draw_release(plan, 1.0, counts, SeededSampler(0), allow_insecure=True))
        rel, t_pub = timed(lambda: draw_release(plan, 1.0, counts, OpenDPSampler()))
        rows.append(
            (
                label,
                plan.n_rows,
                t_build + t_plan,
                t_target,
                t_pub,
                t_seeded,
                pv.guarantees[0].halfwidth,
                pv2.alpha,
            )
        )
        print(
            f"{label}: {plan.n_rows:,} counts; plan {t_build + t_plan:.2f} s; plan for ±{target:.0f} {t_target:.2f} s "
            f"(α = {pv2.alpha:.4f}); publish (OpenDP) {t_pub:.2f} s; publish (numpy, simulation) {t_seeded:.2f} s",
            flush=True,
        )
    load1 = os.getloadavg()[0]
    md = [
        "## One-shot partition releases over 10⁶ cells",
        "",
        "Reproduce: `.venv/bin/python benchmarks/bench_partition.py --write-docs` (`--quick`: a small cube). "
        f"Cube: {s.n_cells:,} cells (a 2¹⁰-label ordered attribute × three 10-label attributes). *Plan* = build the "
        "plan and preview it at α = 1 (cost per cell, budget after, exact per-query guarantees of both default "
        "query classes; median of 3); *plan for a target* = preview with the first guarantee's half-width as an "
        "accuracy target (α searched); *publish* = the private row counts plus OpenDP discrete-Laplace vector draws "
        "in chunks of 2¹⁸, two at a time (the ledger write of the release path comes on top). Targets: plan < 2 s, publish < 10 s.",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores; load average {load0:.1f} at the start and "
        f"{load1:.1f} at the end"
        + (
            " (other jobs shared the machine: absolute times are inflated)." if max(load0, load1) > 2 else "."
        ),
        "",
        "| plan | counts | plan | plan for a target | publish (OpenDP) | publish (numpy sampler, simulation only) |",
        "|---|---|---|---|---|---|",
    ]
    for label, n_rows, t_plan, t_target, t_pub, t_seeded, _, _ in rows:
        md.append(
            f"| {label} | {n_rows:,} | {t_plan:.2f} s | {t_target:.2f} s | {t_pub:.1f} s | {t_seeded:.2f} s |"
        )
    md += [
        "",
        "Publishing is bound by OpenDP's exact discrete-Laplace sampler (≈ 6 µs per count on an idle core, several "
        "times more under load), drawn on two threads (OpenDP samples without holding the GIL): a binary tree over "
        "10⁶ cells releases 2.05·10⁶ counts; branching 4 releases a third fewer. "
        "Planning never touches the data or an n × n matrix: the tree's normal equations are solved level by level "
        "and the exact error law is computed from the few distinct coefficient magnitudes.",
    ]
    print("\n".join(md))
    if args.write_docs and not args.quick:
        write_section(DOCS / "performance.md", "partition-release", "\n".join(md))
        print("wrote section 'partition-release' of docs/performance.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
