"""Reproduce the non-interactive release seed's §8 on dpdesk's engine; write its section of docs/evaluation.md.

Run from the repository root:

    .venv/bin/python benchmarks/eval_noninteractive.py            # full: docs/evaluation.md + docs/figures/nonint_*.png
    .venv/bin/python benchmarks/eval_noninteractive.py --quick    # pipeline check: small sizes, into a temp dir

``--out DIR`` writes ``DIR/evaluation.md`` and ``DIR/figures/`` instead of ``docs/``.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluation import nonint_experiments as X
from evaluation import nonint_figures as F
from evaluation.sections import DOCS, add_write_docs, write_section

SECTION = "noninteractive-release"
ALPHAS = [1, 0.5, 0.1, 0.05, 0.02, 0.01, 0.005]
DELTA = 0.05


def _f(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}g}"


def run(quick: bool) -> dict:
    t0 = time.perf_counter()
    n = 10**5 if quick else 10**6
    data = X.census_like(n, seed=0)
    income = data.sum(axis=0)
    res: dict = {"n": n, "quick": quick}
    res["1d"] = X.interval_1d(
        income, [0.05] if quick else ALPHAS, 5 if quick else 100, 200 if quick else 1000, DELTA, seed=10
    )
    res["2d"] = X.interval_2d(data, 0.05, 10**4 if quick else 10**6, DELTA, seed=20)
    res["parity"] = X.parity(
        10**4 if quick else 10**5, (0, 0, 0, 0, 0, 1, 1), 0.01, seed=30, runs=50 if quick else 1000
    )
    res["max"] = X.max_compare([1000, 10000], [0.05, 1.0, 10.0], 5, seed=40)
    res["privacy"] = X.seed_privacy(20, 2, 0.1, 2 if quick else 3, 20 if quick else 300, 80, seed=50)
    res["stream"] = X.stream(income, 0.05, DELTA, 40 if quick else 300, 10 if quick else 200, seed=60)
    res["seconds"] = time.perf_counter() - t0
    return res


def markdown(res: dict, figs: str) -> str:
    quick = res["quick"]
    r1, r2, rp, rm, rs = res["1d"], res["2d"], res["parity"], res["max"], res["stream"]
    n = r1["n"]
    a = r1["rows"][0.05]
    mode = "QUICK (pipeline check, small sizes — not the reported numbers)" if quick else "full"
    out = [
        "## Non-interactive release (Xiao–Xiong–Yuan seed §8) on dpdesk's engine",
        "",
        f"Mode: **{mode}**. Regenerate with `.venv/bin/python benchmarks/eval_noninteractive.py --write-docs` "
        f"(this run took {res['seconds']:.0f} s); `--quick` checks the pipeline into a temporary directory. "
        "Every number below was measured by that command on dpdesk's engine (`dpdesk.engine.partition`, "
        "`dpdesk.engine.selection.mechanism`); nothing is copied from the paper except where a row says *seed*.",
        "",
        "**Setting.** The seed's IPUMS extract is not available: a synthetic census-like table of "
        f"n = {n:,} records over age (80 values) × income (100 brackets) stands in (`census_like` in "
        "`benchmarks/evaluation/nonint_experiments.py`, fixed seed). dpdesk works in **counts** (a record added or "
        "removed changes one cell by 1), not the seed's fractions of a public n; releases add discrete-Laplace "
        "noise of scale coverage/α to every released count (the engine's seeded simulation sampler here; OpenDP in "
        "the product) and charge every cell α in all (paper Thm 5.4).",
        "",
        "**Error metrics.** *error* = answer − true count (records); *mean |error|* = average of |error| over every "
        "(release, query) pair; *max |error|* = the largest seen; *mean signed error* = average of the signed errors; "
        "*coverage* = fraction of answers within the stated half-width; *×10⁻⁶* = records / n for n = 10⁶ (the seed's "
        "unit). Queries are *uniformly generated*: both interval ends drawn uniformly from the domain, then sorted.",
        "",
        "### 1-D intervals (§8.1.1: income, β = 100, α = 0.05, δ = 0.05)",
        "",
        "| quantity | value |",
        "|---|---|",
        f"| seed's bound on n (Thm 5.2, ε = 0.02 of n) | n ≥ {100 * math.log(100 / DELTA) / (0.05 * 0.02):,.0f} |",
        f"| seed's simultaneous bound in counts, β·ln(β/δ)/α (every query at once) | ±{a['seed_bound']:,.0f} |",
        f"| the same for dpdesk's discrete noise, β·b·ln(2β/((1+p)δ)) — *simultaneous* | ±{a['simultaneous']:,.0f} |",
        f"| dpdesk *per query* (exact posterior), widest interval, 95 % | ±{a['worst_halfwidth']:,.0f} |",
        f"| measured mean \\|error\\| (unclipped / seed's clipped form) | {a['mean_abs']:.1f} / {a['mean_abs_seed']:.1f} records |",
        f"| measured max \\|error\\| over {r1['versions'] * r1['queries']:,} queries | {a['max_abs']:.0f} records |",
        f"| coverage of each query's own 95 % half-width | {a['coverage']:.4f} |",
        "",
        f"![1-D release]({figs}/nonint_1d.png)",
        "",
        "The simultaneous bound holds for all 0/1 queries at once and grows like β·ln β; the per-query half-width "
        f"is {a['simultaneous'] / a['worst_halfwidth']:.0f}× narrower for the widest interval and is what dpdesk's "
        "engine uses when a later request is assessed against the released rows.",
        "",
        "### Influence of α (Table 2)",
        "",
        "| α | mean \\|error\\| (×10⁻⁶) | max \\|error\\| (×10⁻⁶) | mean signed error (×10⁻⁶) | seed: average | seed: max | coverage |",
        "|---|---|---|---|---|---|---|",
    ]
    for al in sorted(r1["rows"], reverse=True):
        row = r1["rows"][al]
        paper = F.PAPER_TABLE2.get(al, (float("nan"), float("nan")))
        s = 1e6 / n
        out.append(
            f"| {al} | {_f(row['mean_abs'] * s)} | {_f(row['max_abs'] * s)} | {_f(row['mean_signed'] * s)} | "
            f"{paper[0]} | {paper[1]} | {row['coverage']:.4f} |"
        )
    ratio = a["mean_abs"] * 1e6 / n / F.PAPER_TABLE2[0.05][0]
    signed = abs(a["mean_signed"]) * 1e6 / n
    mx = a["max_abs"] * 1e6 / n / F.PAPER_TABLE2[0.05][1]
    ratios = [
        r1["rows"][al]["mean_abs"] * 1e6 / n / F.PAPER_TABLE2[al][0]
        for al in r1["rows"]
        if al in F.PAPER_TABLE2
    ]
    out += [
        "",
        f"![Table 2]({figs}/nonint_table2.png)",
        "",
        f"At α = 0.05 the mechanism's mean |error| is {ratio:.1f}× the seed's \"average error\" "
        f"({min(ratios):.1f}–{max(ratios):.1f}× over the α measured), while the maxima are within a factor "
        f"{max(mx, 1 / mx):.1f}. A uniformly random interval covers a third of the 100 cells on average, so its error "
        "is a sum of ~34 discrete-Laplace(20) noises (sd ≈ 165, mean |error| ≈ 125): 12 records cannot be a mean "
        f"|error| of this mechanism. The mean *signed* error here is {signed:.3g} ×10⁻⁶ in magnitude, "
        + (
            "the same order as the seed's figure: it may have averaged signed errors."
            if 0.33 < signed / 12 < 3
            else "which does not explain the seed's figure either."
        ),
        "",
        "### 2-D rectangles (§8.1.2: age × income, 8 000 cells, α = 0.05)",
        "",
        "| release | counts released | mean \\|error\\| | ×10⁻⁶ of n | max \\|error\\| | per query, widest (the whole table), 95 % |",
        "|---|---|---|---|---|---|",
    ]
    for name, label in (("cells", "every cell (the seed's)"), ("tree", "tree over income (b = 2) × age")):
        row = r2[name]
        out.append(
            f"| {label} | {row['rows']:,} | {row['mean_abs']:.0f} | {_f(row['mean_abs'] * 1e6 / r2['n'])} | "
            f"{row['max_abs']:.0f} | ±{row['worst_halfwidth']:.0f} |"
        )
    out += [
        "",
        f"![2-D release]({figs}/nonint_2d.png)",
        "",
        f"The seed needs n ≥ {r2['seed_bound_n']:.3g} for its bound and so multiplies every cell by {r2['blowup']}. "
        f"That makes each person {r2['blowup']} records: the release is α = 0.05 per record but "
        f"{r2['blowup'] * r2['alpha']:g} per person. Measured the seed's way (×{r2['blowup']}, errors over 2·10⁸) the mean "
        f"|error| is {_f(r2['blowup_mean_abs_fraction'] * 1e6)} ×10⁻⁶ (seed: 7.0) — small only because of that "
        "200-fold privacy loss. At the real n and α the error is the row above. For random rectangles over a 100-value "
        "attribute the tree does not beat the cells (its noise is split over 8 levels); it wins on the widest ranges.",
        "",
        "### Parity (§8.2: 8 binary attributes, hidden vector 0000011, α = 0.01)",
        "",
        f"Released cell table: noise rate η = {rp['eta']:.4f} (seed: 0.0655) — the share of released (clipped) records "
        "in cells that break the parity rule. The seed's learning algorithm (32 samples, elimination, one surviving "
        f"sample per run, {1000 if not quick else 50} runs per bit) answers 1 with frequency "
        + ", ".join(f"{v:.2f}" for v in rp["learned"])
        + f" for bits 1–7 (theory ½ + ½(1−2η)^{rp['d'] - 2} = {rp['theory']:.3f} for a correct answer).",
        "",
        "dpdesk answers the question directly with **parity queries** (linear, sensitivity 1, `parity(b6, b7, b8)`): "
        "the count of records inconsistent with a hypothesis v is a parity query over v's bits and b8. From the same "
        f"release, the true v scores {rp['parity_true'][0]:.0f} (95 % interval [{rp['parity_true'][1]:.0f}, "
        f"{rp['parity_true'][2]:.0f}]) while every one of the 126 wrong hypotheses has a lower end ≥ "
        f"{rp['parity_wrong_low']:.0f}; the smallest estimate picks {''.join(map(str, rp['parity_best']))}.",
        "",
        f"![parity]({figs}/nonint_parity.png)",
        "",
        "### Max (§8.3: rounded normal, mean 50, variance 20, over 1..100; window [max − 4, max])",
        "",
        "| n | α | mechanism | Pr(window) | Pr(exact max) | Pr(above max) | E\\|output − max\\| |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in sorted(rm):
        for al in (0.05, 1.0, 10.0):
            for name, label in (("seed", "seed §4.1.2"), ("rnm", "report-noisy-max")):
                v = rm[size][(name, al)]
                out.append(
                    f"| {size} | {al} | {label} | {v['window']:.4f} | {v['exact']:.4f} | {v['above']:.4f} | {v['mae']:.1f} |"
                )
    pr = res["privacy"]
    out += [
        "",
        f"![max]({figs}/nonint_max.png)",
        "",
        "The seed reports Pr(window) = 0.1523 (n = 10³) and 0.9116 (n = 10⁴). Its mechanism never moves probability "
        "above max + ε, so the ~30 untouched values keep 1/100 each and Pr(window) ≤ 0.7 whatever n; read with r⁻ = "
        "everything outside r⁺ (its Lemma 4.2) the mass collects at the mode instead. Neither reading gives 0.91. "
        "Report-noisy-max (dpdesk's, α-DP) puts most of its mass *above* the true max at these α: with one or two "
        "records at the top, an α-DP mechanism cannot tell the max from an empty value above it (adding one record "
        "there may change any output probability by at most e^α). Its public guarantee is the one dpdesk shows: "
        "with probability 1−δ at most (2/α)·ln(k/δ) records lie above the released value.",
        "",
        "**The seed's mechanism is not α-DP**, shown by exact output probabilities on neighbouring tables "
        "(20 values, ε = 2, α = 0.1, records processed in ascending order):",
        "",
        "| window r⁻ anchored at | all tables of ≤ 3 records + 1 | random tables up to 80 records + 1 | e^α bound |",
        "|---|---|---|---|",
    ]
    for anchor, label in (("data", "the table's minimum (as written)"), ("domain", "the domain minimum")):
        s, r = pr[anchor]["small"], pr[anchor]["random"]
        out.append(f"| {label} | log-ratio {s[0]:.3f} | log-ratio {r[0]:.3f} | 0.1 |")
    out += [
        "",
        "Anchored at the data, a record added below the minimum widens r⁻ for every other record, so the log-ratio "
        "grows with the table; anchored at the domain it still exceeds α because each record's move depends on the "
        "moves before it. dpdesk implements it only here, in the benchmark.",
        "",
        "### Requests answered from a release (stream coverage)",
        "",
        "After one release of income at α = 0.05, interval requests with ε = U(0.6, 1.4) × the query's own exact "
        "95 % half-width are assessed by the engine (`assess`, History built from the released rows, budget spent). "
        "The guarantee predicts *infer* exactly when Pr(|error| ≤ ε) ≥ 0.95; the inferred answers are then checked "
        "over independent releases.",
        "",
        "| release | rows | requests | inferred | predicted | decisions agreeing | coverage of ±ε | claimed (mean) | assess per request |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("cells", "tree"):
        v = rs[name]
        out.append(
            f"| {name} | {v['rows']} | {v['requests']} × {v['reps']} releases | {v['inferred']:.3f} | {v['predicted']:.3f} | "
            f"{v['agree']:.3f} | {v['coverage']:.4f} | {v['claimed']:.4f} | {v['assess_ms']:.0f} ms |"
        )
    out += [
        "",
        "Coverage meets the claimed confidence (≥ 0.95; above it because ε ≥ the half-width for inferred requests). "
        "The few tree requests where the prediction and the engine differ sit at the edge (the grouped law's "
        "half-width is conservative by at most 2 % of a standard deviation, the engine's fft posterior is tighter).",
        "",
        "### Where the seed's numbers do not follow from its mechanism",
        "",
        f"- Table 2's \"average error\" is {min(ratios):.0f}–{max(ratios):.0f}× below the mechanism's mean |error| (above).",
        f"- §8.1.2's ×200 blow-up multiplies each person's privacy loss by 200 (α = 0.05 becomes {r2['blowup'] * r2['alpha']:g}).",
        "- §8.3's Pr(window) = 0.9116 is out of reach of §4.1.2 as written (≤ 0.7), and §4.1.2 is not α-DP.",
        "- Thm 4.2's usefulness bound is simultaneous and grows like β·ln β; the per-query half-widths above are "
        "what a curator can promise for each request, and they are exact.",
    ]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    add_write_docs(ap, "docs/evaluation.md's section and docs/figures/nonint_*.png")
    args = ap.parse_args(argv)
    out = args.out or (
        DOCS if args.write_docs and not args.quick else Path(tempfile.mkdtemp(prefix="dpdesk-nonint-"))
    )
    figs = out / "figures"
    figs.mkdir(parents=True, exist_ok=True)
    res = run(args.quick)
    F.figure_1d(figs / "nonint_1d.png", res["1d"], 0.05, 0.02 * res["1d"]["n"])
    F.figure_table2(figs / "nonint_table2.png", res["1d"])
    F.figure_2d(figs / "nonint_2d.png", res["2d"])
    F.figure_parity(figs / "nonint_parity.png", res["parity"])
    F.figure_max(figs / "nonint_max.png", res["max"], 0.05, 5)
    write_section(out / "evaluation.md", SECTION, markdown(res, "figures"))
    print(
        f"wrote section {SECTION!r} of {out / 'evaluation.md'} and {figs}/nonint_*.png in {res['seconds']:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
