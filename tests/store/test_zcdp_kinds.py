"""Every release kind priced in a zCDP project (issue 37, item 4): a kind whose mechanism is pure ε (a
partition release, report-noisy-max, a Dirichlet posterior) is charged ρ = α²/2 per cell it charges α
(Bun–Steinke Prop. 1.4), previewed and hard-stopped on the converted ε; a batch plan measures with the
discrete Gaussian. The reference figures are computed here from the definitions, and the conversion is
OpenDP's."""

from __future__ import annotations

import pytest

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.store import Project

dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")


def opendp_epsilon(rho: float, delta: float = 1e-6) -> float:
    m = dp.m.make_gaussian(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=(1 / (2 * rho)) ** 0.5
    )
    return float(dp.c.make_zCDP_to_approxDP(m).map(1.0).epsilon(delta))


def zcdp_project(store, name="z.dpdesk", budget=1.0):
    path = store.dir / name
    Project.create(
        path,
        name="z",
        schema=store_schema(store),
        source_location=str(store.table),
        total_budget=budget,
        test_project=True,
        accounting="zcdp",
        delta=1e-6,
    ).close()
    return path


def store_schema(store):
    import json

    return json.loads(store.schema_file.read_text(encoding="utf-8"))


def test_a_partition_release_costs_alpha_squared_over_two_per_cell(store):
    """α = 0.15 per cell is over the ρ budget (0.0244) read as ε, within it as ρ = 0.01125: it fits."""
    path = zcdp_project(store)
    ran = store.cli("release", "plan", path, "--cells", "--alpha", "0.15")
    assert ran.returncode == 0, ran.stderr
    assert "DOES NOT FIT" not in ran.stdout
    rho = 0.15**2 / 2
    assert f"ε = 0 now → {opendp_epsilon(rho):.6g} after" in ran.stdout.replace("  ", " ")
    ran = store.cli("release", "publish", path, "--cells", "--alpha", "0.15", "--yes")
    assert ran.returncode == 0, ran.stderr
    with Project.open(path) as p:
        assert p.view().cell_costs.tolist() == pytest.approx([rho] * 4, rel=1e-12)
        report = p.verify()
        assert report.ok and report.epsilon_spent == pytest.approx(opendp_epsilon(rho), rel=1e-9)
    # a second one at α = 0.15 would take every cell to ρ = 0.0225 (ε ≈ 0.96): fits; a third does not
    assert store.cli("release", "publish", path, "--cells", "--alpha", "0.15", "--yes").returncode == 0
    third = store.cli("release", "publish", path, "--cells", "--alpha", "0.15", "--yes")
    assert third.returncode != 0 and "DOES NOT FIT" in third.stdout
    assert opendp_epsilon(3 * rho) > 1.0 >= opendp_epsilon(2 * rho)


def test_report_noisy_max_and_a_posterior_are_priced_through_their_epsilon(store):
    from dpdesk.engine.dirichlet.plan import assess_request
    from dpdesk.engine.dirichlet.request import parse_posterior
    from dpdesk.engine.selection.plan import plan_selection
    from dpdesk.engine.selection.query import parse_selection

    path = zcdp_project(store)
    with Project.open(path, "w") as p:
        inputs = p.plan_inputs()
        q = parse_selection('argmax(age | income=">50K")', p.schema)
        plan = plan_selection(
            q,
            p.schema,
            alpha=0.1,
            total_budget=inputs["total_budget"],
            cell_costs=inputs["cell_costs"],
            basis=inputs["basis"],
            accounting=inputs["accounting"],
        )
        assert plan.releasable and plan.budget.system_cost_after == pytest.approx(0.005, rel=1e-12)
        p.release(plan, SeededSampler(1))
        assert p.view().cell_costs.tolist() == pytest.approx([0, 0.005, 0, 0.005], rel=1e-12)
        post = assess_request(
            parse_posterior('posterior(income | age="30-150"; prior=1)', p.schema),
            mechanism="exponential-global",
            budget=0.1,
            size=31,
            **p.plan_inputs(),
        )
        assert post.releasable
        p.release(post, SeededSampler(2))
        # the box age 30-150 is cells 2 and 3: ρ = 0.1²/2 more there
        assert p.view().cell_costs.tolist() == pytest.approx([0, 0.005, 0.005, 0.01], rel=1e-12)
        assert p.verify().ok


def test_a_pure_epsilon_release_the_total_cannot_take_is_refused_at_record_time(store):
    """The release path converts whatever a plan says: a partition plan priced as if in pure ε (no
    accounting given) is still charged ρ and stopped on the converted figure."""
    from dpdesk.engine.errors import BudgetError
    from dpdesk.engine.partition.guarantee import preview
    from dpdesk.engine.partition.plan import cells_plan
    from dpdesk.engine.partition.release_plan import PartitionReleasePlan

    path = zcdp_project(store)
    with Project.open(path, "w") as p:
        pv = preview(cells_plan(p.schema), alpha=0.3, total_budget=10.0, cell_costs=p.view().cell_costs)
        with pytest.raises(BudgetError, match=r"ε = .* at δ = 1e-06"):
            p.release(PartitionReleasePlan(pv, p.basis()), SeededSampler(4))
        assert p.ledger() == []


def test_a_batch_plan_measures_with_the_discrete_gaussian(store):
    from dpdesk.store.batch import plan_pending, release_batch

    path = zcdp_project(store)
    with Project.open(path, "w") as p:
        for text in ('count(age="0-30")', 'count(age="30-150")', 'count(income=">50K")'):
            p.add_request(text, 12.0, 0.05)
        plan = plan_pending(p)
        assert plan.measurements and {m.family for m in plan.measurements} == {"discrete_gaussian"}
        after = p.view().cell_costs.copy()
        for m in plan.measurements:  # ρ_j = (α|Q_j|/S)²/2, from the definition
            q = m.query
            after += (m.alpha * abs(q.dense()) / q.sensitivity) ** 2 / 2
        assert plan.system_cost_after == pytest.approx(float(after.max()), rel=1e-9)
        assert plan.total_budget == p.accounting.budget
        release_batch(p, plan, SeededSampler(5))
        assert p.view().cell_costs.tolist() == pytest.approx(after.tolist(), rel=1e-9)
        kinds = [e.kind for e in p.ledger()]
        assert kinds.count("measurement") == len(plan.measurements)
        report = p.verify()
        assert report.ok and report.epsilon_spent == pytest.approx(
            opendp_epsilon(float(after.max())), rel=1e-9
        )


def test_the_counter_offer_fits_the_rho_left_exactly(store):
    """A request the budget cannot pay for: the counter-offer's α is the largest whose ρ, (α|Q_j|/S)²/2,
    still fits the cell's ρ left — and a release at it is accepted."""
    from dpdesk.engine.answering.counteroffer import counter_offer

    path = zcdp_project(store, budget=0.3)
    with Project.open(path, "w") as p:
        r = p.add_request('count(age="0-30")', 2.0, 0.05)
        a = p.assess(r.id)
        assert a.decision == "reject"
        total = p.answering_settings().total_budget
        offer = counter_offer(a, total)
        # a fresh project: the cell's ρ left is the total; the offer's ±ε is rounded up to a tidy number,
        # so its α is a little under the largest that fits (a linear headroom in ρ would be ~300× smaller)
        assert 0.99 * total <= offer.alpha**2 / 2 <= total * (1 + 1e-12)
        assert offer.eps is not None and offer.eps > 2.0
        r2 = p.add_request('count(age="0-30")', offer.eps, 0.05)
        a2 = p.assess(r2.id)
        assert a2.decision == "spend" and a2.spend_alpha <= offer.alpha * (1 + 1e-9)
        p.release(a2, SeededSampler(3))
        assert p.verify().ok
