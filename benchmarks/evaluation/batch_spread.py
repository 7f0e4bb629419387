"""How far hits may stray from the claims on one stream: the same decisions under fresh noise.

Under the flat prior no decision reads a released value, so a stream's plans, the requests answered and
their claimed confidences are the same for every noise draw; only the hits change. Replaying the
logged measurements with new simulation noise (initial rows included) and re-estimating every answered
request (the BLUE, which is the flat prior's centre) gives the distribution of the hits H at fixed
claims C: its spread is what a single stream's H − C should be judged against. Answers sharing a
history share its noise, so the spread is wider than a binomial one.
"""

from __future__ import annotations

import numpy as np

from dpdesk.engine.answering.fresh import true_answer
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.noise import SeededSampler
from evaluation import batch_eval as B


def replay(ds, log, initial, seed: int) -> tuple[int, float]:
    """Hits of the logged answers under the noise of ``seed`` (and the largest estimate mismatch for the
    logged noise when ``seed`` is the run's own: a check that the replay is the release)."""
    hist, init, sampler = History(ds.cube.schema.shape), SeededSampler(seed + 7919), SeededSampler(seed)
    for q, a in initial:
        hist.append(
            HistoryRow(q, a, init.release(B.FAMILY, true_answer(q, ds.cube), q.sensitivity / a), B.FAMILY)
        )
    hits, mismatch = 0, 0.0
    for rows, answered in log:
        for m in rows:
            y = sampler.release(m.family, true_answer(m.query, ds.cube), m.query.sensitivity / m.alpha)
            hist.append(HistoryRow(m.query, m.alpha, y, m.family))
        for req, _claim, released in answered:
            est = hist.estimate(req.query).estimate
            mismatch = max(mismatch, abs(est - released))
            hits += int(abs(est - true_answer(req.query, ds.cube)) <= req.eps + 1e-9)
    return hits, mismatch


def spread(ds, specs, *, seed: int, repeats: int, share: float, total: float = B.TOTAL, initial=()) -> dict:
    """Run the stream once (logging its decisions), then replay it under ``repeats`` other noise seeds."""
    log: list = []
    out = B.run_batch(
        ds, specs, batch=20, cap=1.0, seed=seed, share=share, total=total, initial=initial, log=log
    )
    own, mismatch = replay(ds, log, initial, seed)
    hits = np.array([replay(ds, log, initial, seed + 100_003 * (r + 1))[0] for r in range(repeats)], float)
    return {
        "repeats": repeats,
        "answered": out.answered,
        "hits": out.hits,
        "claimed": out.claimed,
        "replayed_own": own,
        "mismatch": mismatch,
        "replay_hits": hits.tolist(),
        "mean": float(hits.mean()),
        "sd": float(hits.std(ddof=1)),
    }


def spread_one_by_one(ds, specs, *, seed: int, repeats: int) -> dict:
    """The same for the paper's inference system (one by one, no fusion) on a budget-starved stream:
    its fresh answers are the rows, its inferred answers the BLUE of the rows before them."""
    from dpdesk.engine.answering.fresh import release_fresh
    from dpdesk.engine.answering.workflow import Request, Settings, assess

    hist, costs, sampler = History(ds.cube.schema.shape), np.zeros(ds.n), SeededSampler(seed)
    settings = Settings(B.TOTAL, policy=None, fusion=False)
    log, hits, claimed = [], 0, 0.0
    for i, s in enumerate(specs):
        a = assess(
            hist, Request(str(i), s.query, s.eps, s.delta), settings, family=B.FAMILY, cell_costs=costs
        )
        if a.decision == "infer":
            released, claim, row = a.release_estimate, float(a.confidence_at_eps), None
        elif a.decision == "spend":
            fresh = release_fresh(a, ds.cube, sampler, allow_insecure=True)
            row = fresh.history_row()
            hist.append(row)
            costs = np.asarray(a.budget.cell_costs_after)
            released, claim = fresh.released, B._claimed_fresh(a)
        else:
            continue
        log.append((s, row, released))
        hits += int(abs(released - true_answer(s.query, ds.cube)) <= s.eps + 1e-9)
        claimed += claim

    def replay(noise_seed: int) -> tuple[int, float]:
        h, draw, got, mismatch = History(ds.cube.schema.shape), SeededSampler(noise_seed), 0, 0.0
        for s, row, released in log:
            if row is not None:
                y = draw.release(
                    row.family, true_answer(row.query, ds.cube), row.query.sensitivity / row.alpha
                )
                h.append(HistoryRow(row.query, row.alpha, y, row.family))
                value = y
            else:
                value = h.estimate(s.query).estimate
            mismatch = max(mismatch, abs(value - released))
            got += int(abs(value - true_answer(s.query, ds.cube)) <= s.eps + 1e-9)
        return got, mismatch

    own, mismatch = replay(seed)
    reps = np.array([replay(seed + 100_003 * (r + 1))[0] for r in range(repeats)], float)
    return {
        "repeats": repeats,
        "answered": len(log),
        "hits": hits,
        "claimed": claimed,
        "replayed_own": own,
        "mismatch": mismatch,
        "replay_hits": reps.tolist(),
        "mean": float(reps.mean()),
        "sd": float(reps.std(ddof=1)),
    }
