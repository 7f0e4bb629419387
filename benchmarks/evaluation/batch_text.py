"""The prose of the batch section (docs/evaluation.md ``batch-starved``), apart from its tables."""

from __future__ import annotations

import numpy as np


def intro(B, k, quick, seconds, jobs, reps, tuning, looked_at, tuned) -> list[str]:
    mode = "QUICK (pipeline check, not results)" if quick else "full"
    out = [
        "## Answering the queue: batch plans where the budget is scarce (issue 19)\n",
        f"Mode: **{mode}**. Regenerate with `.venv/bin/python benchmarks/eval_all.py --batch --write-docs` ({jobs} worker "
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
        'answers, not which requests are answered. The "datasets" differ only in their request streams, '
        "and the repetitions are different streams.\n",
    ]
    tune = "; ".join(
        f"`{w}` share {sh:g} → {n}" for w, v in tuned.items() for sh, n in v.items() if n is not None
    )
    out.append(
        f"Streams. Tuning: repetition {', '.join(map(str, tuning))}. The look-ahead's share of the room was "
        f"fixed at {B.SHARE:g} — spend the room of cells nobody has paid for at once, as the whole-stream "
        f"reference below does — on what the tuning stream gave (dpdesk batch answered: {tune}); other "
        "shares were not finished on the shared machine before the headline had to start, so the share is "
        f"a choice, not an optimum. Repetitions {looked_at[0]}–{looked_at[-1]} were the previous headline, "
        "looked at before the look-ahead was written. The `eq37` headline below is repetitions "
        f"{', '.join(map(str, reps['eq37']))}, held out: first run after the share was fixed. The `ranges` "
        f"headline is streams {', '.join(map(str, reps['ranges']))} (how the look-ahead's queue weight was "
        "chosen, and on which streams: below). `dpdesk today` keeps the "
        "policy fixed earlier in the paper evaluation (floor 0.1, cap 0.5); the batch systems run without "
        "a spend policy.\n"
    )
    out.append(
        "Calibration is hits H against the sum C of the confidences each answer claimed: an inferred answer "
        "its posterior mass at ±ε, a fresh one its exact mass, a fused one the fused posterior's. The "
        "spread is the standard error over streams, each stream with its own noise. It is not a binomial "
        "formula, because answers inferred from the same history share its noise and are not "
        "independent trials.\n"
    )
    return out


def analysis(means, workloads, k, reps_of) -> list[str]:
    out = []
    ratios = {}
    for w in workloads:
        b, p = means.get((w, "dpdesk batch")), means.get((w, "paper inference"))
        if b is None or p is None:
            continue
        ratios[w] = b / p
        t, a = means.get((w, "dpdesk today"), float("nan")), means.get((w, "batch, no look-ahead"))
        alone = "" if a is None else f"each batch planned alone ×{a / p:.2f}; "
        out.append(
            f"- `{w}` (streams {', '.join(map(str, reps_of[w]))}): dpdesk batch answers ×{b / p:.2f} as many "
            f"requests as the paper's inference system (ratio of the held-out means; {alone}dpdesk today "
            f"×{t / p:.2f})."
        )
    out.append("")
    met = [w for w, r in ratios.items() if r >= 2]
    short = [w for w, r in ratios.items() if r < 2]
    if met:
        out.append(
            f"The 2× target is met on {', '.join(f'`{w}`' for w in met)} (ratio of the held-out means)."
        )
    if short:
        out.append(
            f"It is **not met** on {', '.join(f'`{w}`' for w in short)}. What bounds it: a stream has {k} "
            f"requests, so wherever the paper's system answers more than {k // 2}, 2× is impossible for "
            "any system. Beyond that, the *any DP* column caps what any mechanism within the total can "
            "answer: requests with 2ε below about twice their sensitivity cannot be met at δ = 0.2 by "
            "anything. The largest possible ratio on each stream is that bound over the paper's count. "
            "Where the paper's system answers little (one strict early request on a wide range spends the "
            "whole cube), the ratio is large for every system. The honest target is the gap to the bound. "
            "What is left there has three causes. (1) Requests whose accuracy a strategy serving the whole "
            "workload cannot give at the total: a strategy shares each cell's budget across many "
            "queries, so it answers each less precisely than a fresh answer spending the whole total on "
            "that one query. (2) The look-ahead is all or nothing, decided once, at the first batch that "
            "finds unspent cells. On `ranges` it picks HDMM's marginals (`ahead: marginals`), which would "
            "meet 870–900 of a stream's requests (table above). Judged by its first batch alone, it was "
            "dropped wherever the plain plan answered one or two more of those 20 (requests with 2ε of a "
            "few units on wide ranges need a fresh answer at nearly the whole budget of their cells); the "
            "plain plan then charged the cells and no later batch found them unspent (streams 3, 4 and 5 "
            "in the tuning table). Judged for the queue it is kept there, at the price of those one or two "
            "strict requests. On the held-out `ranges` streams dpdesk batch answered at or above the "
            "whole-stream reference on every stream (table above), so what is left to the bound is (1) "
            "and (3). (3) The look-ahead's strategies are evenly "
            "weighted; HDMM would optimise "
            "the weights for the workload."
        )
    out.append("")
    out.append(
        "What moved the ratio is looking ahead. Planning each batch alone buys, for 20 requests, exactly what "
        "they need, and the next batch on the same cells buys again. A row's precision grows as α² while its "
        "cost grows as α, so many small purchases of a cell carry far less information than one large one. "
        "The look-ahead measures, once, where no row has been bought yet, the strategy that serves the most "
        "requests seen so far (the queue's past requests are public), at the share of the room fixed on the "
        "tuning stream. Each batch is then planned on top of it. Every request reported answered passed the "
        "exact-posterior check, and no plan passed the total. The look-ahead is kept when it serves the queue "
        "at least as well as the plain plan (above). The previous headline (each batch planned alone, "
        "streams 1–3) was ×1.72 on eq37 and ×1.41 on ranges; the one before this (the look-ahead judged by its "
        "first batch, ranges streams 4–6) was ×1.28 on ranges (646, 580, 908 answered; under the queue rule "
        "the same streams answer 876, 888, 908, tuning table).\n"
    )
    return out


def paper_text(results, P, calibration) -> list[str]:
    rows = {key: o for key, (o, _s) in results.items() if key[0] == "paper"}
    if not rows:
        return []
    out = [
        "### The paper's own settings: batch answering against one by one\n",
        "Same streams and settings as the paper section above (repetitions "
        f"{', '.join(map(str, sorted({k[2] for k in rows})))}): bounded = total 1, empty history, "
        "2ε ~ U[1, 1000]; unbounded = no total, 2ε ~ U[50, 1000], the 0.3-DP tree over cells 1–256 released "
        "first. *dpdesk one by one* is today's rule without a spend policy (fusion on). *dpdesk batch* is the "
        "look-ahead plan per batch of 20, also without a policy. In the unbounded setting every system "
        "answers every request, so the comparison is the final system cost ᾱ (lower is better). The tree "
        "has charged every cell the requests touch, so the look-ahead (unspent cells only) does nothing "
        "there and each batch is planned on its own.\n",
        "| setting | data | system | answered per stream | ᾱ per stream | H | C | H − C per stream (mean ± se) |",
        "|---|---|---|---|---|---:|---:|---|",
    ]
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
            out.append(
                f"| {setting} | {ds_name} | {s} | {', '.join(str(o.answered) for o in os_)} | "
                f"{', '.join(f'{o.system_cost:.3f}' for o in os_)} | {sum(o.hits for o in os_)} | "
                f"{sum(o.claimed for o in os_):.1f} | {calibration(os_)} |"
            )
        if "dpdesk batch" in per and "dpdesk one by one" in per:
            b, o = per["dpdesk batch"], per["dpdesk one by one"]
            worse_n = [reps[i] for i in range(len(b)) if b[i].answered < o[i].answered]
            same_n = [i for i in range(len(b)) if b[i].answered == o[i].answered]
            worse_c = [reps[i] for i in same_n if b[i].system_cost > o[i].system_cost * (1 + 1e-9)]
            # above by less than a ten-thousandth of one by one's cost: the price of the top-ups (see below)
            hair = [
                reps[i]
                for i in same_n
                if o[i].system_cost * (1 + 1e-9) < b[i].system_cost <= o[i].system_cost * (1 + 1e-4)
            ]
            gaps = ", ".join(f"{b[i].system_cost - o[i].system_cost:+.2g}" for i in range(len(b)))
            if not worse_n and not worse_c:
                how = "never worse on any stream."
            elif not worse_n and set(worse_c) == set(hair):
                how = (
                    f"as many answered, and the final ᾱ above one by one's by less than 10⁻⁴ of it on stream(s) "
                    f"{hair} (the top-ups of borderline fused answers, below)."
                )
            else:
                how = f"**worse** on stream(s) {sorted(set(worse_n + worse_c))}."
            verdict.append(
                f"- {setting}, {ds_name}: batch answers {np.mean([x.answered for x in b]):.1f} vs "
                f"{np.mean([x.answered for x in o]):.1f} one by one, final ᾱ "
                f"{np.mean([x.system_cost for x in b]):.5f} vs {np.mean([x.system_cost for x in o]):.5f} "
                f"(batch − one by one per stream: {gaps}) — " + how
            )
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
        "digits above. Test: `tests/planning/test_stream_cost.py` (that stream's first two batches)."
    )
    out.append("")
    return out


def spread_text(spread) -> list[str]:
    """One stream's hits against its claims, judged by the same decisions replayed under fresh noise."""
    if not spread:
        return []
    h, c, m, sd = spread["hits"], spread["claimed"], spread["mean"], spread["sd"]
    n = int(spread.get("repeats", len(spread["replay_hits"])))
    return [
        f"One stream, judged by its own spread (`--spread N` reruns both replays below; `benchmarks/evaluation/batch_spread.py`). The "
        f"paper's unbounded stream 0 under dpdesk batch answered {spread['answered']} requests with hits "
        f"H = {h} against claims C = {c:.1f} (H − C = {h - c:+.1f}, {(h - c) / spread['answered']:+.4f} per "
        "answer). Under the flat prior no decision reads a released value, so replaying the same plans "
        f"under {n} fresh noise draws (initial tree included) keeps every claim and moves only the hits. "
        f"They averaged {m:.1f} (sd {sd:.1f} per draw; replays checked against the run itself to within "
        f"{spread['mismatch']:.1g}). The expected hits match C to within "
        f"{abs(m - c) / max(sd / n**0.5, 1e-12):.1f} standard errors, and the stream's own H lies "
        f"{(h - m) / max(sd, 1e-12):+.1f} sd from their mean. "
        + (
            "That stream's gap is within the spread that shared history noise produces: no sign of "
            "miscalibration.\n"
            if abs(m - c) <= 3 * sd / n**0.5 and abs(h - m) <= 3 * sd
            else "**That is outside the spread: a real miscalibration to look into.**\n"
        )
    ]


def paper_spread_text(sp) -> list[str]:
    """The paper system's starved eq37 stream, replayed: is its hits deficit more than shared noise?"""
    if not sp:
        return []
    h, c, m, sd, n = sp["hits"], sp["claimed"], sp["mean"], sp["sd"], int(sp["repeats"])
    se = sd / n**0.5
    verdict = (
        "calibrated: the deficit is the spread of one stream"
        if abs(m - c) <= 3 * se and abs(h - m) <= 3 * sd
        else "**outside the spread: a real miscalibration**"
    )
    return [
        f"The paper system's deficit on `eq37`, replayed the same way (its decisions do not read values either). "
        f"The table's z for `paper inference` uses the sd of three streams, and three streams cannot measure it. "
        f"Held-out stream {4}: {sp['answered']} answers, H = {h} against C = {c:.1f} ({(h - c) / sp['answered']:+.3f} "
        f"per answer). Under {n} fresh noise draws the hits averaged {m:.1f} with sd {sd:.1f} per stream: most "
        "of its answers are inferred from the same few early fresh rows, so they hit or miss together. "
        f"E[H] − C = {m - c:+.1f} ± {se:.1f}, and the stream's own H lies {(h - m) / sd:+.1f} sd from the mean: "
        f"{verdict}. A few hundredths per answer on one stream (such as −0.024) are within this spread. The "
        "z values of the table are not evidence either way; the replays are.\n"
    ]


def ranges_spread_text(sp) -> list[str]:
    """dpdesk batch on held-out ranges streams, replayed: hits against claims at their own spread."""
    if not sp:
        return []
    sps = sp if isinstance(sp, list) else [sp]
    out = []
    for one in sps:
        h, c, m, sd, n = one["hits"], one["claimed"], one["mean"], one["sd"], int(one["repeats"])
        se = sd / n**0.5
        if abs(m - c) <= 3 * se and abs(h - m) <= 3 * max(sd, 1e-12):
            verdict = "within the spread"
        elif m - c > 3 * se:  # more hits than claimed: the claims are too low here, not too high
            verdict = "hits above the claims beyond 3 se (claims conservative)"
        else:
            verdict = "**hits below the claims beyond the spread: overclaiming to look into**"
        out.append(
            f"| {one['stream']} | {one['answered']} | {h} | {c:.1f} | {h - c:+.1f} | {m:.1f} | {sd:.1f} | "
            f"{m - c:+.1f} ± {se:.1f} | {(h - m) / max(sd, 1e-12):+.1f} | {verdict} |"
        )
    streams = ",".join(str(one["stream"]) for one in sps)
    n = int(sps[0]["repeats"])
    hs, cs = sum(o["hits"] for o in sps), sum(o["claimed"] for o in sps)
    ms = sum(o["mean"] for o in sps)
    # streams are independent: the variances of their replayed hits add
    sd_sum = sum(o["sd"] ** 2 for o in sps) ** 0.5
    se_sum = (sum(o["sd"] ** 2 / int(o["repeats"]) for o in sps)) ** 0.5
    head = [
        f"dpdesk batch on `ranges`, held-out stream(s) {streams} (`--from-json docs/batch_starved.json "
        f"--replay-ranges {streams} --spread {n}`), replayed the same way: each stream's plans and claims are "
        f"kept and its hits redrawn under {n} fresh noise draws (replays checked against the run to within "
        f"{max(o['mismatch'] for o in sps):.1g}). *sd* is the spread of one stream's hits across draws; "
        "E[H] − C is the replays' mean less the claims, ± its standard error.\n",
        "| stream | answers | H | C | H − C | replayed H (mean) | sd | E[H] − C | own H (sd from mean) | |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    tail = [""]
    if len(sps) > 1:
        tail = [
            "",
            f"Together: H = {hs} against C = {cs:.1f} (H − C = {hs - cs:+.1f}); the replays' expected hits "
            f"{ms:.1f}, E[H] − C = {ms - cs:+.1f} ± {se_sum:.1f}; one set of streams' H strays from its mean "
            f"by sd {sd_sum:.1f}, so the observed H − C lies {(hs - ms) / max(sd_sum, 1e-12):+.1f} sd from "
            "what calibrated claims give.\n",
        ]
    return head + out + tail


def future_tuning_text(tune, future, tuning_streams, held_out) -> list[str]:
    """The choice of the look-ahead's queue weight on the ranges tuning streams (docs/batch_tune.json)."""
    if not tune:
        return []
    runs = [r for r in tune["runs"] if r["workload"] == "ranges"]
    weights = sorted({r["future"] for r in runs})
    streams = sorted({r["stream"] for r in runs})
    got = {(r["stream"], r["future"]): r for r in runs}
    out = [
        "How the look-ahead is judged on `ranges`. It used to be kept only when the first batch answered at "
        "least as many requests as the batch's plain plan. It is now judged for the queue "
        "(`dpdesk/engine/planning/ahead.py`, `queue_score`): a plan scores the batch's requests it answers plus "
        "FUTURE × the requests of the queue's workload (the requests seen so far and the batch: public "
        "inputs, a sample of what the queue asks) that its rows would meet *without having been bought for "
        "them* — rows that are a batch request's own query (fresh answers, jointly weighted requests) count "
        "for that request only, strategy rows (identity, marginals, trees) for every workload request they "
        "meet, by the search's reckoning. It is a leave-one-out estimate of how many of the next requests "
        "like these the history will serve; FUTURE = 1 stands for as many more requests to come as the "
        "queue has shown. FUTURE = 0 is the old rule. The weight was chosen on ranges streams "
        f"{streams[0]}–{streams[-1]}, all looked at before (0 tuned the share, 1–3 were an earlier headline, "
        "4–6 the previous held-out headline whose diagnosis led to this rule), with `eval_all.py --batch "
        "--tune` (`docs/batch_tune.json`), dpdesk batch answered:\n",
        "| stream | " + " | ".join(f"FUTURE = {w:g}" for w in weights) + " |",
        "|---:|" + "---:|" * len(weights),
    ]
    for st in streams:
        out.append(
            f"| {st} | "
            + " | ".join(str(got[(st, w)]["answered"]) if (st, w) in got else "—" for w in weights)
            + " |"
        )
    tot = {w: sum(got[(st, w)]["answered"] for st in streams if (st, w) in got) for w in weights}
    out.append("| total | " + " | ".join(str(tot[w]) for w in weights) + " |")
    out.append("")
    ties = [
        w
        for w in weights
        if w > 0
        and all(
            (got.get((st, w)) or {}).get("answered") == (got.get((st, future)) or {}).get("answered")
            for st in streams
        )
    ]
    why = (
        f" ({' and '.join(f'{w:g}' for w in ties)} tie on every tuning stream; {future:g} is the weight the "
        "rule's reading gives: as many more requests to come as the queue has shown)"
        if len(ties) > 1
        else ""
    )
    out.append(
        f"FUTURE = {future:g} was fixed from this table{why}; the `ranges` headline below is on streams "
        f"{', '.join(map(str, held_out))}, chosen before any of them was run and first run after FUTURE "
        "was fixed (`--from-json docs/batch_starved.json --held-out-ranges`). The rule changes nothing "
        "where the first batch already kept the look-ahead (tuning streams 0–2 and 6; `eq37` streams 4–6 "
        "answer 914, 916, 918 as before; the paper's unbounded stream ends at ᾱ 1.14134 as before). It "
        "changes the paper's bounded setting (below): 992 answered where the first-batch rule answered "
        "845, with one by one at 827.\n"
    )
    return out
