"""Drawing a partition release, its count table, and answering a stream of requests from it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from stats_helpers import FALSE_FAILURE, assert_counts_follow, chance_to_pass, within_binomial

from dpdesk.engine.answering.workflow import Request, Settings, assess
from dpdesk.engine.errors import BudgetError, Cancelled, PlanError
from dpdesk.engine.inference.history import History
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler
from dpdesk.engine.partition import release as release_mod
from dpdesk.engine.partition.grouped import GroupedPosterior
from dpdesk.engine.partition.plan import cells_plan, tree_plan
from dpdesk.engine.partition.release import PartitionRelease, draw_release
from dpdesk.engine.queries.query import Query, Term


def test_release_refuses_an_insecure_sampler_and_bad_alpha(schema3, counts3):
    with pytest.raises(BudgetError, match="not secure"):
        draw_release(cells_plan(schema3), 1.0, counts3, SeededSampler(0))
    for bad in (0, -1.0, float("inf"), True):
        with pytest.raises(BudgetError, match=r"^epsilon \("):
            draw_release(cells_plan(schema3), bad, counts3, SeededSampler(0), allow_insecure=True)


def _discrete_laplace_bins(alpha: float) -> np.ndarray:
    """Pr(Z ≤ −2), Pr(Z = −1), …, Pr(Z = 3), Pr(Z ≥ 4) for Z discrete Laplace of scale 1/α."""
    q = math.exp(-alpha)
    pmf = lambda k: (1 - q) / (1 + q) * q ** abs(k)
    tail = lambda k: q**k / (1 + q)  # Pr(Z ≥ k) = Pr(Z ≤ −k) for k ≥ 1
    return np.array([tail(2), *(pmf(k) for k in range(-1, 4)), tail(4)])


def test_opendp_release_noise_is_discrete_laplace_of_the_planned_scale(sized_schema):
    """20 000 cells' noise against the discrete Laplace of scale 1/α, bin by bin (tests/stats_helpers.py:
    a correct sampler fails with probability below 10⁻⁶, and noise of scale 1/0.7 instead of 1/0.8,
    14 % wider, would pass with probability below 10⁻⁶)."""
    s = sized_schema((20000,))
    counts = np.full(s.shape, 7)
    rel = draw_release(cells_plan(s), 0.8, counts, OpenDPSampler())
    assert rel.sampler.startswith("opendp") and rel.values[0].dtype == np.int64
    noise = rel.values[0] - 7
    observed = np.bincount(np.clip(noise, -2, 4) + 2, minlength=7)
    bounds = assert_counts_follow(observed, _discrete_laplace_bins(0.8))
    assert chance_to_pass(noise.size, bounds, _discrete_laplace_bins(0.7)) < FALSE_FAILURE


def test_progress_and_cancel_between_chunks(schema3, counts3, monkeypatch):
    monkeypatch.setattr(release_mod, "CHUNK", 16)
    plan = tree_plan(schema3, "age", 2)
    seen: list[float] = []
    rel = draw_release(plan, 1.0, counts3, SeededSampler(0), allow_insecure=True, progress=seen.append)
    assert seen[-1] == 1.0 and len(seen) == math.ceil(plan.n_rows / 16) and rel.n_rows == plan.n_rows
    calls = iter([False, False, True])
    with pytest.raises(Cancelled):
        draw_release(plan, 1.0, counts3, SeededSampler(0), allow_insecure=True, cancelled=lambda: next(calls))


def test_table_forms_and_json_round_trip(schema3, counts3):
    plan = tree_plan(schema3, "age", 2, cross=["sex"])
    rel = draw_release(plan, 0.05, counts3, SeededSampler(2), allow_insecure=True)
    full = rel.table("unclipped")
    assert list(full.columns) == ["group", "age", "sex", "edu", "noisy_count"] and len(full) == plan.n_rows
    assert (full["noisy_count"] <= 0).any()  # at α = 0.05 some counts come out non-positive
    assert set(full["edu"]) == {"*"} and "0-10..30-40" in set(full["age"])
    seed = rel.table("seed")
    assert list(seed.columns)[-1] == "noisy_count_positive"
    assert len(seed) == int((full["noisy_count"] > 0).sum()) and (seed["noisy_count_positive"] > 0).all()
    with pytest.raises(PlanError, match="table form"):
        rel.table("clipped")
    again = PartitionRelease.from_json(schema3, rel.to_json())
    assert all(np.array_equal(a, b) for a, b in zip(again.values, rel.values)) and again.alpha == rel.alpha


@pytest.mark.calibration
def test_requests_after_a_cell_release_are_inferred_at_the_predicted_rate_and_cover(sized_schema):
    """After a cell release at α, interval requests are free exactly when their ε reaches the query's exact
    half-width (the per-query guarantee), and the free answers cover the truth at the claimed rate."""
    s = sized_schema((16,))
    counts = np.random.default_rng(1).poisson(50, 16)
    plan = cells_plan(s)
    alpha, delta = 0.5, 0.1
    rng = np.random.default_rng(5)
    queries, eps, predicted, claimed = [], [], [], []
    for lo in range(16):
        for hi in range(lo, 16):
            f = np.zeros(16)
            f[lo : hi + 1] = 1.0
            q = Query(s.shape, terms=(Term(1.0, (f,)),))
            post = GroupedPosterior([1.0], [hi - lo + 1], plan.coverage / alpha)
            e = post.halfwidth(delta)[0] * rng.uniform(0.7, 1.3)
            queries.append(q)
            eps.append(e)
            predicted.append(post.prob_within(e)[0] >= 1 - delta)
            claimed.append(post.prob_within(e)[0])
    rel0 = draw_release(plan, alpha, counts, SeededSampler(0), allow_insecure=True)
    hist = History(s.shape, rel0.history_rows())
    decisions = [
        assess(hist, Request(str(i), q, e, delta), Settings(alpha, fusion=False)).decision
        for i, (q, e) in enumerate(zip(queries, eps))
    ]
    assert [
        d == "infer" for d in decisions
    ] == predicted  # the engine frees exactly what the guarantee predicts
    assert set(decisions) <= {"infer", "reject"}  # the budget is spent: nothing fresh
    free = np.flatnonzero(predicted)
    assert 0.2 < free.size / len(queries) < 0.8
    truth = np.array([q.dense() @ counts for q in queries])
    hits, rates = [], []
    for r in range(300):
        y = draw_release(plan, alpha, counts, SeededSampler(100 + r), allow_insecure=True).values[0]
        est = np.array([q.dense() @ y for q in queries])
        hits.extend(np.abs(est - truth)[free] <= np.array(eps)[free])
        rates.extend(np.array(claimed)[free])
    within_binomial(hits, rates)
    assert np.mean(rates) >= 1 - delta


def test_parallel_draws_keep_every_chunk_in_its_place(schema3, counts3, monkeypatch):
    class Striped:  # a stand-in that says its draws may run on two threads; noise = chunk length, per chunk
        secure, parallel_draws, name = True, True, "striped"

        def release_vector(self, family, values, scale):
            return np.asarray(values) + len(values)

    monkeypatch.setattr(release_mod, "CHUNK", 7)
    plan = tree_plan(schema3, "age", 2)
    seen: list[float] = []
    rel = draw_release(plan, 1.0, counts3, Striped(), progress=seen.append)
    truth = np.concatenate([r.reshape(-1) for r in plan.true_rows(counts3)])
    got = np.concatenate([v.reshape(-1) for v in rel.values])
    sizes = np.diff(np.append(np.arange(0, plan.n_rows, 7), plan.n_rows))
    assert np.array_equal(got - truth, np.repeat(sizes, sizes)) and seen[-1] == 1.0
