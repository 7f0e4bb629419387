"""Watched claims in real project files (issue 18): kept in the ledger, checked before every release from
public inputs only, recomputed by verify; the CLI's watch add/list/remove and assess --json claims."""

from __future__ import annotations

import json

import pytest

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.vocabulary import delta_of_confidence
from dpdesk.store import Project, db
from dpdesk.store.watch import ClaimDeclined

CELL = 'count(age="0-30", income=">50K")'  # 20 people; cell #1
OTHER = 'count(age="30-150")'  # cells #2, #3: never touches a claim on cell #1


def _ledger_state(path):
    with Project.open(path, "r") as p:
        return [e.hash for e in p.ledger()], [(r.id, r.status) for r in p.requests()]


def test_watch_add_list_remove_on_the_cli_are_ledger_entries_that_verify(store):
    path = store.new_project(budget=5.0, test_project=True)
    out = store.cli(
        "watch", "add", path, "--query", CELL, "--between", "0", "25", "--threshold", "0.8", "--risk", "0.05"
    )
    assert out.returncode == 0 and "watching c1" in out.stdout and "public knowledge or policy" in out.stdout
    out = store.cli(
        "watch",
        "add",
        path,
        "--query",
        'count(age="0-30")',
        "--at-most",
        "5",
        "--threshold",
        "0.9",
        "--risk",
        "0.1",
        "--name",
        "few young",
    )
    assert out.returncode == 0, out.stderr
    listed = json.loads(store.cli("watch", "list", path, "--json").stdout)
    assert [(c["id"], c["low"], c["high"], c["threshold"], c["risk"], c["risk_left"]) for c in listed] == [
        ("c1", 0.0, 25.0, 0.8, 0.05, 0.05),
        ("c2", None, 5.0, 0.9, 0.1, 0.1),
    ]
    assert listed[1]["name"] == "few young" and listed[0]["estimable"] is False  # nothing released yet
    assert store.cli("watch", "remove", path, "c1").returncode == 0
    assert [c["id"] for c in json.loads(store.cli("watch", "list", path, "--json").stdout)] == ["c2"]
    with Project.open(path, "r") as p:
        assert [e.kind for e in p.ledger()] == ["watch", "watch", "unwatch"]
        report = p.verify()
    assert report.ok and dict(report.kinds) == {"watch": 2, "unwatch": 1}
    # a new claim gets a new id: a removed claim's id (and its spent risk) is never reused
    store.cli(
        "watch", "add", path, "--query", CELL, "--between", "0", "25", "--threshold", "0.8", "--risk", "0.05"
    )
    assert [c["id"] for c in json.loads(store.cli("watch", "list", path, "--json").stdout)] == ["c2", "c3"]


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--query", 'count(region="x")', "--between", "0", "3"], "unknown attribute 'region'"),
        (["--query", CELL, "--between", "5", "3"], "L₀ (5) is greater than U₀ (3)"),
        (
            ["--query", CELL, "--between", "0", "3", "--threshold", "1"],
            "threshold τ (1.0) must lie strictly between 0 and 1",
        ),
        (
            ["--query", CELL, "--between", "0", "3", "--risk", "0"],
            "risk budget (0.0) must lie strictly between 0 and 1",
        ),
        (["--query", CELL, "--between", "0", "3", "--risk", "1.5"], "risk budget (1.5)"),
        (["--query", CELL, "--between", "zero", "3"], "--between L: 'zero' is not a number"),
    ],
)
def test_a_bad_claim_is_one_line_exit_2_and_nothing_is_written(store, argv, words):
    path = store.new_project()
    before = store.digest(path)
    args = list(argv)
    for option, value in (("--threshold", "0.8"), ("--risk", "0.05")):
        if option not in args:
            args += [option, value]
    out = store.cli("watch", "add", path, *args)
    assert out.returncode == 2 and words in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert store.digest(path) == before
    assert store.cli("watch", "remove", path, "c1").returncode == 2  # nothing to remove either
    assert store.digest(path) == before


def test_a_release_that_would_make_a_claim_sure_is_declined_before_the_table_is_read(store):
    path = store.new_project(budget=5.0, test_project=True)
    with Project.open(path, "w") as p:
        p.watch(CELL, 0, 25, 0.8, 0.05)
        sure = p.add_request(CELL, 3, 0.1)  # α ≈ 0.64: Pr(C) would reach τ almost surely
        other = p.add_request(OTHER, 5, 0.1)
        a = p.assess(sure.id)
        (status,) = p.claim_statuses(a)
        assert status.verdict == "declined" and status.check.risk > 0.99
        assert status.largest_alpha is not None and status.largest_alpha < a.spend_alpha

        def no_table(*args, **kwargs):
            raise AssertionError("the claim check read the table")

        p.cube = p.snapshot = no_table  # the decision must come from public inputs only
        with pytest.raises(ClaimDeclined) as info:
            p.release(a, SeededSampler(1))
        msg = str(info.value)
        assert "\n" not in msg and "watched claim c1" in msg and "nothing was released" in msg
        assert p.request(sure.id).status == "pending" and [e.kind for e in p.ledger()] == ["watch"]
    with Project.open(path, "w") as p:
        # a request that does not change θ's posterior is unaffected by the claim
        (st,) = p.claim_statuses(p.assess(other.id))
        assert st.verdict == "untouched" and st.check.risk == 0.0
        released = p.answer(other.id, SeededSampler(2))
        assert "claims" not in released.entry.payload and p.claims()[0].spent == 0.0
        # α at the largest value that passes is allowed (risk within what is left)
        from dpdesk.engine.claims.control import check_release

        with p.view().assessing() as s:
            chk = check_release(s.history, s.claims[0].claim, a.request.query, status.largest_alpha)
        assert chk.touches and chk.allowed


def test_a_touching_release_spends_risk_that_verify_recomputes(store, monkeypatch):
    path = store.new_project(budget=5.0, test_project=True)
    with Project.open(path, "w") as p:
        p.watch(CELL, 0, 25, 0.8, 0.7)
        r1 = p.add_request(CELL, 15, 0.1)  # α ≈ 0.15: risk ≈ 0.6 of 0.7
        a = p.assess(r1.id)
        (st,) = p.claim_statuses(a)
        assert st.verdict == "allowed" and 0.3 < st.check.risk <= 0.7
        release = p.release(a, SeededSampler(3))
        (spend,) = release.entry.payload["claims"]
        assert spend["id"] == "c1" and spend["risk"] == pytest.approx(st.check.risk)
        (w,) = p.claims()
        assert w.spent == pytest.approx(st.check.risk) and w.touched == ((release.entry.seq, spend["risk"]),)
        assert p.verify().ok
        # the next touching request finds less risk left: the same kind of release is now declined
        r2 = p.add_request(CELL, 8, 0.1)
        a2 = p.assess(r2.id)
        (st2,) = p.claim_statuses(a2)
        assert a2.decision == "spend"
        assert st2.check.remaining == pytest.approx(0.7 - w.spent) and st2.verdict == "declined"
        # a release that records less risk than it spent is caught by verify's recomputation
        import dpdesk.store.releasing as releasing

        monkeypatch.setattr(
            releasing, "recorded", lambda checks: [{"id": w.id, "risk": 0.0} for w, c in checks]
        )
        p.unwatch("c1")
        p.watch(CELL, 0, 25, 0.8, 0.99)
        r3 = p.add_request(CELL, 8, 0.1)
        bad = p.release(p.assess(r3.id), SeededSampler(4))
        report = p.verify()
    assert not report.ok and report.first_bad_seq == bad.entry.seq
    assert "records 0" in report.problems[0] and "recomputed from public inputs" in report.problems[0]


def test_assess_json_lists_the_claims(store):
    path = store.new_project(budget=5.0, test_project=True)
    store.cli(
        "watch", "add", path, "--query", CELL, "--between", "0", "25", "--threshold", "0.8", "--risk", "0.05"
    )
    store.cli("requests", "add", path, "--query", CELL, "--eps", "3", "--delta", "0.1")
    out = store.cli("assess", path, "--request", "r1", "--json")
    obj = json.loads(out.stdout)
    (c,) = obj["claims"]
    assert {"id", "probability", "risk_of_crossing", "verdict"} <= c.keys()
    assert (
        c["id"] == "c1"
        and c["verdict"] == "declined"
        and c["probability"] is None
        and c["risk_of_crossing"] > 0.99
    )
    text = store.cli("assess", path, "--request", "r1").stdout
    assert "c1" in text and "decision        DECLINED BY CLAIM c1" in text and "SPEND" not in text
    # issue 34 item 7: answer says so as its decision, asks nothing, and exits 3 (2 is bad input)
    out = store.cli("answer", path, "--request", "r1")
    assert out.returncode == 3 and "decision: declined by claim c1 — " in out.stdout
    assert "[y/N]" not in out.stderr and "decision: spend" not in out.stdout


def test_a_format_5_project_migrates_keeping_every_hash(store, monkeypatch):
    assert db.FORMAT_VERSION >= 6  # watched claims came with format 6
    with monkeypatch.context() as m:  # a project written by a dpdesk that knew format 5 (no claims)
        m.setattr(db, "FORMAT_VERSION", 5)
        path = store.new_project(budget=5.0, test_project=True)
        with Project.open(path, "w") as p:
            rid = p.add_request(CELL, 10, 0.1).id
            p.answer(rid, SeededSampler(5))
            old_head = p.head()[1]
            assert p.connection.execute("PRAGMA user_version").fetchone()[0] == 5
    hashes, _ = _ledger_state(path)
    with Project.open(path, "r") as p:  # read-only: nothing migrates, and no claim is watched
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == 5 and p.claims() == ()
    with Project.open(path, "w") as p:
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == db.FORMAT_VERSION
        w = p.watch(CELL, 0, 25, 0.8, 0.05)
        assert w.id == "c1" and [e.hash for e in p.ledger()][:1] == hashes
        report = p.verify(extends=[old_head])
    assert report.ok


def test_claim_errors_from_the_store_name_the_claim(store):
    path = store.new_project()
    with Project.open(path, "w") as p:
        with pytest.raises(DpdeskError, match=r"^claim: count\(age=\"0-30\"\): give L₀, U₀ or both"):
            p.watch('count(age="0-30")', None, None, 0.8, 0.1)
        with pytest.raises(DpdeskError, match="no watched claim 'c4'"):
            p.unwatch("c4")
        assert p.ledger() == []


def test_other_release_kinds_pass_the_same_gate(store):
    from dpdesk.engine.partition.guarantee import preview
    from dpdesk.engine.partition.plan import cells_plan
    from dpdesk.engine.partition.release_plan import PartitionReleasePlan
    from dpdesk.engine.selection.plan import plan_selection
    from dpdesk.engine.selection.query import parse_selection

    path = store.new_project(budget=5.0, test_project=True)
    with Project.open(path, "w") as p:
        p.watch(CELL, 0, 25, 0.8, 0.05)

        def select(text):
            q = parse_selection(text, p.schema)
            return plan_selection(
                q, p.schema, alpha=0.5, total_budget=5.0, cell_costs=p.view().cell_costs, basis=p.basis()
            )

        # report-noisy-max on the claim's cell: not a noisy linear answer, so the worst case
        with pytest.raises(ClaimDeclined, match="beyond noisy linear answers"):
            p.release(select('argmax(age | income=">50K")'), SeededSampler(1))
        # on other cells it does not touch the claim
        assert p.release(select('argmax(age | income="<=50K")'), SeededSampler(1)).kind == "selection"
        # a partition release's rows are checked after the draw, before anything is recorded
        pv = preview(cells_plan(p.schema), alpha=0.5, total_budget=5.0, cell_costs=p.view().cell_costs)
        with pytest.raises(ClaimDeclined, match="watched claim c1"):
            p.release(PartitionReleasePlan(pv, p.basis()), SeededSampler(4))
        assert [e.kind for e in p.ledger()] == ["watch", "selection"] and p.verify().ok


def test_the_claims_counter_offer_releases_at_the_largest_alpha_that_passes(store):
    """Issue 18 item 3: a declined request is offered a fresh answer at the largest α that passes, at
    the ±ε that α buys; accepting it (requests edit) then answering records one entry at that α."""
    path = store.new_project(budget=5.0, test_project=True)
    store.cli(
        "watch", "add", path, "--query", CELL, "--between", "0", "25", "--threshold", "0.8", "--risk", "0.05"
    )
    store.cli("requests", "add", path, "--query", CELL, "--eps", "3", "--delta", "0.1")
    from dpdesk.store.watching import offer_within_claims

    with Project.open(path, "r") as p:
        a = p.assess("r1")
        (status,) = p.claim_statuses(a)
        offer = offer_within_claims([status], a, 5.0)
    assert status.verdict == "declined" and status.largest_alpha is not None
    # the offer spends no more than the claim allows, at the narrowest ±ε that α buys (3 digits, rounded up)
    assert offer.alpha <= status.largest_alpha and offer.eps > 3 and offer.delta == 0.1
    assert a.noise.alpha_for(a.sensitivity, offer.eps * (1 - 2e-3), 0.1) > status.largest_alpha
    assert offer.free_delta is None  # nothing released yet: history offers nothing for free
    text = store.cli("assess", path, "--request", "r1").stdout
    assert (
        f"ε = {offer.alpha:.4g}" in text
        and f"--accuracy {offer.eps:g}" in text
        and "not the ±3 asked" in text
    )
    assert f"within ±{offer.eps:g} at 90 %" in text and "α" not in text
    before = store.digest(path)
    out = store.cli("requests", "edit", path, "--request", "r1", "--eps", "nine")
    assert out.returncode == 2 and "eps" in out.stderr and store.digest(path) == before
    assert store.cli("requests", "edit", path, "--request", "r1", "--eps", f"{offer.eps:g}").returncode == 0
    out = store.cli("answer", path, "--request", "r1", "--yes")
    assert out.returncode == 0, out.stderr
    with Project.open(path, "r") as p:
        fresh = [e for e in p.ledger() if e.kind == "fresh"]
        (w,) = p.claims()
        report = p.verify()
    assert len(fresh) == 1 and float(fresh[0].payload["alpha"]) == pytest.approx(offer.alpha, rel=1e-12)
    assert float(fresh[0].payload["eps"]) == pytest.approx(offer.eps)
    # the release touched the claim and spent no more risk than it had (verify recomputes that)
    assert w.touched == ((fresh[0].seq, w.spent),) and 0 <= w.spent <= w.claim.risk and report.ok
    # once history estimates the query, the offer also names its free (inference-only) answer, with the
    # confidence history gives the ±ε asked; accepting that δ releases it for nothing
    store.cli("requests", "add", path, "--query", CELL, "--eps", "3", "--delta", "0.1")
    with Project.open(path, "r") as p:
        a2 = p.assess("r2")
        offer2 = offer_within_claims(p.claim_statuses(a2), a2, 5.0)
    assert offer2.free_delta is not None and 1 - offer2.free_delta <= offer2.free_confidence + 1e-9
    text = store.cli("assess", path, "--request", "r2").stdout
    flag = text.split("--confidence ")[1].split()[0]
    assert delta_of_confidence(flag) == offer2.free_delta and "free from history" in text
    assert (
        store.cli("requests", "edit", path, "--request", "r2", "--delta", f"{offer2.free_delta:g}").returncode
        == 0
    )
    assert store.cli("answer", path, "--request", "r2", "--yes").returncode == 0
    with Project.open(path, "r") as p:
        last = p.ledger()[-1]
        assert last.kind == "inferred" and last.request_id == "r2" and p.claims()[0].spent == w.spent


@pytest.mark.parametrize(
    "text, alpha",
    [
        ('posterior(income | age="0-30"; prior=1; mechanism=laplace)', 1.0),  # noisy counts: history rows
        ('posterior(income | age="0-30"; prior=1; mechanism=global)', 1.0),  # a noisy size, then a choice
        ('argmax(income | age="0-30")', 1.0),  # no rows: the whole charge on the claim's cell
        ('posterior(income | age="30-150"; prior=1; mechanism=laplace)', 1.0),  # away from the claim
    ],
)
def test_every_kind_has_its_claim_verdict_before_the_draw_and_the_release_keeps_it(store, text, alpha):
    """Issue 34 item 7: a max/argmax or posterior request is checked against the watched claims in its
    preview, from public inputs only, with the verdict and risk the release path then applies."""
    path = store.new_project(budget=5.0, test_project=True)
    with Project.open(path, "w") as p:
        p.watch(CELL, 0, 25, 0.8, 0.05)
        rid = p.add_request(text, alpha=alpha).id
        plan = p.assess(rid)
        (status,) = p.claim_statuses(plan)
        assert status.check is not None, "no verdict before the draw"
        before = len(p.ledger())
        if status.verdict == "declined":
            with pytest.raises(ClaimDeclined):
                p.release(plan, SeededSampler(3))
            assert len(p.ledger()) == before  # nothing drawn, nothing recorded
        else:
            release = p.release(plan, SeededSampler(3))
            recorded = {c["id"]: c["risk"] for c in release.entry.payload.get("claims", ())}
            assert recorded == ({"c1": pytest.approx(status.check.risk)} if status.check.touches else {})
    if "30-150" in text:
        assert status.verdict == "untouched"
    else:
        assert status.verdict == "declined"
        out = store.cli("answer", path, "--request", rid)
        assert out.returncode == 3 and "decision: declined by claim c1" in out.stdout
