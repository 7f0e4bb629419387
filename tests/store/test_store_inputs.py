"""Bad input everywhere: a clear one-line message, exit code 2, nothing written (file hash unchanged)."""

from __future__ import annotations

import json

import pytest

from dpdesk.store import Project


def _cli_refuses(forks, path, *args, match: str) -> str:
    before = _state(path)
    res = forks.run(*args)
    assert res["code"] == 2, (args, res)
    line = res["output"].strip().splitlines()[-1]
    assert line.startswith("dpdesk: error:") and match in line, (args, line)
    assert "Traceback" not in res["output"] and "UNCAUGHT" not in res["output"]
    assert _state(path) == before, args
    return line


def _state(path):
    from hashlib import sha256

    data = path.read_bytes() if path.exists() else None
    with Project.open(path, "r") as p:  # the file's content, including anything still in its WAL
        ledger = [e.hash for e in p.ledger()]
        requests = [r.to_json() for r in p.requests()]
        source = p.source
    return sha256(data).hexdigest() if data else None, ledger, json.dumps(requests), source


@pytest.fixture
def answered(store, forks):
    path = store.new_project(budget=5)
    with Project.open(path, "w") as p:
        p.add_request("[1,0,0,0]", 5, 0.1)
        p.add_request("[0,1,0,0]", 5, 0.1)
        p.add_request("[0,0,1,1]", 5, 0.1)
        p.answer("r1")
        p.reject("r2")
    return path


def test_bad_requests_and_decisions(store, forks, answered):
    p = answered
    _cli_refuses(forks, p, "answer", p, "--request", "nope", "--yes", match="no request with id 'nope'")
    _cli_refuses(forks, p, "reject", p, "--request", "nope", match="no request with id 'nope'")
    _cli_refuses(
        forks,
        p,
        "answer",
        p,
        "--request",
        "r1",
        "--yes",
        match="was already answered (fresh, ledger entry 1)",
    )
    _cli_refuses(forks, p, "answer", p, "--request", "r2", "--yes", match="was already rejected")
    _cli_refuses(forks, p, "reject", p, "--request", "r1", match="already answered")
    for eps, delta, match in (
        ("0", "0.1", "eps"),
        ("-1", "0.1", "eps"),
        ("nan", "0.1", "eps"),
        ("abc", "0.1", "eps"),
        ("1", "0", "delta"),
        ("1", "1", "delta"),
        ("1", "1.5", "delta"),
        ("1", "-0.1", "delta"),
    ):
        _cli_refuses(
            forks,
            p,
            "requests",
            "add",
            p,
            "--query",
            "[1,0,0,0]",
            "--eps",
            eps,
            "--delta",
            delta,
            match=match,
        )
    _cli_refuses(
        forks,
        p,
        "requests",
        "add",
        p,
        "--query",
        'count(age="90-100")',
        "--eps",
        "1",
        "--delta",
        "0.1",
        match="90-100",
    )
    _cli_refuses(
        forks, p, "requests", "add", p, "--query", "[1,0]", "--eps", "1", "--delta", "0.1", match="cells"
    )
    _cli_refuses(
        forks,
        p,
        "requests",
        "add",
        p,
        "--query",
        "[1,0,0,0]",
        "--eps",
        "1",
        "--delta",
        "0.1",
        "--id",
        "r1",
        match="already exists",
    )


def test_import_is_all_or_nothing(store, forks, answered):
    good_then_bad = store.dir / "reqs.csv"
    good_then_bad.write_text('query,eps,delta,requester\n"[1,0,0,0]",2,0.1,ann\n"[0,1,0,0]",2,1.5,bob\n')
    _cli_refuses(
        forks, answered, "requests", "import", answered, good_then_bad, match="reqs.csv row 3: delta"
    )
    as_json = store.dir / "reqs.json"
    as_json.write_text(
        json.dumps(
            [
                {"query": 'count(age="0-30")', "eps": 2, "delta": 0.1},
                {"query": "[0,0,0,1]", "eps": 0, "delta": 0.1},
            ]
        )
    )
    _cli_refuses(forks, answered, "requests", "import", answered, as_json, match="reqs.json item 1: eps")
    ok = store.dir / "ok.csv"
    ok.write_text(
        'query,eps,delta,requester,id\n"count(income="">50K"")",2,0.1,ann,a1\n"[0,1,0,0]",3,0.2,,\n'
    )
    res = forks.run("requests", "import", answered, ok)
    assert res["code"] == 0, res
    with Project.open(answered, "r") as pr:
        got = {r.id: r for r in pr.requests()}
        assert got["a1"].requester == "ann" and got["a1"].query_text == 'count(income=">50K")'
        assert got["r5"].eps == 3 and got["r5"].delta == 0.2


def test_unconfirmed_answer_writes_nothing(store, forks, answered):
    before = _state(answered)
    res = forks.run("answer", answered, "--request", "r3")  # stdin is at end of file
    assert res["code"] == 1 and "not confirmed" in res["output"]
    assert _state(answered) == before


def test_project_new_refuses_without_creating_anything(store, forks):
    target = store.dir / "new.dpdesk"
    wrong = store.dir / "wrong.schema.json"
    wrong.write_text(
        json.dumps({"attributes": [{"name": "sex", "kind": "categorical", "values": ["f", "m"]}]})
    )
    cases = [
        (["--schema", wrong, "--source", store.table], "no column 'sex'"),
        (["--schema", store.schema_file, "--source", store.dir / "gone.csv"], "gone.csv"),
        (["--schema", store.schema_file, "--source", store.table, "--budget", "0"], "total budget"),
        (["--schema", store.schema_file, "--source", store.table, "--budget", "-1"], "total budget"),
    ]
    for extra, match in cases:
        args = ["project", "new", target, *extra]
        if "--budget" not in extra:
            args += ["--budget", "1"]
        res = forks.run(*args)
        assert res["code"] == 2 and match in res["output"], (extra, res)
        assert not target.exists() and not list(store.dir.glob("*.creating*")), extra
    existing = store.new_project()
    before = store.digest(existing)
    res = forks.run(
        "project", "new", existing, "--schema", store.schema_file, "--source", store.table, "--budget", "1"
    )
    assert res["code"] == 2 and "already exists" in res["output"]
    assert store.digest(existing) == before


def test_changed_or_vanished_source_refuses_until_rebind(store, forks):
    path = store.new_project(budget=10)
    with Project.open(path, "w") as p:
        p.add_request("[1,0,0,0]", 5, 0.1)
        p.add_request("[0,1,0,0]", 5, 0.1)
    original = store.table.read_text()
    store.table.write_text(original + "12,<=50K\n")
    _cli_refuses(forks, path, "answer", path, "--request", "r1", "--yes", match="changed since it was bound")
    res = forks.run("project", "info", path)  # read-only use still works, and says so
    assert res["code"] == 0 and "changed since it was bound" in res["output"]
    assert forks.run("verify", path)["code"] == 0

    store.table.unlink()
    _cli_refuses(forks, path, "answer", path, "--request", "r1", "--yes", match="people.csv")
    _cli_refuses(forks, path, "project", "rebind", path, match="people.csv")

    store.table.write_text(original + "12,<=50K\n")
    res = forks.run("project", "rebind", path)
    assert res["code"] == 0 and "ledger entry 1" in res["output"], res
    with Project.open(path, "r") as p:
        (entry,) = p.ledger()
        prev, cur = entry.payload["previous"], entry.payload["current"]
        assert entry.kind == "rebind" and prev["key_id"] == cur["key_id"] == p.source.key_id
        assert prev["fingerprint"] != cur["fingerprint"] and prev["salt"] != cur["salt"]
        assert "row_count" not in cur and "out_of_domain" not in cur  # no count of the data (DESIGN §4)
        assert p.verify().ok
    res = forks.run("answer", path, "--request", "r1", "--yes")
    assert res["code"] == 0, res
    res = forks.run("project", "rebind", path)
    assert res["code"] == 0 and "unchanged" in res["output"]


def test_spend_policy_from_the_command_line(store):
    path = store.new_project()
    shown = store.cli("project", "policy", path)
    assert shown.returncode == 0 and "greedy" in shown.stdout
    before = store.digest(path)
    for bad, needle in (
        (["--pace", "0.6", "0.5"], "floor"),
        (["--pace", "0", "1.5"], "cap"),
        (["--pace", "0.1", "0.5", "--greedy"], "either"),
    ):
        r = store.cli("project", "policy", path, *bad)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
        assert store.digest(path) == before
    r = store.cli("project", "policy", path, "--pace", "0.1", "0.5")
    assert r.returncode == 0 and "at least 10%" in r.stdout and "more than 50%" in r.stdout
    info = json.loads(store.cli("project", "info", path, "--json").stdout)
    assert info["spend_policy"] == {"floor": 0.1, "cap": 0.5}
    # the CLI's answer follows the stored policy and records it
    store.cli("requests", "add", path, "--query", "[1,1,0,0]", "--eps", "200", "--delta", "0.2", "--id", "r1")
    paced = json.loads(store.cli("assess", path, "--request", "r1", "--json").stdout)
    greedy = json.loads(store.cli("assess", path, "--request", "r1", "--json", "--pace", "0", "1").stdout)
    assert paced["policy"].startswith("pacing") and greedy["policy"] == "greedy"
    assert paced["spend_alpha"] == pytest.approx(0.1) and greedy["spend_alpha"] < paced["spend_alpha"]
    assert paced["needed_alpha"] == pytest.approx(greedy["spend_alpha"])
    out = store.cli("answer", path, "--request", "r1", "--yes", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["release"]["alpha"] == pytest.approx(paced["spend_alpha"])
    with Project.open(path, "r") as p:
        assert p.entry_for("r1").payload["needed_alpha"] == pytest.approx(greedy["spend_alpha"])
        assert p.verify().ok
    assert store.cli("project", "policy", path, "--greedy").returncode == 0
    assert json.loads(store.cli("project", "info", path, "--json").stdout)["spend_policy"] is None
    # set at creation; a bad policy creates nothing
    made = store.dir / "paced.dpdesk"
    r = store.cli(
        "project",
        "new",
        made,
        "--schema",
        store.schema_file,
        "--source",
        store.table,
        "--budget",
        "1",
        "--pace",
        "0.05",
        "0.25",
    )
    assert r.returncode == 0 and "at least 5%" in r.stdout
    refused = store.dir / "refused.dpdesk"
    r = store.cli(
        "project",
        "new",
        refused,
        "--schema",
        store.schema_file,
        "--source",
        store.table,
        "--budget",
        "1",
        "--pace",
        "0.5",
        "0.25",
    )
    assert r.returncode == 2 and not refused.exists() and "floor" in r.stderr


def test_known_bounds_from_the_command_line(store):
    path = store.new_project()
    assert "flat" in store.cli("project", "prior", path).stdout
    before = store.digest(path)
    for bad, needle in ((["--table-size", "-3"], "table size"), (["--table-size", "10", "--flat"], "either")):
        r = store.cli("project", "prior", path, *bad)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
        assert store.digest(path) == before
    r = store.cli("project", "prior", path, "--table-size", "100")
    assert r.returncode == 0 and "at most 100 records" in r.stdout
    assert json.loads(store.cli("project", "info", path, "--json").stdout)["declared_table_size"] == 100
    store.cli("requests", "add", path, "--query", "[0,1,0,0]", "--eps", "5", "--delta", "0.2", "--id", "r1")
    a = json.loads(store.cli("assess", path, "--request", "r1", "--json").stdout)
    assert a["prior"] == "bounded [0, 100]"
    what_if = json.loads(store.cli("assess", path, "--request", "r1", "--json", "--table-size", "7").stdout)
    assert what_if["prior"] == "bounded [0, 7]"
    assert store.cli("project", "prior", path, "--flat").returncode == 0
    assert json.loads(store.cli("project", "info", path, "--json").stdout)["declared_table_size"] is None
