"""The seed's §8 experiments (non-interactive release) on dpdesk's engine, and what dpdesk adds.

Every function returns plain numbers and arrays; :mod:`.nonint_figures` draws them and
``benchmarks/eval_noninteractive.py`` writes the markdown. Releases are drawn by the engine
(:func:`dpdesk.engine.partition.release.draw_release`) with its seeded simulation sampler (the same
discrete-Laplace law as the OpenDP sampler of real releases, reproducible here).

Error metrics (defined here, used throughout):

- *error* of a query answer: ``answer − true count`` (counts); *|error|* its absolute value;
- *mean |error|*: the average of |error| over every (release, query) pair — the expected absolute
  error of a uniformly random query of the class;
- *max |error|*: the largest |error| seen over all pairs;
- *mean signed error*: the average of the signed errors (shows bias; near 0 for unbiased answers);
- *fraction units*: a count divided by the table size ``n`` (the seed's normalised scale; ×10⁻⁶ at
  ``n = 10⁶``, so "12 ×10⁻⁶" means 12 records);
- *coverage*: the fraction of answers whose |error| is within the stated half-width.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpdesk.engine.answering.workflow import Request, Settings, assess
from dpdesk.engine.inference.history import History
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.partition.grouped import GroupedPosterior
from dpdesk.engine.partition.guarantee import query_terms, simultaneous_bound
from dpdesk.engine.partition.plan import cells_plan, tree_plan
from dpdesk.engine.partition.release import draw_release
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.schema import Schema
from dpdesk.engine.selection.mechanism import noisy_max_probabilities
from dpdesk.engine.selection.query import utilities_from_label_counts

from . import seed_max as SM


def numeric_schema(sizes: dict[str, int]) -> Schema:
    return Schema.from_dict(
        {
            "attributes": [
                {
                    "name": name,
                    "column": name,
                    "kind": "numeric",
                    "edges": list(range(k + 1)),
                    "labels": [str(i + 1) for i in range(k)],
                }
                for name, k in sizes.items()
            ]
        }
    )


def census_like(n: int, seed: int = 0) -> np.ndarray:
    """Counts over age (80 values) × income (100 values): a synthetic stand-in for the seed's IPUMS extract.

    Age follows a smooth working-age population curve; income given age is log-normal whose median
    rises to mid-career and falls after, binned into 100 equal-width brackets (truncated at the top).
    """
    rng = np.random.default_rng(seed)
    age = np.arange(80)
    pa = np.exp(-0.5 * ((age - 38) / 17.0) ** 2) + 0.15
    pa /= pa.sum()
    med = 18 + 30 * np.exp(-0.5 * ((age - 45) / 15.0) ** 2)
    edges = np.arange(101, dtype=float)
    from scipy.stats import lognorm

    p = np.empty((80, 100))
    for i, m in enumerate(med):
        cdf = lognorm.cdf(edges, s=0.6, scale=m)
        p[i] = pa[i] * np.diff(cdf) / (cdf[-1] - cdf[0])
    return rng.multinomial(n, (p / p.sum()).ravel()).reshape(80, 100)


def _interval_queries(rng: np.random.Generator, beta: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = rng.integers(0, beta, k), rng.integers(0, beta, k)
    return np.minimum(a, b), np.maximum(a, b)


def interval_1d(counts: np.ndarray, alphas, versions: int, queries: int, delta: float, seed: int) -> dict:
    """§8.1.1 and Table 2: cell releases of a 1-D histogram, uniformly random interval queries."""
    beta = counts.size
    n = int(counts.sum())
    plan = cells_plan(numeric_schema({"income": beta}))
    truth = np.concatenate([[0], np.cumsum(counts)])
    rows = {}
    for alpha in alphas:
        scale = 1.0 / alpha
        widths = np.array(
            [GroupedPosterior([1.0], [L], scale).halfwidth(delta)[0] for L in range(1, beta + 1)]
        )
        errs, errs_seed, cover = [], [], []
        first = None
        for v in range(versions):
            rel = draw_release(plan, alpha, counts, SeededSampler(seed + v), allow_insecure=True)
            y = rel.values[0].astype(float)
            first = y if first is None else first
            lo, hi = _interval_queries(np.random.default_rng([seed, v]), beta, queries)
            cy = np.concatenate([[0], np.cumsum(y)])
            cs = np.concatenate([[0], np.cumsum(np.maximum(y, 0))])
            t = truth[hi + 1] - truth[lo]
            e = cy[hi + 1] - cy[lo] - t
            errs.append(e)
            errs_seed.append(cs[hi + 1] - cs[lo] - t)
            cover.append(np.abs(e) <= widths[hi - lo])
        e, es = np.concatenate(errs), np.concatenate(errs_seed)
        rows[alpha] = dict(
            mean_abs=float(np.mean(np.abs(e))),
            max_abs=float(np.max(np.abs(e))),
            mean_signed=float(np.mean(e)),
            mean_abs_seed=float(np.mean(np.abs(es))),
            max_abs_seed=float(np.max(np.abs(es))),
            coverage=float(np.mean(np.concatenate(cover))),
            worst_halfwidth=float(widths[-1]),
            simultaneous=simultaneous_bound(plan, alpha, delta).halfwidth,
            seed_bound=beta * math.log(beta / delta) / alpha,
            released=first,
            errors=e[: queries * 10],
        )
    return dict(n=n, beta=beta, rows=rows, counts=counts, versions=versions, queries=queries)


def interval_2d(
    counts: np.ndarray, alpha: float, queries: int, delta: float, seed: int, blowup: int = 200
) -> dict:
    """§8.1.2: 2-D cell release (80 × 100), uniformly random rectangles; and an interval tree for comparison."""
    schema = numeric_schema({"age": counts.shape[0], "income": counts.shape[1]})
    n = int(counts.sum())
    rng = np.random.default_rng(seed)
    a0, a1 = _interval_queries(rng, counts.shape[0], queries)
    b0, b1 = _interval_queries(rng, counts.shape[1], queries)

    def rect_sums(x):
        c = np.zeros((x.shape[0] + 1, x.shape[1] + 1))
        c[1:, 1:] = x.cumsum(0).cumsum(1)
        return c[a1 + 1, b1 + 1] - c[a0, b1 + 1] - c[a1 + 1, b0] + c[a0, b0]

    truth = rect_sums(counts.astype(float))
    out = dict(n=n, cells=int(counts.size), alpha=alpha, blowup=blowup, counts=counts)
    for name, plan in (
        ("cells", cells_plan(schema)),
        ("tree", tree_plan(schema, "income", 2, cross=["age"])),
    ):
        t0 = time.perf_counter()
        rel = draw_release(plan, alpha, counts, SeededSampler(seed + 1), allow_insecure=True)
        t_rel = time.perf_counter() - t0
        xhat = rel.cell_estimates()
        e = rect_sums(xhat) - truth
        full = Query(schema.shape, terms=(Term(1.0, (np.ones(counts.shape[0]), np.ones(counts.shape[1]))),))
        u, m = query_terms(rel.solver, full)
        worst = GroupedPosterior(u, m, rel.scale).halfwidth(delta)[0]
        out[name] = dict(
            mean_abs=float(np.mean(np.abs(e))),
            max_abs=float(np.max(np.abs(e))),
            released=xhat,
            worst_halfwidth=worst,
            seconds=t_rel,
            rows=plan.n_rows,
            errors=e,
        )
    # the seed's run: every cell ×200 (n = 2·10⁸), same α per *record*; each person is 200 records
    big = draw_release(
        cells_plan(schema), alpha, counts * blowup, SeededSampler(seed + 2), allow_insecure=True
    )
    e_big = rect_sums(big.values[0].astype(float)) - blowup * truth
    out["blowup_mean_abs_fraction"] = float(np.mean(np.abs(e_big))) / (n * blowup)
    out["seed_bound_n"] = counts.size * math.log(counts.size / delta) / (alpha * 0.01)
    return out


def parity(
    n: int,
    hidden: tuple[int, ...],
    alpha: float,
    seed: int,
    runs: int = 1000,
    samples: int = 32,
    delta: float = 0.05,
) -> dict:
    """§8.2: uniform bits, the last the parity of the hidden vector's bits; a cell release; learning."""
    rng = np.random.default_rng(seed)
    d = len(hidden) + 1
    x = rng.integers(0, 2, (n, d - 1))
    label = (x @ np.array(hidden)) % 2
    idx = np.ravel_multi_index(tuple(np.column_stack([x, label]).T), (2,) * d)
    counts = np.bincount(idx, minlength=2**d).reshape((2,) * d)
    schema = Schema.from_dict(
        {
            "attributes": [
                {"name": f"b{i + 1}", "column": f"b{i + 1}", "kind": "categorical", "values": [0, 1]}
                for i in range(d)
            ]
        }
    )
    rel = draw_release(cells_plan(schema), alpha, counts, SeededSampler(seed + 1), allow_insecure=True)
    y = rel.values[0].reshape(-1).astype(float)
    clipped = np.maximum(y, 0)
    cells = np.array(list(np.ndindex(*(2,) * d)))
    consistent = (cells[:, :-1] @ np.array(hidden)) % 2 == cells[:, -1]
    eta = float(clipped[~consistent].sum() / clipped.sum())
    # seed §6.3: elimination on s samples from the released (clipped) table, 1000 runs per bit
    prob = clipped / clipped.sum()
    learned = np.zeros(d - 1)
    for j in range(d - 1):
        ones = 0
        for r in range(runs):
            while True:
                s = cells[rng.choice(cells.shape[0], samples, p=prob)].copy()
                for k in range(d - 1):
                    if k == j:
                        continue
                    rows = np.flatnonzero(s[:, k] == 1)
                    if rows.size == 0:
                        continue
                    piv = s[rows[0]].copy()
                    s = np.delete(s, rows[0], axis=0)
                    s[s[:, k] == 1] ^= piv
                left = s[s[:, :-1].any(axis=1)]
                if left.size:  # only column j can be non-zero now
                    break
            t = left[rng.integers(left.shape[0])]
            ones += int(t[-1])
        learned[j] = ones / runs
    # dpdesk: every hypothesis v' is a parity query (records inconsistent with it), answered from the release
    from dpdesk.engine.queries.parity import parity_query

    est = {}
    for mask in range(1, 2 ** (d - 1)):
        v = tuple((mask >> (d - 2 - i)) & 1 for i in range(d - 1))
        names = [f"b{i + 1}" for i in range(d - 1) if v[i]] + [f"b{d}"]
        e = rel.estimate(parity_query(schema, names))
        lo, hi, _ = e.interval(delta)
        est[v] = (e.estimate, lo, hi)
    true_v = tuple(hidden)
    wrong_low = min(lo for v, (_, lo, _) in est.items() if v != true_v)
    best = min(est, key=lambda v: est[v][0])
    return dict(
        n=n,
        d=d,
        hidden=true_v,
        alpha=alpha,
        eta=eta,
        learned=learned,
        released=y,
        counts=counts.reshape(-1),
        theory=0.5 + 0.5 * (1 - 2 * eta) ** (d - 2),
        parity_true=est[true_v],
        parity_wrong_low=wrong_low,
        parity_best=best,
    )


def _gauss_counts(n: int, seed: int, beta: int = 100, mean: float = 50.0, var: float = 20.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = np.clip(np.rint(rng.normal(mean, math.sqrt(var), n)), 1, beta).astype(int)
    return np.bincount(v - 1, minlength=beta)


def max_compare(sizes, alphas, eps: int, seed: int) -> dict:
    """§8.3: the seed's mechanism vs report-noisy-max on a rounded normal over 1..100."""
    out = {}
    for n in sizes:
        c = _gauss_counts(n, seed + n)
        top = int(np.flatnonzero(c)[-1])
        window = np.zeros(c.size, bool)
        window[max(0, top - eps + 1) : top + 1] = True
        vals = np.arange(c.size)
        row = {"counts": c, "max": top + 1}
        for alpha in alphas:
            ps = SM.seed_max_from_counts(c, eps, alpha, "data")
            pr = noisy_max_probabilities(utilities_from_label_counts("max", c), 2.0 / alpha)
            for name, p in (("seed", ps), ("rnm", pr)):
                row[(name, alpha)] = dict(
                    p=p,
                    window=float(p[window].sum()),
                    exact=float(p[top]),
                    above=float(p[top + 1 :].sum()),
                    mae=float(p @ np.abs(vals - top)),
                )
        out[n] = row
    return out


def seed_privacy(
    beta: int, eps: int, alpha: float, max_records: int, random_count: int, random_max: int, seed: int
) -> dict:
    """Exact output probabilities of the seed's mechanism on neighbouring tables: the worst log-ratio."""
    out = {}
    for anchor in ("data", "domain"):
        small = SM.worst_log_ratio(SM.all_small_tables(beta, max_records), beta, eps, alpha, anchor)
        rand = SM.worst_log_ratio(
            SM.random_tables(beta, random_count, random_max, seed), beta, eps, alpha, anchor
        )
        out[anchor] = dict(small=small, random=rand)
    return out


def stream(counts: np.ndarray, alpha: float, delta: float, requests: int, reps: int, seed: int) -> dict:
    """After one release, a stream of interval requests assessed by the engine against its rows.

    Each request asks for a random interval with ``ε = U(0.6, 1.4) × E_q`` (``E_q`` the query's own
    exact half-width). The guarantee predicts *infer* exactly when ``Pr(|error| ≤ ε) ≥ 1 − δ``; the
    engine's ``assess`` (History built from the released rows, fusion off, budget spent) decides. Then
    ``reps`` independent releases measure how often the inferred answers cover the truth.
    """
    beta = counts.size
    schema = numeric_schema({"income": beta})
    rng = np.random.default_rng(seed)
    lo, hi = _interval_queries(rng, beta, requests)
    out = {}
    for name, plan in (("cells", cells_plan(schema)), ("tree", tree_plan(schema, "income", 2))):
        rel0 = draw_release(plan, alpha, counts, SeededSampler(seed), allow_insecure=True)
        hist = History(schema.shape, rel0.history_rows())
        qs, eps, claim, pred = [], [], [], []
        for a, b in zip(lo, hi):
            f = np.zeros(beta)
            f[a : b + 1] = 1.0
            q = Query(schema.shape, terms=(Term(1.0, (f,)),))
            u, m = query_terms(rel0.solver, q)
            post = GroupedPosterior(u, m, rel0.scale)
            e = post.halfwidth(delta)[0] * rng.uniform(0.6, 1.4)
            qs.append(q)
            eps.append(e)
            claim.append(post.prob_within(e)[0])
            pred.append(claim[-1] >= 1 - delta)
        t0 = time.perf_counter()
        dec = [
            assess(hist, Request(str(i), q, e, delta), Settings(alpha, fusion=False)).decision
            for i, (q, e) in enumerate(zip(qs, eps))
        ]
        t_assess = (time.perf_counter() - t0) / len(qs)
        infer = np.array([d == "infer" for d in dec])
        pred = np.array(pred)
        dense = np.array([q.dense() for q in qs])
        truth = dense @ counts
        hits = []
        for r in range(reps):
            rel = draw_release(plan, alpha, counts, SeededSampler(seed + 1 + r), allow_insecure=True)
            est = dense @ rel.cell_estimates()
            hits.append(np.abs(est - truth)[infer] <= np.array(eps)[infer])
        hits = np.concatenate(hits) if infer.any() else np.zeros(0)
        claimed = float(np.mean(np.array(claim)[infer])) if infer.any() else float("nan")
        out[name] = dict(
            requests=requests,
            reps=reps,
            inferred=float(infer.mean()),
            predicted=float(pred.mean()),
            agree=float(np.mean(infer == pred)),
            coverage=float(hits.mean()) if hits.size else float("nan"),
            coverage_sd=math.sqrt(max(claimed * (1 - claimed), 1e-6) / max(hits.size, 1)),
            claimed=claimed,
            assess_ms=1000 * t_assess,
            rows=plan.n_rows,
        )
    return out
