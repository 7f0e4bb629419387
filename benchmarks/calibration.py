"""End-to-end calibration of released answers through real projects and OpenDP noise.

Runs many small projects per setting (flat prior, known bounds, pacing) — see
``benchmarks/evaluation/calibration.py`` for what is counted and why the error comes from the
repetitions — and writes the ``calibration`` section of docs/evaluation.md. From the repository root:

    .venv/bin/python benchmarks/calibration.py [--projects R] [--out docs/evaluation.md] [--save RESULTS.json]
    .venv/bin/python benchmarks/calibration.py --from-json RESULTS.json   # rewrite the section only

``tests/test_calibration_projects.py`` runs the same projects, fewer of them, under ``make test``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from evaluation.calibration import SETTINGS, from_json, markdown, run, summary, to_json  # noqa: E402
from evaluation.sections import write_section  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--projects", type=int, default=200, help="repetitions per setting (default 200)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "evaluation.md", help="Markdown file to update")
    ap.add_argument("--save", type=Path, help="also write the raw results (every answer) to this JSON file")
    ap.add_argument("--from-json", type=Path, help="rewrite the section from results saved with --save (no run)")
    args = ap.parse_args(argv)
    if args.projects < 2:
        ap.error(f"--projects ({args.projects}) must be at least 2: the error is measured from repetitions")
    if args.from_json is not None:
        results, seconds, date = from_json(args.from_json.read_text(encoding="utf-8"))
    else:
        results, start = {}, time.perf_counter()
        for name in SETTINGS:
            t0 = time.perf_counter()
            results[name] = run(name, args.projects)
            s = summary(results[name])
            print(f"{name:>7}: {s.answers} answers, coverage {s.coverage:.4f} vs claim {s.claim:.4f}, H − C per "
                  f"project {s.mean_diff:+.3f} ± {s.se:.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)
        seconds, date = time.perf_counter() - start, time.strftime("%Y-%m-%d")
        if args.save is not None:
            args.save.write_text(to_json(results, seconds, date), encoding="utf-8")
    projects = len(next(iter(results.values())))
    command = f".venv/bin/python benchmarks/calibration.py --projects {projects}"
    write_section(args.out, "calibration", markdown(results, command, seconds, date))
    return 0


if __name__ == "__main__":
    sys.exit(main())
