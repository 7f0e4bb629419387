"""``LedgerView.largest_charges`` (each release's α in the audit report and the CSV export) reads each
release's query, never a dense vector of the cube, and gives exactly the dense definition's numbers."""

from __future__ import annotations

import numpy as np

from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.query import Query, Term, query_from_vector
from dpdesk.store import Project


def dense_largest(charge: Charge, n: int) -> float:
    """The definition: the most any one cell pays, from the dense per-cell charge."""
    return float(charge.dense(n).max()) if charge.terms and n else 0.0


def test_a_real_project_s_largest_charges_are_the_dense_maxima_of_every_release_kind(store):
    from dpdesk.engine.dirichlet.plan import assess_posterior
    from dpdesk.engine.dirichlet.request import parse_posterior
    from dpdesk.engine.partition.guarantee import preview
    from dpdesk.engine.partition.plan import cells_plan
    from dpdesk.engine.partition.release_plan import PartitionReleasePlan
    from dpdesk.engine.selection.plan import plan_selection
    from dpdesk.engine.selection.query import parse_selection

    path = store.new_project(budget=1e3, test_project=True, delta_cap=1e-5)
    with Project.open(path, "w") as p:
        sampler = SeededSampler(3)
        for query, eps in (
            ('count(age="0-30")', 0.7),
            ([0.3, -1.7, 0.1, 2.9], 0.37),
            ('count(income=">50K")', 3.1),
        ):
            p.release(p.assess(p.add_request(query, eps, 0.05).id), sampler)
        view = p.view()
        pv = preview(cells_plan(p.schema), alpha=0.3, total_budget=1e3, cell_costs=view.cell_costs)
        p.release(PartitionReleasePlan(pv, p.basis()), sampler)
        view = p.view()
        q = parse_posterior('posterior(income | age="30-150"; prior=1)', p.schema)
        p.release(
            assess_posterior(
                q,
                mechanism="exponential-smooth",
                budget=0.9,
                delta=1e-6,
                size=31,
                cell_costs=view.cell_costs,
                total_budget=1e3,
                cell_deltas=view.cell_deltas,
                basis=p.basis(),
            ),
            sampler,
        )
        sel = parse_selection('argmax(age | income=">50K")', p.schema)
        p.release(
            plan_selection(
                sel, p.schema, alpha=0.45, total_budget=1e3, cell_costs=p.view().cell_costs, basis=p.basis()
            ),
            sampler,
        )
        r = p.add_request([1, 1, 0, 0], 1e3, 0.5)
        assert p.release(p.assess(r.id)).alpha == 0.0  # inferred: free
        view, n = p.view(), p.schema.n_cells
        releases = view.releases
        kinds = {rel.entry.kind for rel in releases}
        assert {"partition", "posterior", "selection", "inferred"} <= kinds and len(releases) == 7
        expected = {rel.entry.seq: dense_largest(rel.contribution.charge, n) for rel in releases}
        assert view.largest_charges() == expected  # exactly, not approximately
        assert sorted(set(expected.values()))[0] == 0.0 and len(set(expected.values())) >= 5


def test_charges_of_product_sparse_and_summed_queries_give_the_dense_maximum_exactly():
    rng = np.random.default_rng(20)
    shape = (3, 5, 4, 7)
    n = int(np.prod(shape))
    for _ in range(200):
        factors = [np.where(rng.random(k) < 0.4, 0.0, rng.normal(size=k)) for k in shape]
        for f in factors:
            f[rng.integers(len(f))] = rng.normal()  # never an all-zero factor
        product = Query(shape, terms=(Term(float(rng.normal()), tuple(factors)),))
        two = Query(
            shape, terms=(Term(1.3, tuple(factors)), Term(-0.7, tuple(rng.normal(size=k) for k in shape)))
        )
        vector = np.where(rng.random(n) < 0.9, 0.0, rng.normal(size=n))
        vector[rng.integers(n)] = 1.0
        sparse = query_from_vector(vector, shape)
        scale, uniform = float(rng.random() * 3), float(rng.random())
        for q in (product, two, sparse):
            for charge in (
                Charge((ChargeTerm(scale, q),)),
                Charge((ChargeTerm(uniform), ChargeTerm(scale, q))),
                Charge((ChargeTerm(scale, q), ChargeTerm(uniform)), 1e-7),
            ):
                assert charge.largest(n) == dense_largest(charge, n)
    several = Charge((ChargeTerm(0.5, product), ChargeTerm(0.25, sparse)))  # the dense fallback
    assert several.largest(n) == dense_largest(several, n)
    assert Charge().largest(n) == 0.0 and Charge((ChargeTerm(0.5),)).largest(0) == 0.0
