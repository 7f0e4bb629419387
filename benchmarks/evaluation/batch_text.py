"""The prose of the batch section (docs/evaluation.md ``batch-starved``), apart from its tables."""

from __future__ import annotations

import numpy as np


def intro(B, k, quick, seconds, jobs, reps, tuning, looked_at, tuned) -> list[str]:
    mode = "QUICK (pipeline check, not results)" if quick else "full"
    out = ["## Answering the queue: batch plans where the budget is scarce (issue 19)\n",
           f"Mode: **{mode}**. Regenerate with `.venv/bin/python benchmarks/eval_all.py --batch` ({jobs} worker "
           f"processes; this run took {seconds:.0f} s while other jobs shared the 2 cores; "
           "`--from-json docs/batch_starved.json` rewrites the section from the saved run). Code: "
           "`benchmarks/evaluation/batch_eval.py` (systems, workloads), `batch_paper.py` (the paper's settings), "
           "`batch_report.py` and `batch_text.py` (this section).\n",
           f"Setting: total budget {B.TOTAL:g}, δ = {B.DELTA}, 2ε ~ U[{B.EPS2[0]:g}, {B.EPS2[1]:g}], {k} requests per "
           "stream arriving in batches of 20, over the demo cube (720 cells). Noise: continuous Laplace for "
           "every system (simulation sampler). Workloads: `eq37` — the paper's Eq. 37–38 requests (1–10 cells "
           "drawn with the skewed weights, so most mass sits on the first cells in C order); `ranges` — random "
           "1-D and 2-D ranges over the ordered attributes (age, hours) with the other attributes summed, so "
           "every query spreads over the whole cube (all 720 cells are charged by some request).\n",
           "Under the flat prior no decision reads the data: only the requests, their (ε, δ), the history's "
           "queries and budgets, and the per-cell costs. Which table the cube holds therefore changes the "
           "answers, not which requests are answered. The \"datasets\" differ only in their request streams, "
           "and the repetitions are different streams.\n"]
    tune = "; ".join(f"`{w}` share {sh:g} → {n}" for w, v in tuned.items() for sh, n in v.items() if n is not None)
    out.append(f"Streams. Tuning: repetition {', '.join(map(str, tuning))}. The look-ahead's share of the room was "
               f"fixed at {B.SHARE:g} — spend the room of cells nobody has paid for at once, as the whole-stream "
               f"reference below does — on what the tuning stream gave (dpdesk batch answered: {tune}); other "
               "shares were not finished on the shared machine before the headline had to start, so the share is "
               f"a choice, not an optimum. Repetitions {looked_at[0]}–{looked_at[-1]} were the previous headline, "
               "looked at before the look-ahead was written. The headline below is repetitions "
               f"{reps[0]}–{reps[-1]}, held out: first run after the share was fixed. `dpdesk today` keeps the "
               "policy fixed earlier in the paper evaluation (floor 0.1, cap 0.5); the batch systems run without "
               "a spend policy.\n")
    out.append("Calibration is hits H against the sum C of the confidences each answer claimed: an inferred answer "
               "its posterior mass at ±ε, a fresh one its exact mass, a fused one the fused posterior's. The "
               "spread is the standard error over streams, each stream with its own noise. It is not a binomial "
               "formula, because answers inferred from the same history share its noise and are not "
               "independent trials.\n")
    return out


def analysis(means, workloads, k) -> list[str]:
    out = []
    ratios = {}
    for w in workloads:
        b, p = means.get((w, "dpdesk batch")), means.get((w, "paper inference"))
        if b is None or p is None:
            continue
        ratios[w] = b / p
        t, a = means.get((w, "dpdesk today"), float("nan")), means.get((w, "batch, no look-ahead"))
        alone = "" if a is None else f"each batch planned alone ×{a / p:.2f}; "
        out.append(f"- `{w}`: dpdesk batch answers ×{b / p:.2f} as many requests as the paper's inference system "
                   f"(ratio of the held-out means; {alone}dpdesk today ×{t / p:.2f}).")
    out.append("")
    met = [w for w, r in ratios.items() if r >= 2]
    short = [w for w, r in ratios.items() if r < 2]
    if met:
        out.append(f"The 2× target is met on {', '.join(f'`{w}`' for w in met)} (ratio of the held-out means).")
    if short:
        out.append(f"It is **not met** on {', '.join(f'`{w}`' for w in short)}. What bounds it: a stream has {k} "
                   f"requests, so wherever the paper's system answers more than {k // 2}, 2× is impossible for "
                   "any system. Beyond that, the *any DP* column caps what any mechanism within the total can "
                   "answer: requests with 2ε below about twice their sensitivity cannot be met at δ = 0.2 by "
                   "anything. The largest possible ratio on each stream is that bound over the paper's count. "
                   "Where the paper's system answers little (one strict early request on a wide range spends the "
                   "whole cube), the ratio is large for every system. The honest target is the gap to the bound. "
                   "What is left there has three causes. (1) Requests whose accuracy a strategy serving the whole "
                   "workload cannot give at the total: a strategy shares each cell's budget across many "
                   "queries, so it answers each less precisely than a fresh answer spending the whole total on "
                   "that one query. (2) The look-ahead is all or nothing at the first batch. On `ranges` it "
                   "picks HDMM's marginals (`ahead: marginals`), which would meet 870–900 of a stream's requests "
                   "(table above), but it is kept only when its batch answers at least as many requests as the "
                   "batch's plain plan. On held-out streams 4 and 5 the plain plan of the first batch answered one "
                   "or two more of its 20 requests (those with 2ε of a few units on wide ranges need a fresh "
                   "answer at nearly the whole budget of their cells), so the look-ahead was dropped there; the "
                   "plain plan charged the cells and no later batch found them unspent. Those two streams are "
                   "then planned batch by batch, as before. On stream 6 it was kept and answered 908, near the "
                   "reference. Judging the look-ahead by the queue rather than by its first batch is the next "
                   "step (not made: this diagnosis came after the held-out run, and a rule chosen from it would "
                   "need fresh streams). (3) The look-ahead's strategies are evenly weighted; HDMM would optimise "
                   "the weights for the workload.")
    out.append("")
    out.append(
        "What moved the ratio is looking ahead. Planning each batch alone buys, for 20 requests, exactly what "
        "they need, and the next batch on the same cells buys again. A row's precision grows as α² while its "
        "cost grows as α, so many small purchases of a cell carry far less information than one large one. "
        "The look-ahead measures, once, where no row has been bought yet, the strategy that serves the most "
        "requests seen so far (the queue's past requests are public), at the share of the room fixed on the "
        "tuning stream. Each batch is then planned on top of it. Every request reported answered passed the "
        "exact-posterior check, and no plan passed the total. The look-ahead is kept only when its batch "
        "answers at least as many requests as the plain plan. The previous headline (each batch planned alone, "
        "streams 1–3) was ×1.72 on eq37 and ×1.41 on ranges.\n")
    return out


def paper_text(results, P, calibration) -> list[str]:
    rows = {key: o for key, (o, _s) in results.items() if key[0] == "paper"}
    if not rows:
        return []
    out = ["### The paper's own settings: batch answering against one by one\n",
           "Same streams and settings as the paper section above (repetitions "
           f"{', '.join(map(str, sorted({k[2] for k in rows})))}): bounded = total 1, empty history, "
           "2ε ~ U[1, 1000]; unbounded = no total, 2ε ~ U[50, 1000], the 0.3-DP tree over cells 1–256 released "
           "first. *dpdesk one by one* is today's rule without a spend policy (fusion on). *dpdesk batch* is the "
           "look-ahead plan per batch of 20, also without a policy. In the unbounded setting every system "
           "answers every request, so the comparison is the final system cost ᾱ (lower is better). The tree "
           "has charged every cell the requests touch, so the look-ahead (unspent cells only) does nothing "
           "there and each batch is planned on its own.\n",
           "| setting | data | system | answered per stream | ᾱ per stream | H | C | H − C per stream (mean ± se) |",
           "|---|---|---|---|---|---:|---:|---|"]
    names = sorted({k[1] for k in rows})
    verdict = []
    for name in names:
        ds_name, setting = name.split("/")
        reps = sorted({k[2] for k in rows if k[1] == name})
        per = {}
        for s in P.PAPER_SYSTEMS:
            os_ = [rows[("paper", name, r, s)] for r in reps if ("paper", name, r, s) in rows]
            if not os_:
                continue
            per[s] = os_
            out.append(f"| {setting} | {ds_name} | {s} | {', '.join(str(o.answered) for o in os_)} | "
                       f"{', '.join(f'{o.system_cost:.3f}' for o in os_)} | {sum(o.hits for o in os_)} | "
                       f"{sum(o.claimed for o in os_):.1f} | {calibration(os_)} |")
        if "dpdesk batch" in per and "dpdesk one by one" in per:
            b, o = per["dpdesk batch"], per["dpdesk one by one"]
            worse_n = [reps[i] for i in range(len(b)) if b[i].answered < o[i].answered]
            same_n = [i for i in range(len(b)) if b[i].answered == o[i].answered]
            worse_c = [reps[i] for i in same_n if b[i].system_cost > o[i].system_cost * (1 + 1e-9)]
            # above by less than a ten-thousandth of one by one's cost: the price of the top-ups (see below)
            hair = [reps[i] for i in same_n if o[i].system_cost * (1 + 1e-9) < b[i].system_cost
                    <= o[i].system_cost * (1 + 1e-4)]
            gaps = ", ".join(f"{b[i].system_cost - o[i].system_cost:+.2g}" for i in range(len(b)))
            if not worse_n and not worse_c:
                how = "never worse on any stream."
            elif not worse_n and set(worse_c) == set(hair):
                how = (f"as many answered, and the final ᾱ above one by one's by less than 10⁻⁴ of it on stream(s) "
                       f"{hair} (the top-ups of borderline fused answers, below).")
            else:
                how = f"**worse** on stream(s) {sorted(set(worse_n + worse_c))}."
            verdict.append(f"- {setting}, {ds_name}: batch answers {np.mean([x.answered for x in b]):.1f} vs "
                           f"{np.mean([x.answered for x in o]):.1f} one by one, final ᾱ "
                           f"{np.mean([x.system_cost for x in b]):.5f} vs {np.mean([x.system_cost for x in o]):.5f} "
                           f"(batch − one by one per stream: {gaps}) — " + how)
    out.append("")
    out += verdict
    out.append("")
    out.append(
        "Why the unbounded stream used to end dearer (1.158 against 1.141 before this was fixed), traced batch by "
        "batch on stream 0: it was not spending below the current maximum. In the second batch today's rules "
        "answer request 26 fused with history, at the smallest α whose fused posterior reaches 1 − δ (0.800001). "
        "A batch answers every request from its final history's exact posterior, which gave that request "
        "0.79997: another computation of nearly the same law, a hair short. The one-by-one candidate was then "
        "credited with 2 of the batch's 3 requests, and the planner bought the batch's jointly weighted requests "
        "instead (system cost 0.4825 against 0.4636). That 0.019 was never recovered; every later batch chose "
        "as one by one would have. The planner now raises the rows of such borderline requests a little "
        "(×1.001, then ×1.01, then ×1.05, within the total; `planner._top_up`) until the final history meets "
        "them, so one by one keeps what it answers at its turn. Its remaining price is the final ᾱ's last "
        "digits above. Test: `tests/planning/test_stream_cost.py` (that stream's first two batches).")
    out.append("")
    return out


def spread_text(spread) -> list[str]:
    """One stream's hits against its claims, judged by the same decisions replayed under fresh noise."""
    if not spread:
        return []
    h, c, m, sd = spread["hits"], spread["claimed"], spread["mean"], spread["sd"]
    n = int(spread.get("repeats", len(spread["replay_hits"])))
    return [f"One stream, judged by its own spread (`--spread N` reruns both replays below; `benchmarks/evaluation/batch_spread.py`). The "
            f"paper's unbounded stream 0 under dpdesk batch answered {spread['answered']} requests with hits "
            f"H = {h} against claims C = {c:.1f} (H − C = {h - c:+.1f}, {(h - c) / spread['answered']:+.4f} per "
            "answer). Under the flat prior no decision reads a released value, so replaying the same plans "
            f"under {n} fresh noise draws (initial tree included) keeps every claim and moves only the hits. "
            f"They averaged {m:.1f} (sd {sd:.1f} per draw; replays checked against the run itself to within "
            f"{spread['mismatch']:.1g}). The expected hits match C to within "
            f"{abs(m - c) / max(sd / n ** 0.5, 1e-12):.1f} standard errors, and the stream's own H lies "
            f"{(h - m) / max(sd, 1e-12):+.1f} sd from their mean. "
            + ("That stream's gap is within the spread that shared history noise produces: no sign of "
               "miscalibration.\n" if abs(m - c) <= 3 * sd / n ** 0.5 and abs(h - m) <= 3 * sd else
               "**That is outside the spread: a real miscalibration to look into.**\n")]


def paper_spread_text(sp) -> list[str]:
    """The paper system's starved eq37 stream, replayed: is its hits deficit more than shared noise?"""
    if not sp:
        return []
    h, c, m, sd, n = sp["hits"], sp["claimed"], sp["mean"], sp["sd"], int(sp["repeats"])
    se = sd / n ** 0.5
    verdict = ("calibrated: the deficit is the spread of one stream" if abs(m - c) <= 3 * se and abs(h - m) <= 3 * sd
               else "**outside the spread: a real miscalibration**")
    return [f"The paper system's deficit on `eq37`, replayed the same way (its decisions do not read values either). "
            f"The table's z for `paper inference` uses the sd of three streams, and three streams cannot measure it. "
            f"Held-out stream {4}: {sp['answered']} answers, H = {h} against C = {c:.1f} ({(h - c) / sp['answered']:+.3f} "
            f"per answer). Under {n} fresh noise draws the hits averaged {m:.1f} with sd {sd:.1f} per stream: most "
            "of its answers are inferred from the same few early fresh rows, so they hit or miss together. "
            f"E[H] − C = {m - c:+.1f} ± {se:.1f}, and the stream's own H lies {(h - m) / sd:+.1f} sd from the mean: "
            f"{verdict}. A few hundredths per answer on one stream (such as −0.024) are within this spread. The "
            "z values of the table are not evidence either way; the replays are.\n"]


def ranges_spread_text(sp) -> list[str]:
    """dpdesk batch on one held-out ranges stream, replayed: its hits against its claims at its own spread."""
    if not sp:
        return []
    h, c, m, sd, n = sp["hits"], sp["claimed"], sp["mean"], sp["sd"], int(sp["repeats"])
    se = sd / n ** 0.5
    verdict = ("within the spread: no sign of miscalibration" if abs(m - c) <= 3 * se and abs(h - m) <= 3 * max(sd, 1e-12)
               else "**outside the spread: a real miscalibration to look into**")
    return [f"dpdesk batch on `ranges`, held-out stream {sp['stream']} (`--from-json docs/batch_starved.json "
            f"--replay-ranges {sp['stream']} --spread {n}`), replayed the same way: {sp['answered']} answers, "
            f"H = {h} against C = {c:.1f}. Under {n} fresh noise draws the hits averaged {m:.1f} (sd {sd:.1f} per "
            f"draw; replays checked against the run to within {sp['mismatch']:.1g}): E[H] − C = {m - c:+.1f} ± "
            f"{se:.1f}, and the stream's own H lies {(h - m) / max(sd, 1e-12):+.1f} sd from the mean: {verdict}.\n"]
