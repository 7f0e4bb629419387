"""Private posterior of proportions: the Dirichlet notes' experiments on dpdesk's engine.

Prints the ``dirichlet-posterior`` section of docs/evaluation.md; ``--write-docs`` replaces it there
(``--out F``: in the Markdown file F). Run from anywhere:

    .venv/bin/python benchmarks/dirichlet_posterior.py [--write-docs | --out F] [--quick]

Accuracy is the Hellinger distance between the released Dirichlet and the true posterior, averaged
*exactly* over each mechanism's output distribution (a sum over candidates, or over the Laplace noise
lattice; seeded Monte Carlo only for the Laplace baseline in 4+ dimensions). The notes report
quartiles of 1 000–10 000 runs; exact means need no seeds and carry no sampling error.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from dirichlet_baselines import LocalSensitivityExponential, NotesSmoothExponential  # noqa: E402
from evaluation.sections import DOCS, add_write_docs, write_section  # noqa: E402

from dpdesk.engine.dirichlet.accuracy import (  # noqa: E402
    expected_hellinger,
    expected_hellinger_noisy_size,
)
from dpdesk.engine.dirichlet.candidates import CandidateSet  # noqa: E402
from dpdesk.engine.dirichlet.hellinger import global_sensitivity, hellinger  # noqa: E402
from dpdesk.engine.dirichlet.mechanisms import (  # noqa: E402
    ExponentialGlobal,
    ExponentialSmooth,
    LaplaceCounts,
    discrete_laplace_pmf,
)
from dpdesk.engine.dirichlet.smooth import local_bound, smooth_bound  # noqa: E402
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler  # noqa: E402

EPS, DELTA = 0.8, 5e-4  # the notes' §4.3 settings
SIZE_SHARE = 0.25  # share of the budget spent on the noisy size when no size is public
NOTES_SS, NOTES_LAP = "notes' smooth*", "notes' Laplace*"
COMMAND = ".venv/bin/python benchmarks/dirichlet_posterior.py"


def uniform_counts(n: int, k: int) -> np.ndarray:
    c = np.full(k, n // k, dtype=np.int64)
    c[: n - c.sum()] += 1
    return c


# --- the notes' own Laplace baseline (fixed n, k-1 noisy counts): benchmark only ----------------------


def notes_laplace_expected(prior: np.ndarray, counts: np.ndarray, eps: float, samples: int = 40_000) -> float:
    """The notes' §3.1: floor(Lap(2/ε)) on the first k-1 counts, the last fixed by n, clipped to [0, n].

    Not private under add/remove (the released total is n); seeded Monte Carlo.
    """
    rng = np.random.default_rng(0)
    n = int(counts.sum())
    k = prior.size
    noisy = np.clip(counts[: k - 1] + np.floor(rng.laplace(0, 2 / eps, size=(samples, k - 1))), 0, n)
    scale = np.where(
        noisy.sum(axis=1, keepdims=True) > n, n / np.maximum(noisy.sum(axis=1, keepdims=True), 1), 1
    )
    noisy = noisy * scale  # keep the first k-1 within n so the last stays non-negative
    params = np.concatenate([noisy, n - noisy.sum(axis=1, keepdims=True)], axis=1) + prior
    return float(hellinger(prior + counts, params).mean())


# --- §3.4.1: the Beta(5,5) table ----------------------------------------------------------------------


def table_341() -> str:
    prior, counts, n = np.array([1.0, 1.0]), np.array([4, 4]), 8
    cs = CandidateSet(prior, n, n)
    params = cs.parameters()
    h = hellinger(prior + counts, params)
    steps = np.abs(params[:, 0] - 5).astype(int)
    s_local = float(hellinger(np.array([5.0, 5.0]), np.array([4.0, 6.0])))

    def by_step(p: np.ndarray) -> list[float]:
        return [float(p[steps == j].sum()) for j in range(5)]

    # the notes' columns, from their formulas
    w = np.exp(-EPS * h / s_local)
    notes_exp = by_step(w / w.sum())
    notes_lap = [math.exp(-EPS * j / 2) - math.exp(-EPS * (j + 1) / 2) for j in range(5)]
    # corrected under the notes' own model (n fixed, replace one record)
    w = np.exp(-EPS * h / (2 * s_local))
    fixed_exp = by_step(w / w.sum())
    y = np.arange(0, n + 1)
    z = np.arange(-200, 201)
    pmf = discrete_laplace_pmf(z, EPS)
    lap = np.array([pmf[np.clip(4 + z, 0, n) == v].sum() for v in y])  # clipped to [0, n], no mass dropped
    fixed_lap = [float(lap[np.abs(y - 4) == j].sum()) for j in range(5)]
    # dpdesk (add/remove; size 8 declared public)
    glob = ExponentialGlobal(cs, EPS)
    smooth = ExponentialSmooth(cs, EPS, DELTA)
    lapl = LaplaceCounts(prior, EPS)
    d_glob, d_smooth = by_step(glob.probabilities(counts)), by_step(smooth.probabilities(counts))

    def mean_h(p: list[float]) -> float:
        hs = [float(hellinger(np.array([5.0, 5.0]), np.array([5.0 - j, 5.0 + j]))) for j in range(5)]
        return sum(a * b for a, b in zip(p, hs))

    rows = [
        "| steps (H) | notes: exp. | notes: Laplace | fixed n, exp. ×½ | fixed n, Lap(1/ε) | dpdesk global | dpdesk smooth |",
        "|---|---|---|---|---|---|---|",
    ]
    for j in range(4, -1, -1):
        hj = abs(float(hellinger(np.array([5.0, 5.0]), np.array([5.0 - j, 5.0 + j]))))
        rows.append(
            f"| {j} ({hj:.4f}) | {notes_exp[j]:.4f} | {notes_lap[j]:.4f} | {fixed_exp[j]:.4f} | {fixed_lap[j]:.4f} "
            f"| {d_glob[j]:.4f} | {d_smooth[j]:.4f} |"
        )
    rows.append(
        f"| total | {sum(notes_exp):.4f} | {sum(notes_lap):.4f} | {sum(fixed_exp):.4f} | {sum(fixed_lap):.4f} "
        f"| {sum(d_glob):.4f} | {sum(d_smooth):.4f} |"
    )
    rows.append(
        f"| E[H] | {mean_h(notes_exp):.4f} | {mean_h(notes_lap) / sum(notes_lap):.4f}¹ | {mean_h(fixed_exp):.4f} "
        f"| {mean_h(fixed_lap):.4f} | {mean_h(d_glob):.4f} | {mean_h(d_smooth):.4f} |"
    )
    e_lap = expected_hellinger(lapl, counts)
    return "\n".join(
        [
            "### §3.4.1 The Beta(5,5) table, recomputed",
            "",
            "Prior Beta(1,1), `x = (1,1,0,0,1,1,0,0)` (posterior Beta(5,5)), ε = 0.8; probability of landing "
            "`j` steps from the true posterior. The first two columns are the notes' formulas, which reproduce "
            "their printed numbers to all digits shown (0.0431 0.0786 0.1583 0.3408 0.3792 and 0.0666 0.0993 "
            "0.1481 0.2210 0.3297). The next two fix the table's two errors under the notes' own model "
            "(n fixed, one record replaced): the exponential mechanism's factor 2 (`exp(−εH/(2S))`, with "
            f"the local sensitivity S = {s_local:.4f}, still not private), and one count needs Lap(1/ε), not "
            "Lap(2/ε) — drawn as discrete Laplace and clipped to [0, 8] so no mass is dropped. The last two "
            "are dpdesk's mechanisms under add/remove neighbours with the size 8 declared public: global "
            f"sensitivity Δ = {global_sensitivity(prior):.4f} (α-DP), smooth sensitivity ((α, δ) = (0.8, 5e-4)).",
            "",
            *rows,
            "",
            "¹ the notes' Laplace column drops 13.5 % of the mass (beyond 4 steps); E[H] is over what it keeps.",
            "",
            f"Corrected, the table reverses the notes' conclusion: Laplace lands on the true posterior with "
            f"probability {fixed_lap[0]:.3f} against {fixed_exp[0]:.3f} for the (non-private) local-sensitivity "
            f"exponential mechanism, and E[H] is {mean_h(fixed_lap):.3f} against {mean_h(fixed_exp):.3f}. "
            f"dpdesk's Laplace baseline (noise on both counts, add/remove, clipped at 0) has E[H] = {e_lap:.3f} "
            "here; its outputs need not sum to 10, so it has no step column.",
        ]
    )


# --- accuracy against n, k, data variance and prior ---------------------------------------------------


def mechanisms(
    prior: np.ndarray, counts: np.ndarray, *, noisy: bool = True, notes: bool = True
) -> dict[str, float]:
    """Exact E[H] of each mechanism at these counts, budget (0.8, 5e-4); size n declared public."""
    n = int(counts.sum())
    cs = CandidateSet.for_size(prior, n)
    out = {
        "laplace": expected_hellinger(LaplaceCounts(prior, EPS), counts),
        "global": expected_hellinger(ExponentialGlobal(cs, EPS), counts),
        "smooth": expected_hellinger(ExponentialSmooth(cs, EPS, DELTA), counts),
        "local*": expected_hellinger(LocalSensitivityExponential(cs, EPS), counts),
    }
    if noisy:
        out["global, noisy n"] = expected_hellinger_noisy_size(
            prior,
            counts,
            size_alpha=SIZE_SHARE * EPS,
            make=lambda c: ExponentialGlobal(c, (1 - SIZE_SHARE) * EPS),
            max_candidates=20_000,
        )
    if notes:
        out["notes' smooth*"] = expected_hellinger(NotesSmoothExponential(cs, EPS, DELTA), counts)
        out["notes' Laplace*"] = notes_laplace_expected(prior, counts, EPS)
    return out


def _table(header: str, rows: list[tuple[str, dict[str, float]]]) -> str:
    names = list(rows[0][1])
    lines = [f"| {header} | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label, vals in rows:
        best = min(v for k, v in vals.items() if not k.endswith("*"))
        cells = [
            (f"**{v:.3f}**" if v == best and not k.endswith("*") else f"{v:.3f}") for k, v in vals.items()
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _crossover(rows: list[tuple[int, dict[str, float]]], mech: str, rival: str) -> str:
    """The sizes where ``mech`` is more accurate than ``rival``, as runs of consecutive measured sizes."""
    sizes = [n for n, _ in rows]
    wins = [v[mech] < v[rival] for _, v in rows]
    if not any(wins):
        return "never"
    runs, i = [], 0
    while i < len(sizes):
        if wins[i]:
            j = i
            while j + 1 < len(sizes) and wins[j + 1]:
                j += 1
            runs.append(f"n = {sizes[i]}" if i == j else f"n = {sizes[i]}–{sizes[j]}")
            i = j + 1
        else:
            i += 1
    return "wins at " + ", ".join(runs)


def versus_n(k: int, sizes: list[int]) -> tuple[str, list[tuple[int, dict[str, float]]]]:
    prior = np.ones(k)
    rows = [(n, mechanisms(prior, uniform_counts(n, k), noisy=(k == 2))) for n in sizes]
    return _table("n", [(str(n), v) for n, v in rows]), rows


def versus_k(sizes: list[int]) -> str:
    rows = []
    for n in sizes:
        for k in (2, 3, 4, 5):
            vals = mechanisms(np.ones(k), uniform_counts(n, k), noisy=False, notes=False)
            vals["N"] = float(CandidateSet.for_size(np.ones(k), n).count)
            rows.append((f"n = {n}, k = {k}", vals))
    text = _table("table", [(lab, {k2: v for k2, v in d.items() if k2 != "N"}) for lab, d in rows])
    return text


def notes_section_42() -> str:
    rows = []
    for prior, n in (((7.0, 4.0), 300), ((7.0, 4.0), 500), ((7.0, 4.0, 5.0), 100), ((7.0, 4.0, 5.0), 150)):
        p = np.array(prior)
        rows.append((f"prior {prior}, n = {n}", mechanisms(p, uniform_counts(n, p.size), noisy=False)))
    b, d = rows[0][1], rows[2][1]
    return "\n".join(
        [
            _table("setting", rows),
            "",
            "The notes found their smooth mechanism close to the local-sensitivity one, both slightly better "
            f"than their Laplace. With their calibration that holds for Beta(7,4) (n = 300: {b[NOTES_SS]:.3f}, "
            f"{b['local*']:.3f}, {b[NOTES_LAP]:.3f}) but not for DL(7,4,5) (n = 100: {d[NOTES_SS]:.3f}, "
            f"{d['local*']:.3f}, {d[NOTES_LAP]:.3f}). dpdesk's Laplace, with noise of scale 1/ε on every count, "
            f"beats all of them ({b['laplace']:.3f} and {d['laplace']:.3f}), and the private smooth mechanism "
            f"of Theorem 4.1 ({b['smooth']:.3f} and {d['smooth']:.3f}) pays for its guarantee.",
        ]
    )


def versus_variance(n: int) -> tuple[str, list[tuple[str, dict[str, float]]]]:
    prior = np.ones(2)
    rows = []
    for share in (0.5, 0.65, 0.8, 0.9, 1.0):
        c1 = int(round(share * n))
        rows.append(
            (f"({c1}, {n - c1})", mechanisms(prior, np.array([c1, n - c1]), noisy=False, notes=False))
        )
    return _table(f"counts (n = {n})", rows), rows


def versus_prior(counts: np.ndarray) -> str:
    rows = []
    for a in (1, 2, 5, 10, 20, 50):
        prior = np.full(counts.size, float(a))
        vals = mechanisms(prior, counts, noisy=False, notes=False)
        vals["Δ"] = global_sensitivity(prior)
        rows.append((f"{a}·(1,…,1)", vals))
    return _table("prior", [(lab, {k: v for k, v in d.items() if k != "Δ"}) for lab, d in rows])


def versus_prior_and_variance() -> str:
    rows = []
    for a in (1, 5, 20):
        for counts in ((10, 10), (18, 2)):
            rows.append(
                (
                    f"prior {a}·(1,1), counts {counts}",
                    mechanisms(np.full(2, float(a)), np.array(counts), noisy=False, notes=False),
                )
            )
    return _table("setting", rows)


# --- privacy by enumeration, and speed ----------------------------------------------------------------


def privacy_summary() -> str:
    import itertools

    lines = []
    worst_g, worst_s, worst_l, worst_n = 0.0, 0.0, 0.0, 0.0
    for prior in ((1.0, 1.0), (0.5, 2.0), (1.0, 1.0, 1.0)):
        prior = np.array(prior)
        k = prior.size
        for m in (3, 8):
            cs = CandidateSet(prior, m, m)
            mechs = [
                ExponentialGlobal(cs, EPS),
                ExponentialSmooth(cs, EPS, DELTA),
                LocalSensitivityExponential(cs, EPS),
                NotesSmoothExponential(cs, EPS, DELTA),
            ]
            for c in itertools.product(range(m + 2 if k == 2 else 5), repeat=k):
                x = np.array(c)
                for i in range(k):
                    y = x + np.eye(k, dtype=np.int64)[i]
                    p = [m_.probabilities(x) for m_ in mechs]
                    q = [m_.probabilities(y) for m_ in mechs]
                    worst_g = max(worst_g, float(np.abs(np.log(p[0] / q[0])).max()))
                    e = math.exp(EPS)
                    worst_s = max(
                        worst_s,
                        float(np.maximum(0, p[1] - e * q[1]).sum()),
                        float(np.maximum(0, q[1] - e * p[1]).sum()),
                    )
                    worst_l = max(worst_l, float(np.abs(np.log(p[2] / q[2])).max()))
                    worst_n = max(
                        worst_n,
                        float(np.maximum(0, p[3] - e * q[3]).sum()),
                        float(np.maximum(0, q[3] - e * p[3]).sum()),
                    )
    leak = LocalSensitivityExponential(CandidateSet(np.array([1e-4, 3.0]), 150, 150), 0.5)
    px, py = leak.probabilities(np.array([1, 150])), leak.probabilities(np.array([2, 150]))
    ratio = float(np.abs(np.log(px / py)).max())
    lines += [
        "### Privacy by exact enumeration (add/remove, both directions)",
        "",
        "Priors Beta(1,1), Beta(0.5,2), DL(1,1,1); candidate sizes 3 and 8; every table in a small grid and "
        "each add-one neighbour, ε = 0.8, δ = 5e-4 (`tests/dirichlet/test_dirichlet_privacy.py` checks more).",
        "",
        "| mechanism | criterion | measured |",
        "|---|---|---|",
        f"| global sensitivity | max ln P_x(r)/P_y(r) ≤ ε = 0.8 | {worst_g:.4f} |",
        f"| smooth sensitivity (Thm 4.1) | Σ max(0, P_x − e^ε P_y) ≤ δ = 5e-4 | {worst_s:.2e} |",
        f"| notes' smooth calibration* | same | {worst_n:.2e} |",
        f"| local sensitivity* | max ln ratio | {worst_l:.4f} |",
        "",
        "On these grids no mechanism breaks ε = 0.8, not even the local-sensitivity one: small Beta cases "
        "do not show its leak. A table built for it does: prior (1e-4, 3), candidates of size 150, "
        f"ε = 0.5, tables (1, 150) and (2, 150) give a log-ratio of {ratio:.3f} > 0.5 — one record changes "
        "the local sensitivity 2.4-fold there. The notes' smooth calibration passed the δ check here, but "
        "it has no proof at (ε, δ) (docs/dirichlet.md §4); only the shipped calibration does.",
    ]
    return "\n".join(lines)


def speed() -> str:
    sampler = OpenDPSampler()
    sampler.select(np.zeros(2), 1.0)  # load OpenDP before timing
    rows = ["| release | candidates N | seconds |", "|---|---|---|"]
    for k, n in ((2, 1000), (3, 1000), (5, 10_000)):
        prior = np.ones(k)
        counts = uniform_counts(n, k)
        cs = CandidateSet.for_size(prior, n)
        for mech in (ExponentialGlobal(cs, EPS), ExponentialSmooth(cs, EPS, DELTA)):
            cs.parameters()
            t = time.perf_counter()
            mech.release(counts, sampler)
            rows.append(f"| {mech.name}, k = {k}, n = {n} | {cs.count} | {time.perf_counter() - t:.3f} |")
    t = time.perf_counter()
    smooth_bound(np.ones(3), uniform_counts(100_000, 3), 0.002)
    rows.append(f"| smooth bound alone, k = 3, n = 100 000, β = 0.002 | — | {time.perf_counter() - t:.3f} |")
    return "\n".join(rows)


# --- the section ----------------------------------------------------------------------------------------


def build(quick: bool = False) -> str:
    t0 = time.perf_counter()
    beta_sizes = (
        [2, 4, 8, 12, 16, 30] if quick else [1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 30, 50, 100, 200, 500, 1000]
    )
    dl_sizes = [3, 6, 15] if quick else [3, 6, 9, 12, 15, 18, 21, 30, 60]
    beta_table, beta_rows = versus_n(2, beta_sizes)
    dl_table, dl_rows = versus_n(3, dl_sizes)
    lb = local_bound(np.ones(2), np.array([50, 50]))
    beta100 = ExponentialSmooth(CandidateSet(np.ones(2), 100, 100), EPS, DELTA).calibration.beta
    sb = smooth_bound(np.ones(2), np.array([50, 50]), beta100)
    var_table, var_rows = versus_variance(20)
    deltas = ", ".join(f"{global_sensitivity(np.full(2, float(a))):.3f}" for a in (1, 2, 5, 10, 20, 50))
    v = dict(var_rows)
    u_, s_ = v["(10, 10)"], v["(18, 2)"]
    parts = [
        "## Private posterior of proportions (the Dirichlet notes, §3.4 and §4)",
        "",
        f"Regenerate: `{COMMAND}` (≈ 10–30 s on 2 cores). Mathematics and proofs: "
        "`docs/dirichlet.md`. Budget ε = 0.8, δ = 5e-4 throughout (the notes' §4.3); every number is an "
        "exact expectation of the Hellinger distance H(released, true posterior) — lower is better, the "
        "best private mechanism in bold. Columns:",
        "",
        "- `laplace` — dpdesk's baseline: discrete Laplace(1/ε) on all k counts, clipped at 0 (α-DP);",
        "- `global` — exponential mechanism, global sensitivity, size n declared public (α-DP);",
        f"- `global, noisy n` — the same after releasing the size with {SIZE_SHARE:.0%} of the budget "
        "(what dpdesk does when no size is public);",
        "- `smooth` — exponential mechanism, smooth sensitivity calibrated by Theorem 4.1, size public ((α, δ)-DP);",
        "- `local*` — the notes' §2.2, NOT PRIVATE (benchmark only);",
        "- `notes' smooth*` — the notes' §2.3 calibration (ε₀ = ε, their β): no valid (ε, δ) proof;",
        "- `notes' Laplace*` — the notes' baseline: floor(Lap(2/ε)) on k−1 counts, the last fixed by n: "
        "reveals n under add/remove.",
        "",
        table_341(),
        "",
        "### §4.2 The notes' settings: Beta(7,4) with n = 300, 500; DL(7,4,5) with n = 100, 150",
        "",
        "The notes do not say how their data were split; here the counts are as even as possible.",
        "",
        notes_section_42(),
        "",
        "### §4.3.1 Accuracy against the data size (uniform data)",
        "",
        "Beta(1,1):",
        "",
        beta_table,
        "",
        "DL(1,1,1):",
        "",
        dl_table,
        "",
        "**The notes' claim** — the exponential mechanism beats Laplace below n ≈ 12 (Beta(1,1)) and n ≈ 15 "
        "(DL(1,1,1)) — compared the notes' smooth calibration with the notes' Laplace. Measured here:",
        "",
        f"- notes' smooth* vs notes' Laplace*: Beta(1,1) {_crossover(beta_rows, NOTES_SS, NOTES_LAP)}; "
        f"DL(1,1,1) {_crossover(dl_rows, NOTES_SS, NOTES_LAP)};",
        f"- local* vs laplace: Beta(1,1) {_crossover(beta_rows, 'local*', 'laplace')}; "
        f"DL(1,1,1) {_crossover(dl_rows, 'local*', 'laplace')};",
        f"- smooth vs laplace: Beta(1,1) {_crossover(beta_rows, 'smooth', 'laplace')}; "
        f"DL(1,1,1) {_crossover(dl_rows, 'smooth', 'laplace')};",
        f"- global vs laplace: Beta(1,1) {_crossover(beta_rows, 'global', 'laplace')}; "
        f"DL(1,1,1) {_crossover(dl_rows, 'global', 'laplace')}.",
        "",
        "Under the notes' own model and calibration the claim reproduces: the notes' smooth calibration "
        "beats the notes' Laplace exactly below n = 12 for Beta(1,1) and below n = 15 for DL(1,1,1) (first "
        "line). For Beta it wins again at large n, where emptying a category takes about n/2 records, "
        "so the smooth bound falls to the local one. Neither of the two is private under add/remove.",
        "",
        "With private mechanisms the picture changes. The global-sensitivity mechanism beats Laplace only "
        "at the smallest Beta sizes and never for DL(1,1,1): its sensitivity is the worst case over all "
        f"tables (Δ = {global_sensitivity(np.ones(2)):.3f} for Beta(1,1): one record added to an empty "
        "category of a huge table), while the distances between useful candidates shrink like 1/√n and "
        "the candidate count grows like n^(k−1). The smooth mechanism does worse still at small n: at "
        f"(50, 50) the local bound is {lb:.3f}, but β = {beta100:.3f} lets tables tens of records away "
        f"pull the smooth bound to {sb:.3f}, and Theorem 4.1 spends half the budget on smoothness and "
        "doubles the sensitivity for the shift. Even the non-private local-sensitivity version loses to "
        "dpdesk's Laplace beyond the smallest sizes — the notes' comparison flattered it with a Laplace "
        "baseline at twice the needed noise.",
        "",
        "### §4.3.2 Accuracy against the dimension k (uniform data, prior all ones)",
        "",
        versus_k([12] if quick else [12, 30]),
        "",
        "### §4.3.3 Accuracy against data variance (Beta(1,1))",
        "",
        var_table,
        "",
        "The notes say that as the data become more uniform the exponential mechanism gets better and "
        f"Laplace worse. The first half holds: from (10, 10) to (18, 2) the local-sensitivity version goes {u_['local*']:.3f} → "
        f"{s_['local*']:.3f} and the global one {u_['global']:.3f} → {s_['global']:.3f}. The second does "
        f"not: Laplace is also more accurate on uniform data ({u_['laplace']:.3f} against {s_['laplace']:.3f} "
        "at (18, 2); at (20, 0) clipping at 0 pulls its noise toward the truth), so the ranking never changes.",
        "",
        "### §4.3.4–§4.3.5 Accuracy against the prior (data (5,5,5)) and prior with variance",
        "",
        versus_prior(np.array([5, 5, 5])),
        "",
        versus_prior_and_variance(),
        "",
        f"A stronger prior shrinks the global sensitivity (Δ = {deltas} for a = 1, 2, 5, 10, 20, 50 with "
        "k = 2) and brings every candidate closer to every other, so the exponential mechanisms improve "
        "steadily, as the notes say (§4.3.4) — but the prior damps Laplace's noise just as much, and the "
        "notes' claim that the exponential mechanism finally beats Laplace at large priors does not hold for "
        "any private mechanism measured here.",
        "",
        privacy_summary(),
        "",
        "### Speed of one release (OpenDP sampler, this machine)",
        "",
        "Candidate sets are capped at 100 000 (the resolution drops below n beyond that). The smooth bound "
        "searches every number of removed records and, by the concavity of docs/dirichlet.md §4, the best "
        "number of added ones by bisection: milliseconds even for β = 0.002 on 100 000 records.",
        "",
        "" if quick else speed(),
        "",
        f"_Generated in {time.perf_counter() - t0:.0f} s._",
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="a Markdown file whose section to replace")
    ap.add_argument("--quick", action="store_true", help="fewer sizes (checks the pipeline, not the numbers)")
    add_write_docs(ap, "the section 'dirichlet-posterior' of docs/evaluation.md")
    args = ap.parse_args(argv)
    text = build(quick=args.quick)
    print(text)
    out = args.out or (DOCS / "evaluation.md" if args.write_docs else None)
    if out is not None:
        write_section(out, "dirichlet-posterior", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
