"""verify covers what it vouches for (issue 31, item 2): the requests a release depends on are under the
hash chain, and the ledger's head is also kept outside the file, in the curator's receipt log."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from dpdesk.store import Project, db


def _project(store):
    """r1 answered fresh, r2 inferred, r3 rejected, r4 pending — each through the CLI (receipts kept)."""
    path = store.new_project(test_project=True)
    cli = store.cli
    for q, eps, who in (('count(income=">50K")', 5, "alice"), ('count(income=">50K")', 50, "bob")):
        assert (
            cli(
                "requests", "add", path, "--query", q, "--eps", eps, "--delta", "0.05", "--requester", who
            ).returncode
            == 0
        )
    assert (
        cli("requests", "add", path, "--query", "[1, 0, 0, 2]", "--eps", "9", "--delta", "0.05").returncode
        == 0
    )
    assert (
        cli(
            "requests", "add", path, "--query", 'count(age="0-30")', "--eps", "9", "--delta", "0.1"
        ).returncode
        == 0
    )
    assert cli("answer", path, "--request", "r1", "--yes").returncode == 0
    assert cli("answer", path, "--request", "r2", "--yes").returncode == 0
    assert cli("reject", path, "--request", "r3", "--reason", "no").returncode == 0
    return path


def _edit(path, sql, *args):
    conn = sqlite3.connect(path)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    "sql,args,rid",
    [
        ("UPDATE requests SET requester = ? WHERE id = 'r1'", ("mallory",), "r1"),
        ("UPDATE requests SET query_text = ? WHERE id = 'r2'", ('count(income="<=50K")',), "r2"),
        ("UPDATE requests SET query_json = replace(query_json, '2', '3') WHERE id = 'r3'", (), "r3"),
        ("UPDATE requests SET eps = 0.5 WHERE id = 'r1'", (), "r1"),
        ("UPDATE requests SET requester = CAST(? AS TEXT) WHERE id = 'r2'", (b"b\xffb",), "r2"),  # not UTF-8
    ],
    ids=["requester", "query text", "coefficients", "terms", "bit flip"],
)
def test_a_request_changed_after_its_decision_fails_verify(store, sql, args, rid):
    path = _project(store)
    with Project.open(path, "r") as p:
        seq = p.entry_for(rid).seq
    _edit(path, sql, *args)
    r = store.cli("verify", path)
    assert r.returncode == 1, r
    assert f"FAILED (first bad entry: {seq}): entry {seq}: request '{rid}' as stored" in r.stdout
    assert "edited after it was decided" in r.stdout
    if rid == "r2" and args and isinstance(args[0], bytes):  # every other command: one line, exit 2
        bad = store.cli("requests", "list", path)
        assert bad.returncode == 2 and "not UTF-8" in bad.stderr and bad.stderr.count("\n") == 1


def test_a_pending_request_may_still_be_edited(store):
    path = _project(store)
    assert store.cli("requests", "edit", path, "--request", "r4", "--eps", "12").returncode == 0
    assert store.cli("verify", path).returncode == 0


def _cut(path, keep):
    """Delete every entry after ``keep`` by hand, fix the head row and the requests they decided."""
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER ledger_no_delete")
    gone = [r[0] for r in conn.execute("SELECT request_id FROM ledger WHERE seq > ?", (keep,))]
    conn.execute("DELETE FROM ledger WHERE seq > ?", (keep,))
    conn.execute(
        "UPDATE ledger_head SET seq = ?, hash = (SELECT hash FROM ledger WHERE seq = ?)", (keep, keep)
    )
    conn.executemany("UPDATE requests SET status = 'pending' WHERE id = ?", [(g,) for g in gone if g])
    conn.commit()
    conn.close()


def test_deleting_the_newest_entries_is_caught_by_the_receipt_log(store, tmp_path, monkeypatch):
    path = _project(store)
    _cut(path, 1)
    r = store.cli("verify", path)
    assert r.returncode == 1, r
    assert r.stdout.startswith(
        "FAILED (first bad entry: 2): entry 2: missing — the file is behind a head it once had"
    )
    assert "ledger now ends at entry 1" in r.stdout and "this machine recorded entry 3" in r.stdout
    # another machine, which never held this project's heads, finds the chain itself intact
    monkeypatch.setenv("DPDESK_RECEIPTS_DIR", str(tmp_path / "elsewhere"))
    assert store.cli("verify", path).returncode == 0


def test_an_older_copy_put_back_or_a_copy_that_went_its_own_way_is_named(store):
    path = _project(store)
    backup = store.dir / "backup.dpdesk"
    shutil.copyfile(path, backup)
    assert store.cli("answer", path, "--request", "r4", "--yes").returncode == 0
    shutil.copyfile(path, store.dir / "later.dpdesk")
    shutil.copyfile(backup, path)  # the older copy put back
    r = store.cli("verify", path)
    assert r.returncode == 1 and "behind a head it once had" in r.stdout and "entry 4" in r.stdout, r
    assert store.cli("reject", path, "--request", "r4").returncode == 0  # decided otherwise in this copy
    r = store.cli("verify", path)
    assert r.returncode == 1 and "entry 4: not the entry this machine recorded" in r.stdout, r


def test_an_older_project_migrates_its_decided_requests_under_the_chain(store, monkeypatch):
    from dpdesk.engine.mechanisms.noise import SeededSampler

    with monkeypatch.context() as m:  # a project written by a dpdesk of format 9
        m.setattr(db, "FORMAT_VERSION", 9)
        path = store.new_project(test_project=True)
        with Project.open(path, "w") as p:
            p.add_request('count(income=">50K")', 20, 0.05, "alice", "r1")
            p.add_request('count(age="0-30")', 20, 0.05, "bob", "r2")
            p.answer("r1", SeededSampler(1))
            assert "request_digest" not in p.ledger()[-1].payload
    with Project.open(path, "w") as p:  # migrated on opening for writing
        assert p.format_version == db.FORMAT_VERSION
        anchor = p.ledger()[-1]
        assert anchor.kind == "requests" and sorted(anchor.payload["requests"]) == ["r1"]
        assert p.verify().ok
        p.answer("r2", SeededSampler(2))
        assert "request_digest" in p.ledger()[-1].payload  # new decisions carry their request's digest
    _edit(path, "UPDATE requests SET requester = 'mallory' WHERE id = 'r1'")
    with Project.open(path, "r") as p:
        report = p.verify()
    assert not report.ok and report.first_bad_seq == 1
    assert (
        f"request 'r1' as stored (its requester, query, terms or time) is not what entry {anchor.seq} recorded"
        in (report.problems[0])
    )
