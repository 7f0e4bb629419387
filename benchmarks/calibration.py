"""End-to-end calibration of released answers through real projects and OpenDP noise.

Runs many small projects per setting (flat prior, known bounds, pacing) — see
``benchmarks/evaluation/calibration.py`` for what is counted and why the error comes from the
repetitions — and prints the ``calibration`` section of docs/evaluation.md (``--write-docs`` replaces it
there; ``--out F`` in the Markdown file F). From anywhere:

    .venv/bin/python benchmarks/calibration.py [--projects R] [--requests N] [--write-docs] [--save RESULTS.json]
    .venv/bin/python benchmarks/calibration.py --from-json RESULTS.json --write-docs   # rewrite the section only

``--requests N`` runs only the stream's first N requests and writes section ``calibration-first-N``;
``tests/test_calibration_projects.py`` runs the first 9, 30 projects per setting, under ``make test``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from evaluation.calibration import (  # noqa: E402
    SETTINGS,
    STREAM,
    from_json,
    markdown,
    run,
    section_name,
    summary,
    to_json,
)
from evaluation.sections import DOCS, add_write_docs, write_section  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--projects", type=int, default=200, help="repetitions per setting (default 200)")
    ap.add_argument("--out", type=Path, default=None, help="a Markdown file whose section to replace")
    add_write_docs(ap, "the calibration section of docs/evaluation.md")
    ap.add_argument("--save", type=Path, help="also write the raw results (every answer) to this JSON file")
    ap.add_argument(
        "--requests",
        type=int,
        default=len(STREAM),
        help=f"the stream's first N requests (default all {len(STREAM)})",
    )
    ap.add_argument(
        "--from-json", type=Path, help="rewrite the section from results saved with --save (no run)"
    )
    args = ap.parse_args(argv)
    if args.projects < 2:
        ap.error(f"--projects ({args.projects}) must be at least 2: the error is measured from repetitions")
    if not 1 <= args.requests <= len(STREAM):
        ap.error(f"--requests ({args.requests}) must be between 1 and {len(STREAM)}")
    if args.from_json is not None:
        results, meta = from_json(args.from_json.read_text(encoding="utf-8"))
    else:
        results, start = {}, time.perf_counter()
        for name in SETTINGS:
            t0 = time.perf_counter()
            results[name] = run(name, args.projects, stream=STREAM[: args.requests])
            s = summary(results[name])
            print(
                f"{name:>7}: {s.answers} answers, coverage {s.coverage:.4f} vs claim {s.claim:.4f}, H − C per "
                f"project {s.mean_diff:+.3f} ± {s.se:.3f} ({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        meta = {
            "requests": args.requests,
            "seconds": time.perf_counter() - start,
            "date": time.strftime("%Y-%m-%d"),
            "commit": commit or "unknown",
        }
        if args.save is not None:
            args.save.write_text(to_json(results, meta), encoding="utf-8")
    projects = len(next(iter(results.values())))
    requests = "" if meta["requests"] == len(STREAM) else f" --requests {meta['requests']}"
    command = f".venv/bin/python benchmarks/calibration.py --projects {projects}{requests} --write-docs"
    text = markdown(results, meta, command)
    print(text)
    out = args.out or (DOCS / "evaluation.md" if args.write_docs else None)
    if out is not None:
        write_section(out, section_name(meta["requests"]), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
