"""The zCDP evaluation's streams through the product: real project files, the one release path.

benchmarks/eval_zcdp.py runs its systems on the engine's pieces. This runs the same streams (the same
requests, in order) through real project files over the demo table — ``Project.create(...,
accounting="zcdp", delta=1e-6)`` against a pure-ε project at the same total ε = 1 — each request queued,
assessed by the project (``Project.assess``) and, when it decides *infer* or *spend*, released through
``Project.release`` (recorded in the ledger, the budget checked at record time, the privacy map checked
against the plan). The noise is a seeded sampler (the projects are test projects), so a run is
reproducible; a count's noise is the project's default family (discrete Gaussian under zCDP, discrete
Laplace in pure ε), so the answered counts differ from the engine-level run's (continuous noise) by the
noise's luck only. The ledger is verified at the end.

    .venv/bin/python benchmarks/eval_zcdp_product.py                      # the bounded stream (1 000)
    .venv/bin/python benchmarks/eval_zcdp_product.py --write-docs         # and section zcdp-product
    .venv/bin/python benchmarks/eval_zcdp_product.py --stream long --requests 2000

Prints one JSON object per project, the machine's load before and after, and the section's Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_zcdp as E
from evaluation.sections import add_write_docs, write_section

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.store import Project

DEMO = Path(__file__).resolve().parents[1] / "resources" / "demo"


def run(specs: list, mode: str, folder: Path, seed: int) -> dict:
    """Answer ``specs`` one by one through a new project accounted in ``mode``; its figures."""
    path = folder / f"{mode}.dpdesk"
    schema = json.loads((DEMO / "adult.schema.json").read_text(encoding="utf-8"))
    extra = {"accounting": "zcdp", "delta": E.Z.PRIVACY_DELTA} if mode == "zcdp" else {}
    t0 = time.perf_counter()
    answered = fresh = 0
    sampler = SeededSampler(seed)
    with Project.create(
        path,
        name=mode,
        schema=schema,
        source_location=str(DEMO / "adult.parquet"),
        total_budget=E.Z.TOTAL,
        test_project=True,
        **extra,
    ) as p:
        for i, s in enumerate(specs):
            r = p.add_request(s.query.dense().tolist(), s.eps, s.delta, request_id=f"q{i}")
            a = p.assess(r.id)
            if a.decision not in ("infer", "spend"):
                continue
            p.release(a, sampler)
            answered += 1
            fresh += a.decision == "spend"
        report = p.verify()
    return {
        "mode": mode,
        "requests": len(specs),
        "answered": answered,
        "fresh": fresh,
        "verified": report.ok,
        "epsilon_spent": report.epsilon_spent,
        "largest_cell": report.system_cost,
        "seconds": round(time.perf_counter() - t0, 1),
    }


SECTION = "zcdp-product"


def _saved(path: Path) -> tuple[str, list[dict], tuple[float, float]]:
    """A saved run: the ``--json`` file, or the JSON lines a run printed."""
    text = path.read_text(encoding="utf-8")
    try:
        obj = json.loads(text)
        return obj["stream"], obj["runs"], tuple(obj["load"])  # type: ignore[return-value]
    except json.JSONDecodeError:
        lines = [json.loads(t) for t in text.splitlines() if t.startswith("{")]
        runs = [{k: v for k, v in o.items() if k != "stream"} for o in lines if "mode" in o]
        load = (lines[0]["load_before"], lines[-1]["load_after"])
        return next(o["stream"] for o in lines if "stream" in o), runs, load


def engine_figures(stream: str, n: int) -> dict[str, int]:
    """The engine-level run's answered counts among the first ``n`` requests of ``stream``
    (docs/zcdp_eval.json), by system (none where that run did not record the prefix)."""
    path = E.DOCS / "zcdp_eval.json"
    if not path.exists():
        return {}
    runs = json.loads(path.read_text(encoding="utf-8"))["results"]
    out = {}
    for r in runs:
        if r["stream"] == stream:
            got = r["answered"] if r["requests"] == n else r.get("prefix_answered", {}).get(str(n))
            if got is not None:
                out[r["system"]] = int(got)
    return out


def section(stream: str, runs: list[dict], load: tuple[float, float], first: int | None) -> str:
    """The docs section: each project's figures beside the engine-level run's."""
    eng = engine_figures(stream, runs[0]["requests"])
    by = {r["mode"]: r for r in runs}
    name = {"zcdp": "dpdesk zCDP", "pure": "dpdesk pure ε"}
    cmd = f".venv/bin/python benchmarks/eval_zcdp_product.py --stream {stream} --write-docs" + (
        f" --first {first}" if first else ""
    )
    lines = [
        "## zCDP through the product: real project files (issue 37)",
        "",
        f"Regenerate with `{cmd}`. Load average {load[0]:.1f} before, {load[1]:.1f} after (2 cores shared "
        "with other jobs); seconds are wall time, all of it inside `Project.assess` and `Project.release`.",
        "",
        f"The `{stream}` stream of section zcdp-accounting ({runs[0]['requests']} requests, in order) through "
        "two real project files over the demo table at the same total ε = 1: one made with "
        "`project new … --accounting zcdp --delta 1e-6`, one pure ε. Each request is queued, assessed by the "
        "project and, when it decides infer or spend, released through the one release path (the budget and "
        "the privacy map checked at record time; the discrete Gaussian under zCDP, the discrete Laplace in "
        "pure ε, from a seeded sampler: test projects). The engine-level column is the same system in "
        "section zcdp-accounting (continuous noise, so the counts differ by the noise's luck).",
        "",
        "| project | answered | fresh | ε spent (verify) | largest cell | verify | seconds | engine-level run |",
        "|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for mode in ("zcdp", "pure"):
        r = by.get(mode)
        if r is None:
            continue
        unit = "ρ " if mode == "zcdp" else "ε "
        lines.append(
            f"| {name[mode]} | {r['answered']} | {r['fresh']} | {r['epsilon_spent']:.4f} | "
            f"{unit}{r['largest_cell']:.6f} | {'OK' if r['verified'] else 'FAILED'} | {r['seconds']:.0f} | "
            f"{eng.get(name[mode], '–')} |"
        )
    if "zcdp" in by and "pure" in by and by["pure"]["answered"]:
        ratio = by["zcdp"]["answered"] / by["pure"]["answered"]
        lines += ["", f"- zCDP against pure ε through the product: ×{ratio:.2f} answered requests."]
        ez, ep = eng.get(name["zcdp"]), eng.get(name["pure"])
        if ez and ep:
            lines.append(
                f"- The engine-level run on the same requests: ×{ez / ep:.2f} ({ez} against {ep}). A zCDP "
                "project answers integer counts with the discrete Gaussian, whose exact lattice tail allows "
                "a larger σ for the same ±a at the same confidence than the continuous one the engine-level run "
                "simulates, so each fresh answer costs less ρ; a pure project's discrete Laplace likewise."
            )
        lines.append(
            "- The 2× goal on the 10 000-request `long` stream is out of reach whatever the accounting: pure ε "
            "already answers more than half of it (section zcdp-accounting). zCDP pays off where cells are "
            "answered fresh more than about ln(1/δ) times (14 at δ = 10⁻⁶; the measured crossover k* is 9–18 "
            "by accuracy); below that, and for strict requests, pure ε is cheaper."
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stream", default="bounded", help="bounded (default) or long")
    ap.add_argument("--requests", type=int, default=1000, help="the long stream's length (default 1000)")
    ap.add_argument("--modes", default="zcdp,pure", help="which projects (default zcdp,pure)")
    ap.add_argument("--first", type=int, help="only the stream's first N requests (a quick check)")
    ap.add_argument("--json", help="also write the runs to this JSON file")
    ap.add_argument("--from-json", help="no run: the section from a --json file (or the printed lines)")
    add_write_docs(ap, f"section {SECTION} of docs/evaluation.md")
    args = ap.parse_args()
    if args.from_json:
        stream, runs, load = _saved(Path(args.from_json))
        text = section(stream, runs, load, args.first)
        print(text)
        if args.write_docs:
            write_section(E.DOCS / "evaluation.md", SECTION, text)
        return
    specs, initial, _total = E._specs(args.stream, args.requests, False)
    specs = specs[: args.first] if args.first else specs
    assert not initial, "only the streams without initial rows run through a project"
    before = os.getloadavg()[0]
    print(json.dumps({"load_before": before}), flush=True)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode in args.modes.split(","):
            runs.append(run(specs, mode, Path(tmp), 37_100))
            print(json.dumps({"stream": args.stream, **runs[-1]}), flush=True)
    after = os.getloadavg()[0]
    print(json.dumps({"load_after": after}), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"stream": args.stream, "runs": runs, "load": [before, after]}))
    text = section(args.stream, runs, (before, after), args.first)
    print(text)
    if args.write_docs:
        write_section(E.DOCS / "evaluation.md", SECTION, text)


if __name__ == "__main__":
    main()
