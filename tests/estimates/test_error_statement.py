"""Issue 34 item 5: a zero-cost estimate carries an error statement that holds for its query, or none and a
plain warning — never a small number (its noise, a cross-validation error over other queries) that reads
like its error."""

from __future__ import annotations

import numpy as np

from dpdesk.engine.estimates.plans import history_inputs, plan_estimate
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.queries.query import query_from_vector

SHAPE = (4, 3)
COUNTS = np.array([[900, 40, 5], [300, 800, 20], [10, 60, 700], [250, 250, 250]], dtype=float)
ALPHA = 0.2  # noise scale 5 per released marginal


def _marginal_rows(rng) -> History:
    """Every 1-way marginal released once with Laplace noise (inference-only randomness: a test table)."""
    h = History(SHAPE)
    for axis, size in enumerate(SHAPE):
        for i in range(size):
            v = np.zeros(SHAPE)
            v[(slice(None),) * axis + (i,)] = 1.0
            q = query_from_vector(v, SHAPE)
            h.append(HistoryRow(q, ALPHA, float((v * COUNTS).sum() + rng.laplace(0.0, 1.0 / ALPHA))))
    return h


def _plan(history: History, vector: np.ndarray, tau: float):
    q = query_from_vector(vector, SHAPE)
    inputs = history_inputs(history, ("a", "b"), Basis(), table_size=float(COUNTS.sum()))
    return plan_estimate(inputs, q, history.estimate(q), tau=tau), float((vector * COUNTS).sum())


def test_an_estimable_query_gets_an_error_bound_that_covers_the_truth():
    """Rows 0 and 1 of the first attribute: history determines it; the bound (history's unbiased estimate by
    Chebyshev, plus the shrinkage's shift) holds at its stated 95 % over repeated releases."""
    v = np.zeros(SHAPE)
    v[:2] = 1.0
    covered, trials = 0, 200
    for seed in range(trials):
        plan, truth = _plan(_marginal_rows(np.random.default_rng(seed)), v, tau=3.0)
        stated = plan.error_statement()
        assert stated is not None and plan.biased
        covered += abs(plan.value - truth) <= stated[0]
        assert any(line.startswith("error: within ±") for line in plan.lines())
    # at least 95 % if the bound holds; three binomial standard errors below it at 200 trials
    assert covered / trials >= 0.95 - 3 * (0.95 * 0.05 / trials) ** 0.5


def test_a_query_history_does_not_determine_gets_no_number_but_a_plain_warning():
    v = np.zeros(SHAPE)
    v[0, 0] = 1.0  # one cell: marginals alone never determine it
    plan, truth = _plan(_marginal_rows(np.random.default_rng(1)), v, tau=3.0)
    assert plan.error_statement() is None
    lines = plan.lines()
    text = "\n".join(lines)
    assert "NO ERROR BOUND" in text and "off by more than the answer itself" in text
    # nothing after the estimate reads like its error: no s.d., no "about N", no ± figure
    assert "s.d." not in text and "about" not in text and "±" not in text
