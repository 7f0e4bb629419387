"""Issue 34 item 9: the command line speaks the DP ecosystem's words (``--accuracy A --confidence C``,
``--epsilon E``), and what people wrote before keeps working: the former flags (``--eps``, ``--delta``,
``--alpha``, hidden from ``--help``) store the same request, old project files open and are shown in
the new words, and the stable JSON fields keep their names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpdesk.cli import main
from dpdesk.store import Project, db

PAPER = Path(__file__).resolve().parents[2] / "resources" / "examples" / "paper.history.json"
CELL = 'count(age="0-30")'


def _run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _listed(capsys, path) -> dict[str, dict]:
    code, out, _ = _run(capsys, "requests", "list", path, "--json")
    assert code == 0
    return {r["id"]: r for r in json.loads(out)}


def test_the_new_and_the_former_flags_queue_the_same_request(store, capsys):
    path = store.new_project(budget=2.0)
    queued = {
        "old": ("--eps", "40", "--delta", "0.05"),
        "new": ("--accuracy", "40", "--confidence", "0.95"),
        "pct": ("--accuracy", "40", "--confidence", "95%"),
    }
    for rid, flags in queued.items():
        code, out, err = _run(capsys, "requests", "add", path, "--query", CELL, *flags, "--id", rid)
        assert code == 0, err
        assert f"queued {rid}: " in out and "(count; ±40 at 95 %)" in out
    code, out, err = _run(
        capsys, "requests", "add", path, "--query", "max(age)", "--alpha", "0.5", "--id", "m1"
    )
    assert code == 0 and "(selection; ε = 0.5)" in out, err
    code, out, err = _run(
        capsys, "requests", "add", path, "--query", "max(age)", "--epsilon", "0.5", "--id", "m2"
    )
    assert code == 0 and "(selection; ε = 0.5)" in out, err
    rows = _listed(capsys, path)
    # the request file's fields keep their names, and 0.95 is stored as exactly the δ 0.05 typed before
    for rid in queued:
        assert (rows[rid]["eps"], rows[rid]["delta"], rows[rid]["alpha"]) == (40.0, 0.05, None)
    assert rows["m1"]["alpha"] == rows["m2"]["alpha"] == 0.5
    texts = {rid: _run(capsys, "assess", path, "--request", rid)[1].replace(rid, "R") for rid in queued}
    assert texts["old"] == texts["new"] == texts["pct"]
    assert "±40 at 95 % confidence" in texts["new"] and "fresh answer    ε = " in texts["new"]
    assert "α" not in texts["new"] and "δ" not in texts["new"]
    # a counter-offer accepted with either name edits the same way
    assert _run(capsys, "requests", "edit", path, "--request", "old", "--eps", "50")[0] == 0
    assert _run(capsys, "requests", "edit", path, "--request", "new", "--accuracy", "50")[0] == 0
    assert _run(capsys, "requests", "edit", path, "--request", "pct", "--delta", "0.1")[0] == 0
    rows = _listed(capsys, path)
    assert rows["old"]["eps"] == rows["new"]["eps"] == 50.0 and rows["pct"]["delta"] == 0.1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--accuracy", "4", "--eps", "4", "--confidence", "0.95"), "not allowed with argument"),
        (("--accuracy", "4", "--confidence", "0.95", "--delta", "0.05"), "not allowed with argument"),
        (("--accuracy", "4", "--confidence", "1"), "confidence ('1') must lie strictly between 0 and 1"),
        (("--accuracy", "4", "--confidence", "high"), "confidence ('high') is not a number"),
    ],
)
def test_a_flag_with_its_former_name_or_a_bad_confidence_is_one_line_exit_2(store, capsys, argv, message):
    path = store.new_project()
    before = store.digest(path)
    with pytest.raises(SystemExit) as stop:
        main(["requests", "add", str(path), "--query", CELL, *argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and err.count("\n") == 1
    assert store.digest(path) == before


def test_help_shows_only_the_new_flags(capsys):
    for argv in (
        ["requests", "add"],
        ["requests", "edit"],
        ["assess"],
        ["release", "plan"],
        ["release", "select"],
    ):
        with pytest.raises(SystemExit):
            main([*argv, "--help"])
        text = capsys.readouterr().out
        assert "--confidence" in text
        assert "--eps " not in text and "--delta " not in text and "--alpha" not in text, argv
        assert "--epsilon" in text or "--accuracy" in text


def test_assess_and_release_take_the_former_flags_as_the_new(store, capsys):
    new = _run(
        capsys,
        "assess",
        "--history",
        PAPER,
        "--query",
        "[1,0,1,0]",
        "--accuracy",
        60,
        "--confidence",
        0.95,
        "--json",
    )
    old = _run(
        capsys, "assess", "--history", PAPER, "--query", "[1,0,1,0]", "--eps", 60, "--delta", 0.05, "--json"
    )
    drop = ("elapsed_ms",)
    strip = [{k: v for k, v in json.loads(r[1]).items() if k not in drop} for r in (new, old)]
    assert new[0] == old[0] == 0 and strip[0] == strip[1]
    path = store.new_project(budget=1.0)
    plans = [
        _run(capsys, "release", "plan", path, "--marginals", "1", *flags, "--json")
        for flags in (("--epsilon", 0.3, "--confidence", 0.9), ("--alpha", 0.3, "--delta", 0.1))
    ]
    assert plans[0][0] == plans[1][0] == 0
    shown = [json.loads(text) for _, text, _ in plans]
    for obj in shown:
        obj.pop("elapsed_ms")
    assert shown[0] == shown[1] and shown[0]["delta"] == 0.1


def test_a_project_written_before_the_new_words_opens_and_reads_in_them(store, capsys, monkeypatch):
    """A format-1 file (the oldest dpdesk wrote) with a queued count and an answered one."""
    from dpdesk.engine.mechanisms.noise import SeededSampler

    with monkeypatch.context() as m:
        m.setattr(db, "FORMAT_VERSION", 1)
        path = store.new_project(test_project=True)
        with Project.open(path, "w") as p:
            done = p.add_request("[1,1,1,1]", 50.0, 0.2)
            p.answer(done.id, sampler=SeededSampler(1))
            p.add_request("[1,0,0,0]", 5.0, 0.05)
    before = store.digest(path)
    code, out, err = _run(capsys, "requests", "list", path)
    assert code == 0 and "±5 at 95 %" in out and "±50 at 80 %" in out, err
    code, out, err = _run(capsys, "assess", path, "--request", "r2")
    assert code == 0 and "±5 at 95 % confidence" in out and "fresh answer    ε = " in out, err
    assert "α" not in out
    code, out, err = _run(capsys, "verify", path)
    assert code == 0, err
    assert store.digest(path) == before  # reading it in the new words wrote nothing


def test_the_report_and_the_letters_speak_the_new_words(store, tmp_path):
    from dpdesk.engine.mechanisms.noise import SeededSampler
    from dpdesk.store.audit_export import report_html
    from dpdesk.store.letters import letter_html, letter_text
    from dpdesk.store.requesters import accounts

    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        r = p.add_request("[1,0,0,0]", 20.0, 0.05, requester="ann")  # as an old request file states it
        p.release(p.assess(r.id), SeededSampler(2))
        page, verdict = report_html(p, {})
        (account,) = accounts(p.ledger(), p.requests())
    assert verdict.ok and "<th>ε spent</th>" in page and "every release is pure ε-DP" in page
    assert "α" not in page
    for letter in (letter_text(account, "people"), letter_html(account, "people")):
        assert "(±20 at 95 % confidence)" in letter and "α" not in letter and "δ" not in letter


def test_a_request_file_may_state_its_terms_in_either_words(store, capsys):
    path = store.new_project(budget=2.0)
    old = store.dir / "old.json"
    old.write_text(json.dumps([{"query": CELL, "eps": 40, "delta": 0.05, "id": "o1"}]), encoding="utf-8")
    new = store.dir / "new.csv"
    new.write_text(
        'query,accuracy,confidence,epsilon,id\n"count(age=""0-30"")",40,95%,,n1\nmax(age),,,0.5,n2\n',
        encoding="utf-8",
    )
    for file in (old, new):
        code, out, err = _run(capsys, "requests", "import", path, file)
        assert code == 0, err
    rows = _listed(capsys, path)
    assert (
        (rows["o1"]["eps"], rows["o1"]["delta"]) == (rows["n1"]["eps"], rows["n1"]["delta"]) == (40.0, 0.05)
    )
    assert rows["n2"]["alpha"] == 0.5
    before = store.digest(path)
    both = store.dir / "both.json"
    both.write_text(
        json.dumps([{"query": CELL, "accuracy": 4, "confidence": 0.9, "delta": 0.1}]), encoding="utf-8"
    )
    code, _, err = _run(capsys, "requests", "import", path, both)
    assert (
        code == 2 and "both.json item 0: give confidence or delta, not both" in err and err.count("\n") == 1
    )
    bad = store.dir / "bad.json"
    bad.write_text(json.dumps([{"query": CELL, "accuracy": 4, "confidence": 1.2}]), encoding="utf-8")
    code, _, err = _run(capsys, "requests", "import", path, bad)
    assert code == 2 and "bad.json item 0: confidence ('1.2') must lie strictly between 0 and 1" in err
    assert store.digest(path) == before


def test_a_queries_file_may_word_its_terms_as_accuracy_and_confidence(store, capsys):
    lines = {
        "old": {"query": [1, 0, 1, 0], "eps": 60, "delta": 0.05},
        "new": {"query": [1, 0, 1, 0], "accuracy": 60, "confidence": "95%"},
    }
    shown = {}
    for name, obj in lines.items():
        file = store.dir / f"{name}.jsonl"
        file.write_text(json.dumps(obj) + "\n", encoding="utf-8")
        code, out, err = _run(capsys, "assess", "--history", PAPER, "--queries", file, "--json")
        assert code == 0, err
        shown[name] = {k: v for k, v in json.loads(out).items() if k != "elapsed_ms"}
    assert shown["old"] == shown["new"]
