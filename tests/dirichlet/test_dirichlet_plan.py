"""Assess from public inputs, then draw exactly the assessed release."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpdesk.engine.cube import build_cube
from dpdesk.engine.dirichlet.accuracy import alpha_for_target, tail_bound
from dpdesk.engine.dirichlet.plan import PosteriorRelease, assess_posterior, draw_posterior
from dpdesk.engine.dirichlet.request import parse_posterior
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.schema import Schema

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {"name": "age", "kind": "numeric", "edges": [0, 65, 90], "labels": ["0-65", "65-90"]},
            {"name": "education", "kind": "categorical", "values": ["school", "college", "degree"]},
        ]
    }
)
QUERY = parse_posterior('posterior(education | age="65-90"; prior=1)', SCHEMA)


def _box_charge(a):
    """The charge on the box's cells (all equal) after checking the other cells pay nothing."""
    dense = a.charge.dense(SCHEMA.n_cells).reshape(SCHEMA.shape)
    assert np.all(dense[0] == 0) and np.all(dense[1] == dense[1, 0])
    return float(dense[1, 0]), a.charge.delta


@pytest.fixture(scope="module")
def cube():
    rng = np.random.default_rng(5)
    df = pd.DataFrame(
        {"age": rng.uniform(0, 90, 300), "education": rng.choice(["school", "college", "degree"], 300)}
    )
    return build_cube(df, SCHEMA)


def test_public_size_fixes_the_candidates_and_the_draw_picks_one(cube):
    a = assess_posterior(QUERY, mechanism="exponential-global", budget=0.8, size=40)
    assert _box_charge(a) == (0.8, 0.0) and a.size_alpha == 0
    assert a.candidates is not None and a.candidates.count == math.comb(42, 2)
    assert a.reference_counts is not None and sum(a.reference_counts) == 40
    assert set(a.reference) == {"laplace", "exponential-global"} and all(
        0 < v < 1 for v in a.reference.values()
    )
    rec = a.record()
    json.dumps(rec)  # plain JSON
    assert rec["method"] == "exponential-global" and rec["alpha"] == 0.8 and rec["size"] == 40
    out = draw_posterior(a, cube, SeededSampler(1))
    assert any(np.array_equal(out.parameters, r) for r in a.candidates.parameters())
    assert out.noisy_size is None and out.details["candidates"]["size"] == 40
    # public description only: the global sensitivity depends on the prior alone
    assert set(out.details) == {"mechanism", "alpha", "delta", "candidates", "global_sensitivity"}


def test_noisy_size_is_released_first_and_charged(cube):
    a = assess_posterior(QUERY, mechanism="exponential-smooth", budget=1.0, delta=1e-6)
    assert a.size is None and a.candidates is None
    assert a.size_alpha == pytest.approx(0.25) and a.posterior_alpha == pytest.approx(0.75)
    assert _box_charge(a) == (1.0, 1e-6)
    out = draw_posterior(a, cube, SeededSampler(2))
    assert out.noisy_size is not None and out.noisy_size == round(out.noisy_size)
    assert out.candidates.size == max(0, int(out.noisy_size))
    assert np.isclose(out.parameters.sum(), 3 + out.candidates.size)
    assert set(out.details) == {"mechanism", "alpha", "delta", "candidates", "eps0", "beta", "split"}
    assert out.details["alpha"] == pytest.approx(0.75)


def test_laplace_noises_every_count_and_clips(cube):
    a = assess_posterior(QUERY, mechanism="laplace", budget=0.05)
    assert a.size_alpha == 0 and _box_charge(a) == (0.05, 0.0)
    out = draw_posterior(a, cube, SeededSampler(3))
    noisy = np.array(out.noisy_counts)
    assert np.array_equal(out.parameters, 1 + np.maximum(0, noisy))
    assert out.candidates is None and out.noisy_size is None


def test_accuracy_target_sets_the_budget_of_the_global_mechanism():
    a = assess_posterior(QUERY, within=0.2, failure=0.05, size=40)
    n = a.candidates.count
    assert tail_bound(QUERY.prior, a.alpha, n, 0.2) == pytest.approx(0.05)
    b = assess_posterior(QUERY, within=0.2, failure=0.05)  # noisy size: N bounded by the cap
    assert b.posterior_alpha == pytest.approx(alpha_for_target(QUERY.prior, b.max_candidates, 0.2, 0.05))
    assert b.alpha == pytest.approx(b.posterior_alpha / 0.75)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(), "needs a budget"),
        (dict(mechanism="magic", budget=1), "must be one of"),
        (dict(budget=-1), "budget"),
        (dict(budget=1, within=0.1, failure=0.1), "not both"),
        (dict(mechanism="laplace", within=0.1, failure=0.1), "global-sensitivity mechanism only"),
        (dict(mechanism="exponential-smooth", budget=1), "delta"),
        (dict(mechanism="exponential-global", budget=1, delta=0.01), "smooth-sensitivity mechanism only"),
        (dict(budget=1, size=-3), "size"),
        (dict(budget=1, size=2.5), "size"),
        (dict(within=0, failure=0.1), "distance"),
        (dict(mechanism="exponential-global", budget=1, size_share=1.0), "size share"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(DpdeskError, match=message) as err:
        assess_posterior(QUERY, **kwargs)
    assert "\n" not in str(err.value)


def test_the_ledger_payload_rederives_charge_rows_and_values(cube):
    """record() + draw() is what the ledger holds; the registered mechanism's privacy map reads it back."""
    for kwargs in (
        dict(mechanism="exponential-global", budget=0.6, size=40),
        dict(mechanism="exponential-smooth", budget=0.9, delta=1e-6),
        dict(mechanism="laplace", budget=0.3),
    ):
        a = assess_posterior(QUERY, **kwargs)
        with pytest.raises(BudgetError, match="not secure"):
            a.draw(cube, SeededSampler(0))
        payload = {**a.record(), **a.draw(cube, SeededSampler(4), allow_insecure=True)}
        json.dumps(payload)
        contrib = a.mechanism.contribution(json.loads(json.dumps(payload)), SCHEMA.shape)
        assert a.mechanism.name == f"posterior-{a.method}" and a.mechanism.kind == "posterior"
        assert np.allclose(contrib.charge.dense(SCHEMA.n_cells), a.charge.dense(SCHEMA.n_cells))
        assert contrib.charge.delta == a.delta
        released = PosteriorRelease.from_payload(payload)
        assert contrib.values == tuple(released.parameters.tolist())
        if a.method == "laplace":  # each noisy category count is a history row on its own cells
            counts = QUERY.counts(cube)
            assert [r.query.dense() @ cube.counts.reshape(-1) for r in contrib.rows] == counts.tolist()
            assert all(r.alpha == 0.3 and r.family == "discrete_laplace" for r in contrib.rows)
        elif a.size is None:  # the noisy box total is a history row
            (row,) = contrib.rows
            assert row.alpha == pytest.approx(a.size_alpha) and row.answer == released.noisy_size
        else:
            assert contrib.rows == ()


def test_budget_and_delta_cap_decide_from_public_costs():
    costs = np.zeros(SCHEMA.n_cells)
    costs[4] = 0.7  # a cell inside the box (age 65-90) already paid 0.7
    ok = assess_posterior(
        QUERY, mechanism="exponential-global", budget=0.3, size=40, cell_costs=costs, total_budget=1.0
    )
    assert ok.releasable and ok.budget.system_cost_after == pytest.approx(1.0)
    over = assess_posterior(
        QUERY, mechanism="exponential-global", budget=0.31, size=40, cell_costs=costs, total_budget=1.0
    )
    assert not over.releasable and "above the total budget" in over.reason
    with pytest.raises(BudgetError, match="refused"):
        over.draw(None, SeededSampler(0), allow_insecure=True)
    outside = np.zeros(SCHEMA.n_cells)
    outside[0] = 0.9  # a cell outside the box does not limit it
    assert assess_posterior(
        QUERY, mechanism="exponential-global", budget=0.5, size=40, cell_costs=outside, total_budget=1.0
    ).releasable
    deltas = np.full(SCHEMA.n_cells, 4e-6)
    capped = assess_posterior(
        QUERY,
        mechanism="exponential-smooth",
        budget=0.5,
        delta=2e-6,
        size=40,
        cell_deltas=deltas,
        delta_cap=5e-6,
    )
    assert not capped.releasable and "cap" in capped.reason and capped.delta_after == pytest.approx(6e-6)


@pytest.mark.parametrize("size, best", [(2000, "laplace"), (None, "laplace")])
def test_a_request_naming_no_mechanism_gets_the_more_accurate_one_at_its_size(size, best):
    """Issue 34 item 4: the default is chosen by expected accuracy at the request's (public or reference)
    size; the preview says which and why."""
    from dpdesk.engine.dirichlet.summary import preview_lines

    a = assess_posterior(QUERY, budget=0.5, reference_size=size)
    assert a.method == best and a.chosen_by
    if size is not None:
        assert a.reference[best] == min(a.reference.values())  # the one with the smaller expected distance
        assert f"{size:,} records" in a.chosen_by
    text = "\n".join(preview_lines(a))
    assert "mechanism chosen by expected accuracy" in text


def test_the_global_guarantee_is_a_usable_distance_or_says_it_promises_nothing():
    from dpdesk.engine.dirichlet.summary import preview_lines

    small = assess_posterior(QUERY, mechanism="exponential-global", budget=0.5, size=40)
    large = assess_posterior(QUERY, mechanism="exponential-global", budget=400.0, size=40)
    small_text, large_text = "\n".join(preview_lines(small)), "\n".join(preview_lines(large))
    assert small.guarantee["within_at_0.9"] >= 1 and "no useful data-free guarantee" in small_text
    assert "Pr(H ≤ H_min + 0.1) ≥ 0" not in small_text
    t = large.guarantee["within_at_0.9"]
    assert t < 1 and f"within Hellinger distance {t:.3g}" in large_text
