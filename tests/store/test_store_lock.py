"""Single writer: a second writer gets a one-line error naming the holder; readers always get in."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from dpdesk.store import Project
from dpdesk.store.errors import LockedError, ReadOnlyError


def _popen(*args):
    return subprocess.Popen(
        [sys.executable, "-m", "dpdesk", *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_second_writer_in_process_is_refused_and_readers_get_in(store):
    path = store.new_project()
    with Project.open(path, "w") as writer:
        writer.add_request("[1,0,0,0]", 5, 0.1)
        with pytest.raises(LockedError, match=rf"open for writing by pid {os.getpid()} on "):
            Project.open(path, "w")
        with Project.open(path, "r") as reader:
            assert [r.id for r in reader.requests()] == ["r1"]
            with pytest.raises(ReadOnlyError):
                reader.add_request("[1,0,0,0]", 5, 0.1)
    with Project.open(path, "w"):  # released on close
        pass


def test_two_processes_one_waits_at_the_prompt(store):
    path = store.new_project(budget=10)
    with Project.open(path, "w") as p:
        p.add_request("[1,0,0,0]", 5, 0.1)
        p.add_request("[0,1,0,0]", 5, 0.1)
    a = _popen("answer", path, "--request", "r1")  # asks for confirmation, holding the lock
    seen = ""
    deadline = time.monotonic() + 120
    while "[y/N]" not in seen and time.monotonic() < deadline:
        ch = a.stderr.read(1)
        if not ch:
            break
        seen += ch
    assert "[y/N]" in seen, seen
    b = store.cli("answer", path, "--request", "r2", "--yes")
    assert b.returncode == 2
    assert b.stderr.count("\n") == 1 and f"is open for writing by pid {a.pid} on " in b.stderr, b.stderr
    audit = store.cli("verify", path)  # read-only use works while the writer waits
    assert audit.returncode == 0, audit.stdout + audit.stderr
    out, err = a.communicate("y\n", timeout=120)
    assert a.returncode == 0, err
    with Project.open(path, "r") as p:
        assert [e.request_id for e in p.ledger()] == ["r1"]
        assert p.request("r2").status == "pending"
    assert store.cli("answer", path, "--request", "r2", "--yes").returncode == 0
    with Project.open(path, "r") as p:
        assert [e.request_id for e in p.ledger()] == ["r1", "r2"] and p.verify().ok


def test_racing_processes_lose_nothing_and_duplicate_nothing(store):
    path = store.new_project(budget=100)
    with Project.open(path, "w") as p:
        for i in range(6):
            p.add_request(
                f"[{i % 4 == 0:d},{i % 4 == 1:d},{i % 4 == 2:d},{i % 4 == 3:d}]",
                3 + i,
                0.1,
                request_id=f"q{i}",
            )
    successes = []
    rounds = [("q0", "q1"), ("q2", "q2"), ("q3", "q4"), ("q5", "q5")]  # twice the same request on purpose
    for first, second in rounds:
        procs = [(rid, _popen("answer", path, "--request", rid, "--yes")) for rid in (first, second)]
        for rid, proc in procs:
            out, err = proc.communicate(timeout=180)
            if proc.returncode == 0:
                successes.append((rid, out))
            else:
                assert proc.returncode == 2, err
                assert err.count("\n") == 1, err
                assert "is open for writing by pid" in err or "was already answered" in err, err
    with Project.open(path, "r") as p:
        assert p.verify().ok
        recorded = [e.request_id for e in p.ledger()]
        assert len(recorded) == len(set(recorded)) == len(successes)
        assert sorted(recorded) == sorted(rid for rid, _ in successes)
        for rid, out in successes:
            entry = p.entry_for(rid)
            assert f"ledger entry {entry.seq})" in out
