"""The ledger-view cache beside a real project file (store/view_cache.py): used only for the ledger head
it was written for, never over the chain, never by verify, and the same answers as a replay."""

from __future__ import annotations

import json
import shutil
import sqlite3
import struct

import pytest

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.store import Project, view_cache
from dpdesk.store.view import LedgerView

QUERIES = ([1, 0, 0, 0], [0, 1, 1, 0], [1, 1, 0, 1], [0, 0, 0, 1], [1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 1, 1])


@pytest.fixture(autouse=True)
def small_cache(monkeypatch):
    monkeypatch.setattr(view_cache, "MIN_ROWS", 3)  # the cube here has 4 cells: a short ledger must do


def released_project(store, n: int = len(QUERIES), name: str = "p.dpdesk", seed: int = 5):
    path = store.new_project(name=name, budget=1e6, test_project=True)
    with Project.open(path, "w") as p:
        sampler = SeededSampler(seed)
        for i in range(n):
            r = p.add_request(QUERIES[i % len(QUERIES)], 0.5, 0.05)  # tight: each one is a fresh release
            p.release(p.assess(r.id), sampler)
        p.add_request([1, 1, 0, 0], 3.0, 0.05, request_id="target")
    return path


def assessed(path, **kw) -> dict:
    with Project.open(path) as p:
        view = p.view()
        out = p.assess("target", seed=11).to_json()
        out.pop("elapsed_ms")  # timing, not an answer
        return {
            "assessment": out,
            "restored": view.restored_from_cache,
            "costs": view.cell_costs.tolist(),
            "system": view.system_cost,
            "head": view.head,
        }


def replayed(path) -> dict:
    """The same, with the cache moved away (a full replay of the ledger)."""
    cache = view_cache.cache_path(path)
    aside = cache.with_suffix(".aside")
    cache.rename(aside)
    try:
        return assessed(path)
    finally:
        view_cache.cache_path(path).unlink(missing_ok=True)
        aside.rename(cache)


def arrays_layout(cache):
    raw = cache.read_bytes()
    (n,) = struct.unpack("<Q", raw[len(view_cache.MAGIC) : len(view_cache.MAGIC) + 8])
    header = json.loads(raw[len(view_cache.MAGIC) + 8 : len(view_cache.MAGIC) + 8 + n])
    start = -(-(len(view_cache.MAGIC) + 8 + n) // view_cache.ALIGN) * view_cache.ALIGN
    return {a["name"]: start + a["offset"] for a in header["arrays"]}, header


def flip_byte(cache, at: int) -> None:
    with open(cache, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x40]))


def test_the_cache_gives_the_replay_s_answers_and_skips_the_replay(store):
    path = released_project(store)
    cache = view_cache.cache_path(path)
    assert cache.is_file()  # written when the project was closed
    cached, replay = assessed(path), replayed(path)
    assert cached["restored"] and not replay["restored"]
    assert cached == dict(replay, restored=True)
    with Project.open(path) as p:
        view = p.view()
        with view.assessing() as state:  # the History came from the cache, factorisation included
            assert len(state.history) >= 3 and state.history._spaces and view.history_builds == 0
        rebuilt = LedgerView(p.schema, p.genesis)
        rebuilt.extend(p.ledger())
        # what needs the entries reads them on demand, and agrees with a view built from them
        assert view.entries == rebuilt.entries
        assert view.cost_curve() == rebuilt.cost_curve()
        assert view.largest_charges() == rebuilt.largest_charges()
        assert view.spenders(0) == rebuilt.spenders(0)


def test_entries_recorded_after_the_cached_head_are_replayed_on_top(store):
    path = released_project(store)
    cache = view_cache.cache_path(path)
    old = cache.read_bytes()
    with Project.open(path, "w") as p:
        r = p.add_request([0, 0, 1, 1], 0.5, 0.05)
        p.release(p.assess(r.id), SeededSampler(9))
    cache.write_bytes(old)  # the cache of the head before that release
    cached, replay = assessed(path), replayed(path)
    assert cached["restored"] and cached == dict(replay, restored=True)
    with Project.open(path) as p:
        assert p.view().head == p.head() and len(p.view().entries) == len(p.ledger())


def test_a_cache_of_another_head_or_file_is_not_used(store):
    a = released_project(store, name="a.dpdesk")
    b = released_project(store, name="b.dpdesk", seed=6)  # same schema and length, another chain
    shutil.copy(view_cache.cache_path(a), view_cache.cache_path(b))
    assert not assessed(b)["restored"]
    # the ledger cut back to before the cached head (newest entry removed, head row moved back)
    c = released_project(store, name="c.dpdesk")
    conn = sqlite3.connect(c)
    with conn:
        conn.execute("DROP TRIGGER ledger_no_delete")
        seq, prev = conn.execute("SELECT seq, prev_hash FROM ledger ORDER BY seq DESC LIMIT 1").fetchone()
        conn.execute("DELETE FROM ledger WHERE seq = ?", (seq,))
        conn.execute("UPDATE ledger_head SET seq = ?, hash = ? WHERE id = 1", (seq - 1, prev))
    conn.close()
    stale = view_cache.cache_path(c).read_bytes()
    result = assessed(c)
    assert not result["restored"] and result["head"] == (seq - 1, prev)
    assert view_cache.cache_path(c).read_bytes() != stale  # rewritten for the ledger as it is now


@pytest.mark.parametrize("part", ["view.costs", "factor"])
def test_an_edited_cache_is_not_used(store, part):
    path = released_project(store)
    cache = view_cache.cache_path(path)
    offsets, header = arrays_layout(cache)
    if part == "factor":  # the large factors are not hashed: they are checked against the rows
        name = next(n for n in offsets if n.endswith((".coords.L", ".gram.L", ".U")))
        shape = next(a["shape"] for a in header["arrays"] if a["name"] == name)
        flip_byte(cache, offsets[name] + 8 * (shape[1] + 1) - 3)  # a byte of row 1's first entries
    else:
        flip_byte(cache, offsets[part] + 5)
    result = assessed(path)
    assert not result["restored"]
    assert result == replayed(path)
    # a truncated file is no cache either
    cache.write_bytes(cache.read_bytes()[: cache.stat().st_size // 2])
    assert not assessed(path)["restored"]


def test_an_entry_edited_in_place_is_caught_by_verify_with_the_cache_there(store):
    path = released_project(store)
    assert view_cache.cache_path(path).is_file()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TRIGGER ledger_no_update")
        payload = json.loads(conn.execute("SELECT payload FROM ledger WHERE seq = 2").fetchone()[0])
        payload["answer"] = payload["answer"] + 1000.0
        conn.execute(
            "UPDATE ledger SET payload = ? WHERE seq = 2",
            (json.dumps(payload, sort_keys=True, separators=(",", ":")),),
        )
    conn.close()
    with Project.open(path) as p:
        report = p.verify()
        assert not report.ok and any("entry 2" in problem for problem in report.problems)
    # without the cache, a cache is never written from the broken chain
    view_cache.cache_path(path).unlink()
    assert not assessed(path)["restored"]
    assert not view_cache.cache_path(path).exists()


def test_a_ledger_with_watched_claims_is_always_replayed(store):
    path = released_project(store)
    view_cache.cache_path(path).unlink()
    with Project.open(path, "w") as p:
        p.watch([1, 0, 0, 0], 0, 25, 0.8, 0.5)  # the claim book follows the ledger entry by entry
        assert p.view().history_rows >= view_cache.MIN_ROWS
    assert not view_cache.cache_path(path).exists()
    assert not assessed(path)["restored"]
