"""The project file format: creation, format checks, refusing files it cannot parse without touching them."""

from __future__ import annotations

import sqlite3
import struct

import numpy as np
import pytest

from dpdesk.store import Project, db, ledger
from dpdesk.store.errors import NotAProjectError, StoreError
from dpdesk.store.source_key import own_key


def test_create_and_reopen(store):
    path = store.new_project(budget=2.5)
    with Project.open(path, "r") as p:
        assert p.name == "people"
        assert p.total_budget == 2.5
        assert p.neighbour_model == "add/remove one record"
        assert p.schema.shape == (2, 2)
        assert not p.test_project
        src = p.source
        assert src.fingerprint_method == "hmac-sha256-cube" and src.key_id == own_key().key_id
        assert src.row_count is None and src.out_of_domain is None  # no count of the data is kept
        assert p.ledger() == [] and p.history().system_cost == 0.0
        assert p.verify().ok
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert raw.execute("PRAGMA user_version").fetchone()[0] == db.FORMAT_VERSION
    assert raw.execute("PRAGMA application_id").fetchone()[0] & 0xFFFFFFFF == db.APPLICATION_ID
    raw.close()


def test_create_never_overwrites(store):
    path = store.new_project()
    before = store.digest(path)
    with pytest.raises(StoreError, match="already exists"):
        store.new_project()
    assert store.digest(path) == before


def test_writer_connection_is_durable(store):
    path = store.new_project()
    with Project.open(path, "w") as p:
        assert p.connection.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert p.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _damage_cases(good: bytes):
    yield "empty", b""
    yield "garbage", b"this is not a database at all\n" * 200
    yield "truncated header", good[:60]
    yield "truncated mid-page", good[: len(good) // 2 + 100]
    yield "truncated to one page", good[:4096]
    garbled = bytearray(good)
    garbled[4096:8192] = b"\xff" * 4096
    yield "garbled page", bytes(garbled)


@pytest.mark.parametrize("mode", ["r", "w"])
def test_unparseable_files_are_refused_untouched(store, mode):
    good = store.new_project().read_bytes()
    for label, content in _damage_cases(good):
        bad = store.dir / f"bad-{label.replace(' ', '-')}.dpdesk"
        bad.write_bytes(content)
        before = store.digest(bad)
        with pytest.raises(NotAProjectError) as info:
            Project.open(bad, mode).close()
        assert "\n" not in str(info.value), label
        assert store.digest(bad) == before, label


def test_other_sqlite_database_and_newer_format_are_refused(store):
    other = store.dir / "other.dpdesk"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t(x)")
    conn.commit()
    conn.close()
    before = store.digest(other)
    with pytest.raises(NotAProjectError, match="not a dpdesk project"):
        Project.open(other, "w")
    assert store.digest(other) == before

    path = store.new_project()
    data = bytearray(path.read_bytes())
    data[60:64] = struct.pack(">i", db.FORMAT_VERSION + 1)
    path.write_bytes(bytes(data))
    before = store.digest(path)
    with pytest.raises(NotAProjectError, match="newer dpdesk"):
        Project.open(path, "w")
    assert store.digest(path) == before


def test_cli_reports_unparseable_file_in_one_line(store):
    bad = store.dir / "garbage.dpdesk"
    bad.write_bytes(b"\x00garbage" * 1000)
    before = store.digest(bad)
    for args in (["verify", bad], ["answer", bad, "--request", "r1", "--yes"]):
        res = store.cli(*args)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("dpdesk: error:"), res.stderr
        assert "Traceback" not in res.stderr
        assert store.digest(bad) == before


def test_migrations_run_forward_from_any_older_version(store, monkeypatch):
    """A file at the current version is migrated to a (hypothetical) next one on write-open, not on read-open."""
    path = store.new_project()
    current = db.FORMAT_VERSION
    monkeypatch.setattr(db, "FORMAT_VERSION", current + 1)
    monkeypatch.setitem(
        db.MIGRATIONS, current + 1, ("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)",)
    )
    before = store.digest(path)
    with Project.open(path, "r") as p:
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == current
    assert store.digest(path) == before
    with Project.open(path, "w") as p:
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == current + 1
        p.connection.execute("SELECT * FROM notes").fetchall()
    with Project.open(path, "w") as p:  # idempotent
        assert p.verify().ok


def test_a_format_1_project_is_read_as_greedy_and_migrated_on_write(store, monkeypatch):
    from dpdesk.engine.budget.policy import SpendPolicy
    from dpdesk.engine.mechanisms.noise import SeededSampler

    with monkeypatch.context() as m:  # a project written by a dpdesk that knew only format 1
        m.setattr(db, "FORMAT_VERSION", 1)
        path = store.new_project(test_project=True)
        with Project.open(path, "w") as p:
            r = p.add_request("[1,1,1,1]", 50.0, 0.2)
            p.answer(r.id, sampler=SeededSampler(1))
    before = store.digest(path)
    with Project.open(path, "r") as p:
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == 1
        assert p.spend_policy is None and p.verify().ok
    assert store.digest(path) == before
    with Project.open(path, "w") as p:
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == db.FORMAT_VERSION
        p.set_spend_policy(SpendPolicy(floor=0.1, cap=0.5))
    with Project.open(path, "r") as p:
        assert p.spend_policy == SpendPolicy(floor=0.1, cap=0.5) and p.verify().ok


def _record_as_format_2(p, a, sampler):
    """Record assessment ``a`` the way format-2 dpdesk did: its payload members, nothing else (no
    mechanism, charge, values or basis), so the migration is tested on entries as they were written."""
    from dpdesk.engine.answering.fresh import release_fresh

    req = p.request(a.request.id)
    common = {
        "query": req.query.to_json(),
        "query_text": req.query_text,
        "eps": req.eps,
        "delta": req.delta,
        "history_prefix": a.estimate.history_size,
    }
    if a.decision == "infer":
        payload = {
            **common,
            "estimate": a.release_estimate,
            "interval": list(a.release_interval),
            "credible_interval": list(a.interval),
            "confidence_at_eps": a.confidence_at_eps,
            "method": a.method,
            "prior": a.prior,
        }
        return p.book.record("inferred", req.id, payload, "answered")
    fresh = release_fresh(a, p.cube(), sampler, allow_insecure=True)
    payload = {
        **common,
        "sensitivity": fresh.sensitivity,
        "alpha": fresh.alpha,
        "family": fresh.family,
        "answer": fresh.answer,
        "sampler": fresh.sampler,
        "system_cost_after": a.budget.system_cost_after,
        "released": fresh.released,
        "interval": list(fresh.released_interval),
        "fusion_weight": fresh.fusion_weight,
        "history_estimate": fresh.history_estimate,
        "policy": a.policy,
        "needed_alpha": a.needed_alpha,
    }
    return p.book.record("fresh", req.id, payload, "answered")


def test_a_format_2_ledger_migrates_with_every_hash_intact_and_keeps_its_budget(store, monkeypatch):
    from dpdesk.engine.mechanisms.noise import SeededSampler

    with monkeypatch.context() as m:  # a project written by a dpdesk that knew only format 2
        m.setattr(db, "FORMAT_VERSION", 2)
        path = store.new_project(test_project=True, budget=5.0)
        with Project.open(path, "w") as p:
            for q, eps in (
                ('count(age="0-30")', 4.0),
                ("[0.5, 0, 0, 1.5]", 4.0),
                ('count(age="0-30")', 40.0),
                ("[1, 1, 1, 1]", 0.01),
            ):
                p.add_request(q, eps, 0.1)
            for rid in ("r1", "r2", "r3"):
                _record_as_format_2(p, p.assess(rid), SeededSampler(3))
            p.reject("r4", "too tight")
            assert [e.kind for e in p.ledger()] == ["fresh", "fresh", "inferred", "rejected"]
            assert "mechanism" not in p.ledger()[0].payload
    with Project.open(path, "r") as p:
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == 2
        before = p.ledger()
        report = p.verify()
        costs = p.view().cell_costs
    assert report.ok, report.problems
    with Project.open(path, "w") as p:  # migrated on write-open; the rows move over as they were
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == db.FORMAT_VERSION
        after = p.ledger()
        assert [(e.seq, e.hash, e.prev_hash) for e in after[: len(before)]] == [
            (e.seq, e.hash, e.prev_hash) for e in before
        ]
        # format 10 appends one entry: the digests of the requests decided so far, as they stand
        assert [e.kind for e in after[len(before) :]] == ["requests"]
        assert sorted(after[-1].payload["requests"]) == ["r1", "r2", "r3", "r4"]
        assert p.verify(extends=[before[0].hash, before[-1].hash]).ok
        np.testing.assert_array_equal(p.view().cell_costs, costs)
        assert [r.mechanism.name for r in p.view().releases] == ["discrete_laplace", "laplace", "inference"]
        r5 = p.add_request("[0, 1, 0, 0]", 6.0, 0.1)
        release = p.release(p.assess(r5.id), SeededSampler(4))  # a format-3 entry after format-2 ones
        entry = release.entry
        assert entry.payload["mechanism"] == "discrete_laplace" and list(entry.payload["values"]) == [
            release.answer
        ]
        assert entry.payload["basis"]["ledger_head"] == after[-1].hash == entry.prev_hash
        with pytest.raises(sqlite3.IntegrityError):  # one decision per request still holds after the rebuild
            with db.transaction(p.connection):
                ledger.append(p.connection, p.genesis, time="t", kind="rejected", request_id="r5", payload={})
        report = p.verify()
    assert report.ok and report.fresh == 3, report.problems
