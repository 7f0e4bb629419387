"""One stream of count, sum and mean requests at equal total budget, answered by dpdesk and by answering
each fresh: docs/evaluation.md section sums-stream (issue 36).

Run from the repository root:

    .venv/bin/python benchmarks/eval_sums.py --write-docs   # the runs and the section
    .venv/bin/python benchmarks/eval_sums.py                # the runs, printed only
    .venv/bin/python benchmarks/eval_sums.py --quick        # pipeline check (60 requests, one stream)

Options: ``--requests K`` (requests per stream, default 200), ``--streams S`` (streams, seeds 0…S−1,
default 2), ``--total E`` (the total budget, default 1). The streams, the systems and what is counted:
benchmarks/evaluation/sums_stream.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluation import sums_stream as S
from evaluation.sections import DOCS, add_write_docs, write_section


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def _row(seed: int, system: str, out: S.Outcome, asks: list[S.Ask]) -> dict[str, object]:
    row: dict[str, object] = {"seed": seed, "system": system, "system_cost": out.system_cost}
    for kind in S.KINDS:
        idx = [i for i, k in enumerate(out.kind) if k == kind]
        answered = [i for i in idx if out.answered[i]]
        # end-to-end calibration: the share within ±ε against the confidence promised, 1 − δ on average
        row[f"{kind}_promised"] = sum(1 - asks[i].delta for i in answered)
        row[f"{kind}_asked"] = len(idx)
        row[f"{kind}_answered"] = sum(out.answered[i] for i in idx)
        row[f"{kind}_free"] = sum(out.free[i] for i in idx)
        row[f"{kind}_within"] = sum(out.within[i] for i in idx)
    row["answered"] = sum(out.answered)
    row["within"] = sum(out.within)
    return row


def markdown(rows: list[dict[str, object]], args: argparse.Namespace, seconds: float, load: str) -> str:
    cmd = ".venv/bin/python benchmarks/eval_sums.py --write-docs"
    extra = (
        ""
        if (args.requests, args.streams, args.total) == (200, 2, 1.0)
        else (f" --requests {args.requests} --streams {args.streams} --total {args.total:g}")
    )
    lines = [
        "## A stream of counts, sums and means: dpdesk against answering each fresh (issue 36)",
        "",
        f"Regenerate with `{cmd}{extra}`. This run: {seconds:.0f} s wall, load average {load} at the start "
        "(2 cores shared with other jobs). Code: `benchmarks/evaluation/sums_stream.py`.",
        "",
        f"The demo table (60,000 rows, 720 cells) with two measures: `hours` (hours per week, bounds [1, 99]) "
        f"and `years` (age, bounds [17, 90]), missing values skipped. Each stream: {args.requests} requests "
        "over 24 boxes drawn with Zipf weights (groups recur, as in a real queue) — 40 % counts "
        "(±ε ~ U[15, 150]), 35 % sums (±ε ~ B·U[8, 80]), 25 % means (±a ~ U[0.4, 3], assuming at least N "
        "values, N half the box's values rounded down to a multiple of 50, at least 50: a stand-in for the "
        "curator's declaration, read off the table only to make it true), δ ∈ {0.05, 0.1, 0.2}. Same total "
        f"for both systems, ε = {args.total:g} per cell (per-cell accounting, a release past it refused). "
        "*Fresh each* answers every request on its own, as an OpenDP or Tumult user does (a count with "
        "discrete Laplace, a sum with Laplace, a mean as a fresh sum and count of values at the mean kind's "
        "price); *dpdesk* answers counts and sums through the answering workflow over one history of counts "
        "and sums, and means through the mean kind's plan (free when history's sum and count meet ±a, else "
        "fresh, its two rows joining the history). Noise is simulation noise from seeded samplers. "
        "*answered* = given an answer; *free* = from history, no budget; *within* = answered and within its "
        "±ε (±a).",
        "",
        "| stream | system | counts answered (free) | sums answered (free) | means answered (free) | answered | within ±ε | largest cell's ε |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cells = [f"{r[f'{k}_answered']}/{r[f'{k}_asked']} ({r[f'{k}_free']})" for k in S.KINDS]
        lines.append(
            f"| {r['seed']} | {r['system']} | {' | '.join(cells)} | {r['answered']}/{args.requests} | "
            f"{r['within']} | {float(r['system_cost']):.3f} |"  # type: ignore[arg-type]
        )
    lines += [
        "",
        "End-to-end calibration on this table (held out of the tests' tuning): of the answers given, the "
        "share within their ±ε (±a), against the confidence they promised (1 − δ, averaged over them):",
        "",
        "| system | counts | sums | means |",
        "|---|---:|---:|---:|",
    ]
    for system in S.SYSTEMS:
        cells = []
        for k in S.KINDS:
            got = [r for r in rows if r["system"] == system]
            n = sum(int(r[f"{k}_answered"]) for r in got)  # type: ignore[call-overload]
            w = sum(int(r[f"{k}_within"]) for r in got)  # type: ignore[call-overload]
            p = sum(float(r[f"{k}_promised"]) for r in got)  # type: ignore[arg-type]
            cells.append(f"{w}/{n} = {w / n:.3f} (promised {p / n:.3f})" if n else "—")
        lines.append(f"| {system} | {' | '.join(cells)} |")
    tot = {s: sum(int(r["answered"]) for r in rows if r["system"] == s) for s in S.SYSTEMS}  # type: ignore[call-overload]
    ratio = tot["dpdesk"] / max(1, tot["fresh each"])
    lines += [
        "",
        f"Over the {args.streams} streams dpdesk answers {tot['dpdesk']} requests and answering each fresh "
        f"{tot['fresh each']} (×{ratio:.2f}).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--streams", type=int, default=2)
    ap.add_argument("--total", type=float, default=1.0)
    ap.add_argument("--quick", action="store_true", help="60 requests, one stream (a pipeline check)")
    add_write_docs(ap, "docs/evaluation.md section sums-stream")
    args = ap.parse_args(argv)
    if args.quick:
        args.requests, args.streams = 60, 1
    load, t0 = _load(), time.perf_counter()
    schema, cube = S.dataset()
    rows = []
    for seed in range(args.streams):
        asks = S.stream(schema, cube, args.requests, seed)
        for system in S.SYSTEMS:
            rows.append(_row(seed, system, S.run(system, schema, cube, asks, args.total, seed), asks))
            print(rows[-1], flush=True)
    text = markdown(rows, args, time.perf_counter() - t0, load)
    print(text)
    if args.write_docs and not args.quick:
        write_section(DOCS / "evaluation.md", "sums-stream", text)
        print("wrote docs/evaluation.md section sums-stream")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
