"""Editing, deleting or reordering ledger rows by hand makes verify fail and name the first bad entry."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from dpdesk.store import Project

_SCHEMA = {
    "attributes": [
        {
            "name": "age",
            "column": "age",
            "kind": "numeric",
            "edges": [0, 30, 150],
            "labels": ["0-30", "30-150"],
        },
        {"name": "income", "column": "income", "kind": "categorical", "values": ["<=50K", ">50K"]},
    ]
}
_ROWS = (
    [(10, "<=50K")] * 10 + [(20, ">50K")] * 20 + [(40, "<=50K")] * 20 + [(50, ">50K")] * 10 + [(200, ">50K")]
)


def _write_table(path, rows=_ROWS):
    path.write_text("age,income\n" + "".join(f"{a},{i}\n" for a, i in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def ledgered_master(tmp_path_factory):
    """A project with six ledger entries: fresh, fresh, rejected, fresh, rebind, inferred-or-fresh."""
    from types import SimpleNamespace

    d = tmp_path_factory.mktemp("ledgered")
    table = d / "people.csv"
    store = SimpleNamespace(table=table, write_table=_write_table)
    _write_table(table)
    path = d / "p.dpdesk"
    Project.create(path, name="people", schema=_SCHEMA, source_location=str(table), total_budget=50.0).close()
    with Project.open(path, "w") as p:
        for q in ("[1,0,0,0]", "[0,1,0,0]", "[0,0,1,0]", "[0,0,0,1]", "[1,1,0,0]"):
            p.add_request(q, eps=20, delta=0.1)
        p.answer("r1")
        p.answer("r2")
        p.reject("r3", "out of scope")
        p.answer("r4")
    store.write_table(store.table, store.write_table.__defaults__[0] + [(12, "<=50K")])
    with Project.open(path, "w") as p:
        p.rebind()
        p.answer("r5")
        assert len(p.ledger()) == 6
        assert p.verify().ok
    return path


@pytest.fixture
def ledgered(ledgered_master, store):
    copy = store.dir / "ledgered.dpdesk"
    shutil.copy(ledgered_master, copy)
    return copy


def _tampered(store, path, name, *statements):
    copy = store.dir / name
    shutil.copy(path, copy)
    conn = sqlite3.connect(copy)
    conn.execute("DROP TRIGGER ledger_no_update")
    conn.execute("DROP TRIGGER ledger_no_delete")
    for sql, args in statements:
        conn.execute(sql, args)
    conn.commit()
    conn.close()
    with Project.open(copy, "r") as p:
        return p.verify(), copy


def _payload(path, seq):
    conn = sqlite3.connect(path)
    (text,) = conn.execute("SELECT payload FROM ledger WHERE seq = ?", (seq,)).fetchone()
    conn.close()
    return json.loads(text)


def test_triggers_refuse_casual_edits(ledgered):
    conn = sqlite3.connect(ledgered)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE ledger SET time = 'x' WHERE seq = 1")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM ledger WHERE seq = 6")
    conn.close()


@pytest.mark.parametrize("seq", range(1, 7))
def test_edited_entry_is_named(store, ledgered, seq):
    payload = _payload(ledgered, seq)
    key = sorted(payload)[0]
    payload[key] = "edited"
    edits = {
        "payload": (
            "UPDATE ledger SET payload = ? WHERE seq = ?",
            (json.dumps(payload, sort_keys=True, separators=(",", ":")), seq),
        ),
        "time": ("UPDATE ledger SET time = ? WHERE seq = ?", ("2001-01-01T00:00:00+00:00", seq)),
        "kind": ("UPDATE ledger SET kind = ? WHERE seq = ?", ("rejected" if seq != 3 else "fresh", seq)),
        "request": ("UPDATE ledger SET request_id = ? WHERE seq = ?", ("zz", seq)),
        "spaces": ("UPDATE ledger SET payload = ? WHERE seq = ?", (json.dumps(_payload(ledgered, seq)), seq)),
    }
    for what, stmt in edits.items():
        report, _ = _tampered(store, ledgered, f"edit-{what}-{seq}.dpdesk", stmt)
        assert not report.ok, what
        assert report.first_bad_seq == seq, (what, report.problems)
        assert report.problems[0].startswith(f"entry {seq}:"), report.problems


def test_edited_answer_in_fresh_entry_is_named(store, ledgered):
    payload = _payload(ledgered, 2)
    payload["answer"] = payload["answer"] + 1
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    report, copy = _tampered(
        store, ledgered, "answer.dpdesk", ("UPDATE ledger SET payload = ? WHERE seq = 2", (text,))
    )
    assert report.first_bad_seq == 2 and "hash does not match" in report.problems[0]
    res = store.cli("verify", copy)
    assert res.returncode == 1
    assert "first bad entry: 2" in res.stdout and "entry 2:" in res.stdout


@pytest.mark.parametrize("seq", range(1, 7))
def test_deleted_entry_is_named(store, ledgered, seq):
    report, copy = _tampered(
        store, ledgered, f"del-{seq}.dpdesk", ("DELETE FROM ledger WHERE seq = ?", (seq,))
    )
    assert not report.ok
    # a gap is noticed at the entry after the hole; a deleted last entry is named by the ledger head
    assert report.first_bad_seq == (seq + 1 if seq < 6 else 6), report.problems
    if seq == 6:
        assert store.cli("verify", copy).returncode == 1


def test_deleting_several_tail_entries_is_noticed(store, ledgered):
    report, _ = _tampered(store, ledgered, "tail.dpdesk", ("DELETE FROM ledger WHERE seq >= 4", ()))
    assert not report.ok and report.first_bad_seq == 4


@pytest.mark.parametrize("seq", range(1, 6))
def test_reordered_entries_are_named(store, ledgered, seq):
    # swap the sequence numbers of two neighbouring rows (the rows themselves are untouched)
    report, _ = _tampered(
        store,
        ledgered,
        f"swap-{seq}.dpdesk",
        ("UPDATE ledger SET seq = -1 WHERE seq = ?", (seq,)),
        ("UPDATE ledger SET seq = ? WHERE seq = ?", (seq, seq + 1)),
        ("UPDATE ledger SET seq = ? WHERE seq = -1", (seq + 1,)),
    )
    assert not report.ok and report.first_bad_seq == seq, report.problems


@pytest.mark.parametrize("seq", range(1, 6))
def test_swapped_contents_are_named(store, ledgered, seq):
    cols = "time, kind, request_id, payload, prev_hash, hash"
    conn = sqlite3.connect(ledgered)
    a = conn.execute(f"SELECT {cols} FROM ledger WHERE seq = ?", (seq,)).fetchone()
    b = conn.execute(f"SELECT {cols} FROM ledger WHERE seq = ?", (seq + 1,)).fetchone()
    conn.close()
    upd = "UPDATE ledger SET time=?, kind=?, request_id=?, payload=?, prev_hash=?, hash=? WHERE seq=?"
    free = ("UPDATE ledger SET request_id = NULL, hash = 'x' WHERE seq = ?", (seq + 1,))  # unique columns
    report, _ = _tampered(
        store, ledgered, f"contents-{seq}.dpdesk", free, (upd, (*b, seq)), (upd, (*a, seq + 1))
    )
    assert not report.ok and report.first_bad_seq == seq, report.problems


def test_settings_and_side_tables_are_covered(store, ledgered):
    for name, stmt in {
        "budget": ("UPDATE project SET total_budget = 1000", ()),
        "schema": ("UPDATE project SET name = 'other'", ()),
        "status": ("UPDATE requests SET status = 'pending' WHERE id = 'r2'", ()),
        "source": ("UPDATE source SET fingerprint = 'abc'", ()),
        "head": ("UPDATE ledger_head SET seq = 9", ()),
    }.items():
        report, copy = _tampered(store, ledgered, f"side-{name}.dpdesk", stmt)
        assert not report.ok, name
    res = store.cli("verify", copy)
    assert res.returncode == 1 and res.stdout.startswith("FAILED"), res.stdout


def test_intact_project_verifies_through_the_cli(store, ledgered):
    res = store.cli("verify", ledgered)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("OK: 6 ledger entries")
    res = store.cli("verify", ledgered, "--json")
    report = json.loads(res.stdout)
    assert report["ok"] and report["entries"] == 6 and report["rebinds"] == 1


def _rechained(store, path, name, seq, edit):
    """Rewrite the *whole* chain with entry ``seq``'s payload edited, every hash (and every recorded
    assessment head) recomputed: the forgery the hash chain alone cannot see (docs/project-file.md);
    verify's accounting checks still can, and a witness held outside the file can."""
    from dpdesk.store import ledger

    copy = store.dir / name
    shutil.copy(path, copy)
    conn = sqlite3.connect(copy)
    (genesis,) = conn.execute("SELECT genesis_hash FROM project").fetchone()
    entries = [ledger.decode(r) for r in ledger.raw_rows(conn)]
    conn.execute("DROP TRIGGER ledger_no_delete")
    conn.execute("DELETE FROM ledger")
    conn.execute("DELETE FROM ledger_head")
    for e in entries:
        payload = ledger.thaw(e.payload)
        if e.seq == seq:
            edit(payload)
        if payload.get("basis"):  # the head each release was assessed on, rewritten too
            payload["basis"]["ledger_head"] = (ledger.head(conn) or (0, genesis))[1]
        ledger.append(conn, genesis, time=e.time, kind=e.kind, request_id=e.request_id, payload=payload)
    conn.commit()
    conn.close()
    with Project.open(copy, "r") as p:
        return p.verify()


def test_a_consistent_rewrite_is_still_checked_for_what_was_promised(store, ledgered):
    with Project.open(ledgered, "r") as p:
        kinds = {e.seq: e.kind for e in p.ledger()}
    fresh = min(s for s, k in kinds.items() if k == "fresh")
    untouched = _rechained(store, ledgered, "same.dpdesk", fresh, lambda p: None)
    assert untouched.ok, untouched.problems  # the rewrite itself is invisible to the chain

    def undercharge(p):  # claim the request needed more than was charged
        p["needed_alpha"] = p["alpha"] * 2

    report = _rechained(store, ledgered, "under.dpdesk", fresh, undercharge)
    assert not report.ok and report.first_bad_seq == fresh and "less than the ε" in report.problems[0]

    def widen(p):  # release a wider interval than the requester's 2ε
        lo, hi = p["interval"]
        p["interval"] = [lo - 5, hi + 5]

    report = _rechained(store, ledgered, "wide.dpdesk", fresh, widen)
    assert not report.ok and report.first_bad_seq == fresh and "is not a ±20 window" in report.problems[0]


def test_a_recorded_charge_is_checked_against_the_mechanisms_privacy_map(store, ledgered):
    with Project.open(ledgered, "r") as p:
        fresh = min(e.seq for e in p.ledger() if e.kind == "fresh")

    def undercharge(p):  # the entry claims half the per-cell charge its mechanism's privacy map gives
        p["charge"]["terms"][0]["scale"] /= 2

    report = _rechained(store, ledgered, "charge.dpdesk", fresh, undercharge)
    assert not report.ok and report.first_bad_seq == fresh
    assert (
        "per-cell charge differs from what the discrete_laplace mechanism's privacy map gives"
        in report.problems[0]
    )


def _forge_answer(p):
    shift = 7.0  # a different answer, its interval moved with it: nothing verify recomputes changes
    for key in ("answer", "released"):
        p[key] += shift
    p["values"] = [v + shift for v in p["values"]]
    p["interval"] = [v + shift for v in p["interval"]]


def test_a_witness_exposes_a_consistently_rechained_ledger(store, ledgered, capsys):
    """A forged answer, re-chained consistently, passes plain verify; the head a requester holds does not."""
    from dpdesk.cli import main

    with Project.open(ledgered, "r") as p:
        first = next(e for e in p.ledger() if e.kind == "fresh")
        witness = first.hash  # what the requester of the first fresh answer was given
        last = p.ledger()[-1].hash
        assert p.verify(extends=[witness, last]).ok
    forged = _rechained(store, ledgered, "forged.dpdesk", first.seq, _forge_answer)
    assert forged.ok, forged.problems  # the chain alone cannot see it
    copy = store.dir / "forged.dpdesk"
    with Project.open(copy, "r") as p:
        report = p.verify(extends=[witness])
    assert (
        not report.ok
        and "does not extend the head" in report.problems[0]
        and witness[:16] in report.problems[0]
    )
    capsys.readouterr()
    assert main(["verify", str(copy), "--extends", witness]) == 1
    assert "does not extend the head" in capsys.readouterr().out
    assert main(["verify", str(ledgered), "--extends", witness]) == 0
    assert "still extends the 1 head(s) given" in capsys.readouterr().out
    assert main(["verify", str(ledgered), "--extends", "abc"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "64 lowercase hex digits" in err[0]


def test_an_answer_from_a_release_is_checked_against_that_release(store, monkeypatch):
    from dpdesk.engine.mechanisms.noise import SeededSampler
    from dpdesk.engine.partition.guarantee import preview
    from dpdesk.engine.partition.plan import marginals_by_order
    from dpdesk.engine.partition.release_plan import PartitionReleasePlan
    from dpdesk.store import view as view_module

    monkeypatch.setattr(view_module, "HISTORY_ROW_LIMIT", 3)  # the one-way marginals stay out of the History
    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        pv = preview(
            marginals_by_order(p.schema, [1]), alpha=0.5, total_budget=2.0, cell_costs=p.view().cell_costs
        )
        p.release(PartitionReleasePlan(pv, p.basis()), SeededSampler(4))
        answered = p.release(p.assess(p.add_request("[1, 1, 0, 0]", 15.0, 0.1).id))
    seq = answered.entry.seq
    assert answered.entry.payload["from_release"] == seq - 1

    def shift(p):  # release another value than the release's estimate (window moved with it)
        p["estimate"] += 3
        p["interval"] = [v + 3 for v in p["interval"]]

    report = _rechained(store, path, "shifted.dpdesk", seq, shift)
    assert (
        not report.ok and report.first_bad_seq == seq and f"is not release #{seq - 1}'s" in report.problems[0]
    )
    report = _rechained(store, path, "source.dpdesk", seq, lambda p: p.update(from_release=seq + 5))
    assert not report.ok and "not an earlier release answered from its own structure" in report.problems[0]
