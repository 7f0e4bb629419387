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
        hist.append(HistoryRow(q, a, true_answer(q, ds.cube) + init.draw(B.FAMILY, q.sensitivity / a), B.FAMILY))
    hits, mismatch = 0, 0.0
    for rows, answered in log:
        for m in rows:
            y = true_answer(m.query, ds.cube) + sampler.draw(m.family, m.query.sensitivity / m.alpha)
            hist.append(HistoryRow(m.query, m.alpha, y, m.family))
        for req, _claim, released in answered:
            est = hist.estimate(req.query).estimate
            mismatch = max(mismatch, abs(est - released))
            hits += int(abs(est - true_answer(req.query, ds.cube)) <= req.eps + 1e-9)
    return hits, mismatch


def spread(ds, specs, *, seed: int, repeats: int, share: float, total: float = B.TOTAL, initial=()) -> dict:
    """Run the stream once (logging its decisions), then replay it under ``repeats`` other noise seeds."""
    log: list = []
    out = B.run_batch(ds, specs, batch=20, cap=1.0, seed=seed, share=share, total=total, initial=initial, log=log)
    own, mismatch = replay(ds, log, initial, seed)
    hits = np.array([replay(ds, log, initial, seed + 100_003 * (r + 1))[0] for r in range(repeats)], float)
    return {"answered": out.answered, "hits": out.hits, "claimed": out.claimed, "replayed_own": own,
            "mismatch": mismatch, "replay_hits": hits.tolist(), "mean": float(hits.mean()),
            "sd": float(hits.std(ddof=1))}
