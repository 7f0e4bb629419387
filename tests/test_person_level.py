"""Person-level accounting by exact enumeration (docs/person-level.md).

Small cubes; for every person a neighbouring table may add or remove — every placement of at most ``k``
rows the privacy unit allows — the exact output law of each release kind is compared on the two tables,
and the largest log-ratio over outputs must stay within the person-level loss the accounting charges
(:class:`~dpdesk.engine.budget.person.PersonRule` over the mechanisms' per-cell charges). The laws are
written here from the mechanisms' definitions (discrete Laplace mass, the noisy-max integral), not taken
from the code under test, and the charged figure is also checked against a brute-force maximum over the
placements. With ``k = 1`` the figures are today's, to the bit.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpdesk.engine.budget.accounting import preview
from dpdesk.engine.budget.person import ROW_RULE, PersonRule, person_rule
from dpdesk.engine.claims.odds import odds_bound
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE
from dpdesk.engine.partition.privacy_map import PARTITION
from dpdesk.engine.queries.query import query_from_json
from dpdesk.engine.schema import parse_schema

SHAPE = (2, 3)  # 6 cells
N = 6


def schema(unit: dict | None):  # type: ignore[no-untyped-def]
    obj = {
        "attributes": [
            {"name": "a", "column": "a", "kind": "categorical", "values": ["x", "y"]},
            {"name": "b", "column": "b", "kind": "categorical", "values": ["p", "q", "r"]},
        ]
    }
    if unit is not None:
        obj["privacy_unit"] = unit
    return parse_schema(obj)


UNITS = {
    "k3": {"column": "pid", "max_rows": 3},
    "k3-cell": {"column": "pid", "max_rows": 3, "one_row_per": "cell"},
    "k2-a": {"column": "pid", "max_rows": 2, "one_row_per": ["a"]},
    "k2-b": {"column": "pid", "max_rows": 2, "one_row_per": ["b"]},
}


def placements(unit: dict) -> list[tuple[int, ...]]:
    """Every multiset of cells one person's rows may occupy under ``unit`` (independent of the code)."""
    k = unit["max_rows"]
    per = unit.get("one_row_per")
    out = []
    for m in range(1, k + 1):
        for cells in itertools.combinations_with_replacement(range(N), m):
            if per == "cell" and len(set(cells)) < m:
                continue
            if isinstance(per, list):
                axis = ["a", "b"].index(per[0])
                slices = [np.unravel_index(c, SHAPE)[axis] for c in cells]
                if len(set(slices)) < m:
                    continue
            out.append(cells)
    return out


def brute_loss(values: np.ndarray, unit: dict) -> float:
    return max(math.fsum(float(values[c]) for c in cells) for cells in placements(unit))


def dlap_logpmf(y: np.ndarray, mu: float, b: float) -> np.ndarray:
    """log Pr(Y = y) for Y = mu + discrete Laplace noise of scale b (mass ∝ exp(−|k|/b) on the integers)."""
    t = math.exp(-1.0 / b)
    return math.log((1 - t) / (1 + t)) - np.abs(y - mu) / b


def count_loss(qs: list[np.ndarray], scales: list[float], x: np.ndarray, person: tuple[int, ...]) -> float:
    """Exact max over outputs of |log Pr(y | D) − log Pr(y | D + person)| for independent counts.

    The law is a product, so the largest log-ratio is the sum of each count's, each enumerated over a
    window of integers holding both centres with a margin (the ratio is constant outside them).
    """
    xp = x.copy()
    for c in person:
        xp[c] += 1
    total_fwd = total_back = 0.0
    for q, b in zip(qs, scales):
        mu, mup = float(q @ x), float(q @ xp)
        lo, hi = math.floor(min(mu, mup)) - 5, math.ceil(max(mu, mup)) + 5
        y = np.arange(lo, hi + 1, dtype=float)
        d = dlap_logpmf(y, mu, b) - dlap_logpmf(y, mup, b)
        total_fwd += float(d.max())
        total_back += float((-d).max())
    return max(total_fwd, total_back)


@pytest.mark.parametrize("name", sorted(UNITS))
def test_the_rule_is_the_largest_sum_over_a_persons_placements(name: str) -> None:
    unit = UNITS[name]
    rule = person_rule(schema(unit))
    rng = np.random.default_rng(7)
    for _ in range(50):
        b = rng.exponential(0.3, N) * (rng.random(N) < 0.7)
        assert rule.loss(b) == pytest.approx(brute_loss(b, unit), rel=1e-12, abs=1e-15)


def test_one_row_per_person_is_todays_figure_to_the_bit() -> None:
    rng = np.random.default_rng(3)
    one = person_rule(schema({"column": "pid", "max_rows": 1}))
    cell = person_rule(schema({"column": "pid", "max_rows": 1, "one_row_per": "cell"}))
    assert one == ROW_RULE and cell == ROW_RULE and person_rule(schema(None)) == ROW_RULE
    for _ in range(20):
        costs = rng.exponential(0.2, N)
        q = query_from_json({"indices": [0, 2, 5], "values": [1, 2, -1]}, N, SHAPE)
        charge = DISCRETE_LAPLACE.charge_for(q, 0.37)
        today = preview(costs, 5.0, charge)
        for rule in (one, cell):
            p = preview(costs, 5.0, charge, rule=rule)
            assert (p.system_cost, p.system_cost_after, p.limiting_cell) == (
                today.system_cost,
                today.system_cost_after,
                today.limiting_cell,
            )
            assert abs(p.system_cost_after - float((costs + charge.dense(N)).max())) <= 1e-12
        assert ROW_RULE.delta(costs, costs / 100) == float((costs / 100).max())


@pytest.mark.parametrize("name", sorted(UNITS))
def test_counts_and_weighted_queries_stay_within_the_charged_loss(name: str) -> None:
    """Two fresh answers (a count and a weighted query with a negative weight) composed: for every
    person, the exact law moves by at most the person-level system cost, and the worst person reaches it
    (the bound is tight for Laplace counts)."""
    unit = UNITS[name]
    rule = person_rule(schema(unit))
    x = np.array([3, 0, 5, 2, 7, 1])
    q1 = np.array([1.0, 1, 0, 0, 1, 0])
    q2 = np.array([2.0, 0, -1, 1, 0, 3])
    alphas = (0.3, 0.45)
    queries = [query_from_json({"indices": list(range(N)), "values": q.tolist()}, N, SHAPE) for q in (q1, q2)]
    costs = np.zeros(N)
    scales = []
    for q, a in zip(queries, alphas):
        costs = costs + DISCRETE_LAPLACE.charge_for(q, a).dense(N)
        scales.append(DISCRETE_LAPLACE.scale(q.sensitivity, a))
    charged = rule.loss(costs)
    worst = max(count_loss([q1, q2], scales, x, p) for p in placements(unit))
    assert worst <= charged + 1e-12
    # tight for the no-grouping rule: all k rows in the costliest cell
    if "one_row_per" not in unit:
        assert worst == pytest.approx(charged, rel=1e-12)
    # removing a person: the same ratios read backwards (count_loss takes both directions)
    assert charged == pytest.approx(brute_loss(costs, unit), rel=1e-12)


@pytest.mark.parametrize("name", sorted(UNITS))
def test_a_partition_release_stays_within_the_charged_loss(name: str) -> None:
    """Every cell's count released with discrete Laplace noise of scale b (the cells plan): each cell
    pays 1/b per row; a person's rows move the product law by Σ|Δ_j|/b at most."""
    unit = UNITS[name]
    rule = person_rule(schema(unit))
    x = np.array([4, 1, 0, 6, 2, 3])
    b = 2.5
    costs = PARTITION.charge_for(1, b).dense(N)
    qs = [np.eye(N)[j] for j in range(N)]
    worst = max(count_loss(qs, [b] * N, x, p) for p in placements(unit))
    assert worst <= rule.loss(costs) + 1e-12
    assert worst == pytest.approx(rule.loss(costs), rel=1e-12)  # k rows always fit: the bound is reached


def noisy_max_law(u: np.ndarray, s: float) -> np.ndarray:
    """Pr(argmax_i u_i + E_i = i), E_i i.i.d. Exponential(scale s): w_i ∫₀¹ Π_{j≠i}(1 − w_j x) dx with
    w_j = exp((u_j − max u)/s), integrated exactly as a polynomial (numpy.polynomial)."""
    w = np.exp((u - u.max()) / s)
    out = np.empty(u.size)
    for i in range(u.size):
        poly = np.polynomial.Polynomial([1.0])
        for j in range(u.size):
            if j != i:
                poly = poly * np.polynomial.Polynomial([1.0, -w[j]])
        integral = poly.integ()
        out[i] = w[i] * (integral(1.0) - integral(0.0))
    return out


@pytest.mark.parametrize("name", sorted(UNITS))
def test_argmax_stays_within_the_charged_loss(name: str) -> None:
    """argmax(b): utilities are b's counts (monotonic: scale 1/α); α on every cell of the box."""
    unit = UNITS[name]
    rule = person_rule(schema(unit))
    alpha = 0.4
    x = np.array([3, 2, 2, 1, 4, 2]).reshape(SHAPE)
    costs = np.full(N, alpha)  # the box is the whole cube: every cell pays α
    base = noisy_max_law(x.sum(axis=0).astype(float), 1 / alpha)
    worst = 0.0
    for p in placements(unit):
        xp = x.copy().reshape(-1)
        for c in p:
            xp[c] += 1
        law = noisy_max_law(xp.reshape(SHAPE).sum(axis=0).astype(float), 1 / alpha)
        worst = max(worst, float(np.max(np.abs(np.log(law) - np.log(base)))))
    assert 0 < worst <= rule.loss(costs) + 1e-12


def test_the_odds_bound_of_a_watched_claim_is_per_person() -> None:
    """A claim "this person's rows are in the cells J": the odds of it move by at most the bound."""
    unit = UNITS["k3"]
    rule = person_rule(schema(unit))
    x = np.array([3, 0, 5, 2, 7, 1])
    q = np.array([1.0, 1, 0, 0, 1, 0])
    a = 0.3
    query = query_from_json({"indices": list(range(N)), "values": q.tolist()}, N, SHAPE)
    costs = DISCRETE_LAPLACE.charge_for(query, a).dense(N)
    scale = DISCRETE_LAPLACE.scale(query.sensitivity, a)
    cells = [0, 1]
    bound = odds_bound(costs, cells, rule=rule)
    inside = [p for p in placements(unit) if set(p) <= set(cells)]
    worst = max(count_loss([q], [scale], x, p) for p in inside)
    assert worst <= bound.exponent + 1e-12 and worst == pytest.approx(bound.exponent, rel=1e-12)
    assert odds_bound(costs, cells).exponent == pytest.approx(worst / 3, rel=1e-12)  # one row: today's


def test_person_delta_is_the_chained_group_bound() -> None:
    """Theorem 2: δ_person = max D · Σ_{i<k} e^{i·max B}; k = 1 is max D."""
    costs, deltas = np.array([0.1, 0.3]), np.array([1e-6, 3e-6])
    rule = PersonRule(3, None, (2,))
    assert rule.delta(costs, deltas) == pytest.approx(3e-6 * (1 + math.exp(0.3) + math.exp(0.6)), rel=1e-12)
    assert ROW_RULE.delta(costs, deltas) == 3e-6


def _person_pairs(categories: int, top: int, k: int, distinct: bool):
    """Every table with counts < top and each table with one person's ≤ k rows added (distinct
    categories when one row per cell is kept)."""
    for c in itertools.product(range(top), repeat=categories):
        c = np.array(c)
        for m in range(1, k + 1):
            combos = (
                itertools.combinations(range(categories), m)
                if distinct
                else itertools.combinations_with_replacement(range(categories), m)
            )
            for rows in combos:
                d = c.copy()
                for i in rows:
                    d[i] += 1
                yield c, d


@pytest.mark.parametrize("distinct", [False, True])
def test_the_dirichlet_posterior_stays_within_the_person_level_price(distinct: bool) -> None:
    """The global exponential mechanism (pure α per box cell) and the smooth one ((α, δ) per box cell):
    with a person's k rows added, the law moves within k·α (or the sum of k distinct cells' α), and the
    smooth one's excess mass stays within Theorem 2's δ. The laws are the mechanisms' exact ones
    (``probabilities``); the charged figures are the person rule's."""
    from dpdesk.engine.dirichlet.candidates import CandidateSet
    from dpdesk.engine.dirichlet.mechanisms import ExponentialGlobal, ExponentialSmooth

    prior = np.array([1.0, 1.0, 1.0])
    k = 2
    rule = PersonRule(k, (0,) if distinct else None, (3,))
    cs = CandidateSet(prior, 4, 4)
    alpha, delta = 0.5, 1e-3
    costs, deltas = np.full(3, alpha), np.full(3, delta)
    eps_person, delta_person = rule.loss(costs), rule.delta(costs, deltas)
    assert eps_person == pytest.approx(2 * alpha, rel=1e-12)
    glob = ExponentialGlobal(cs, alpha)
    smooth = ExponentialSmooth(cs, alpha, delta)
    worst = 0.0
    for x, y in _person_pairs(3, 3, k, distinct):
        p, q = glob.probabilities(x), glob.probabilities(y)
        worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
        ps, qs = smooth.probabilities(x), smooth.probabilities(y)
        e = math.exp(eps_person)
        excess = max(np.maximum(0, ps - e * qs).sum(), np.maximum(0, qs - e * ps).sum())
        assert excess <= delta_person * (1 + 1e-9)
    assert 0 < worst <= eps_person * (1 + 1e-12)


def test_inference_is_the_same_at_person_level_only_prices_change() -> None:
    """The person rule changes what a fresh answer costs and what fits, never the noise laws: the
    posterior, its interval and confidence are those of the per-row project, to the bit; the system cost
    before and after a spend is k × the per-row one."""
    from dpdesk.engine.answering.workflow import Request, Settings, assess
    from dpdesk.engine.inference.history import History, HistoryRow

    hist = History(SHAPE)
    rows = [([0, 1], 0.2, 13.0), ([1, 2, 3], 0.1, 20.0), ([0, 3], 0.15, 9.0)]
    for cells, a, y in rows:
        q = query_from_json({"indices": cells, "values": [1] * len(cells)}, N, SHAPE)
        hist.append(HistoryRow(q, a, y, "discrete_laplace"))
    req = Request("r", query_from_json({"indices": [0, 1, 3], "values": [1, 1, 1]}, N, SHAPE), 6.0, 0.1)
    row = assess(hist, req, Settings(10.0), rule=ROW_RULE)
    person = assess(hist, req, Settings(10.0), rule=PersonRule(4, None, SHAPE))
    assert row.inference.confidence_at_eps == person.inference.confidence_at_eps
    assert row.inference.credible == person.inference.credible
    assert row.inference.estimate.estimate == person.inference.estimate.estimate
    assert row.spend_alpha == person.spend_alpha and row.decision == person.decision == "spend"
    assert person.budget.system_cost == 4 * row.budget.system_cost
    assert person.budget.system_cost_after == 4 * row.budget.system_cost_after
    # the same request on a total a row fits but a person does not: declined at person level only
    tight = row.budget.system_cost_after * 2
    assert assess(hist, req, Settings(tight), rule=ROW_RULE).decision == "spend"
    assert assess(hist, req, Settings(tight), rule=PersonRule(4, None, SHAPE)).decision == "reject"


def test_zcdp_person_rho_is_the_group_bound() -> None:
    """k rows in one cell: k² ρ (Bun & Steinke's group privacy); k = 1: the largest ρ."""
    rho = np.array([0.02, 0.08, 0.05])
    assert PersonRule(3, None, (3,)).rho(rho) == pytest.approx(9 * 0.08, rel=1e-12)
    assert ROW_RULE.rho(rho) == 0.08
    assert PersonRule(2, (0,), (3,)).rho(rho) == pytest.approx(
        (math.sqrt(0.08) + math.sqrt(0.05)) ** 2, rel=1e-12
    )
