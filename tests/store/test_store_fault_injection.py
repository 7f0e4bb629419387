"""I/O errors and a full disk at every write of a release, a batch, a partition release and a migration.

SQLite's own tests make the file layer fail at the N-th write and check that nothing is lost or corrupted.
Here the project's connections are real SQLite connections of a subclass whose writes — every statement
that changes the file, the COMMIT, the checkpoint that copies the log into the main file — go through a
counter: the N-th fails with the error SQLite gives for a full disk (``database or disk is full``) or a
failing device (``disk I/O error``) before it reaches the file. For each operation the writes are counted
once, then the operation is run through the command line (in this process) on a fresh copy of the project
once per write, failing there. After each failure:

- the failure is reported: exit 2 and one line naming the file and the problem (never exit 0, never a
  traceback);
- ``verify`` passes on what is on disk, every entry recorded before the failure is still there and no
  request has two decisions;
- the same command run again with the disk back finishes: the release is recorded once, a batch ends at
  the system cost its plan promised (its recorded measurements are not bought again), a migration reaches
  the current format with every hash intact.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dpdesk.store import Project, db

pytestmark = pytest.mark.slow

# statements that change the file (a SELECT never does; BEGIN only takes the lock)
WRITES = re.compile(
    r"^\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|COMMIT|END|"
    r"PRAGMA\s+(wal_checkpoint|journal_mode\s*=|user_version\s*=|application_id\s*=))",
    re.IGNORECASE,
)
ERRORS = ("database or disk is full", "disk I/O error")


class Injector:
    """Counts the writes of every connection it made; fails the ``fail_at``-th with ``error``."""

    def __init__(self) -> None:
        self.count = 0
        self.fail_at: int | None = None
        self.error = ERRORS[0]
        self.failed: str | None = None
        self.writes: list[str] = []  # what each write was (its first words), in order

    def write(self, sql: str) -> None:
        if not WRITES.match(sql):
            return
        self.count += 1
        self.writes.append(" ".join(sql.split()[:3]))
        if self.count == self.fail_at:
            self.failed = sql.strip().split("\n")[0][:60]
            raise sqlite3.OperationalError(self.error)


INJECT = Injector()


class FailingConnection(sqlite3.Connection):
    def execute(self, sql, parameters=(), /):  # type: ignore[override]
        INJECT.write(sql)
        return super().execute(sql, parameters)

    def executemany(self, sql, parameters, /):  # type: ignore[override]
        INJECT.write(sql)
        return super().executemany(sql, parameters)


@pytest.fixture
def failing(monkeypatch):
    """Every connection the store opens in this test is a FailingConnection (its reads are untouched)."""
    connect = sqlite3.connect

    def failing_connect(*args, **kwargs):
        kwargs.setdefault("factory", FailingConnection)
        return connect(*args, **kwargs)

    monkeypatch.setattr(db.sqlite3, "connect", failing_connect)
    INJECT.__init__()
    yield INJECT
    INJECT.__init__()


def _run(store, argv, fail_at=None, error=ERRORS[0]):
    INJECT.count, INJECT.fail_at, INJECT.error, INJECT.failed, INJECT.writes = 0, fail_at, error, None, []
    try:
        return store.cli(*argv)
    finally:
        INJECT.fail_at = None


def _state(path):
    with Project.open(path, "r") as p:
        report = p.verify()
        entries = [(e.seq, e.hash, e.kind, e.request_id) for e in p.ledger()]
        statuses = {r.id: r.status for r in p.requests()}
    return report, entries, statuses


class Copies:
    """Fresh copies of a pristine project at one path (on the small disk, or in the test's folder)."""

    def __init__(self, pristine: Path, work: Path, tmp: Path) -> None:
        self.pristine, self.work, self.tmp, self.n = pristine, work, tmp, 0

    def fresh(self) -> Path:
        for suffix in ("", "-wal", "-shm", ".cache", ".lock"):
            Path(f"{self.work}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(self.pristine, self.work)
        # each copy is a project of its own, as if on its own machine (its receipt log starts empty)
        self.n += 1
        os.environ["DPDESK_RECEIPTS_DIR"] = str(self.tmp / f"receipts-{self.n}")
        return self.work


def _check_failure(store, path: Path, ran, before, where, error: str | None) -> None:
    """A failed run: reported in one line naming the file (and the problem), exit 2; then ``verify`` passes,
    nothing recorded before is lost, no request is decided twice; then what the line says to run finishes
    it — ``dpdesk project settle`` when the change is recorded and only its copy into the file failed, else
    the same command again (the caller checks it is done once)."""
    assert ran.returncode == 2, (where, ran)
    assert ran.stderr.count("\n") == 1 and "Traceback" not in ran.stderr, (where, ran.stderr)
    assert path.name in ran.stderr and (error is None or error in ran.stderr), (where, ran.stderr)
    report, after, _ = _state(path)
    assert report.ok, (where, report.problems)
    assert after[: len(before)] == before, where
    decided = [rid for *_, rid in after if rid is not None]
    assert len(decided) == len(set(decided)), where


def _retry(store, path: Path, ran, argv) -> None:
    if "dpdesk project settle" in ran.stderr:
        again = _run(store, ("project", "settle", path))
        assert again.returncode == 0 and not Path(f"{path}-wal").exists(), again
        if "then this command again" in ran.stderr:  # a ledger entry recorded but not yet in the file: shown
            again = _run(store, argv)  # (or the batch resumed) only now, nothing drawn twice
            assert again.returncode in (0, 2), again
    else:
        again = _run(store, argv)
        assert again.returncode in (0, 2), again


def _sweep(store, pristine: Path, argv_for, check_done, tmp: Path, stride: int = 1) -> int:
    """Run ``argv_for(path)`` on a copy of ``pristine`` failing at each write (every ``stride``-th), check the
    failure and the retry; returns how many writes the operation makes."""
    copies = Copies(pristine, tmp / "work.dpdesk", tmp)
    clean = _run(store, argv_for(copies.fresh()))
    assert clean.returncode == 0, clean.stderr
    writes = INJECT.count
    # the last write is the copy of the log into the file as the project closes: the sweep fails it too
    assert INJECT.writes[-1] == "PRAGMA wal_checkpoint(PASSIVE)", INJECT.writes
    for n in range(1, writes + 1, stride):
        error = ERRORS[n % 2]
        path = copies.fresh()
        _, before, _ = _state(path)
        ran = _run(store, argv_for(path), fail_at=n, error=error)
        where = (n, INJECT.failed, error)
        if ran.returncode == 0:
            # only a copy of the log into the file that a later one redid may go unreported: then the
            # file holds everything, as if it had never failed
            assert INJECT.failed.startswith("PRAGMA wal_checkpoint"), (where, ran)
            assert any(w.startswith("PRAGMA wal_checkpoint") for w in INJECT.writes[n:]), (
                where,
                INJECT.writes,
            )
            assert not db.log_holds_frames(path), where
            check_done(path, where)
            continue
        _check_failure(store, path, ran, before, where, error)
        _retry(store, path, ran, argv_for(path))
        check_done(path, where)
    return writes


@pytest.fixture
def project(store):
    """Four cells, two requests a fresh answer and a batch can serve (a test project: seeded noise is not
    used here — the CLI draws from OpenDP)."""
    path = store.new_project(budget=2.0)
    with Project.open(path, "w") as p:
        p.add_request('count(age="0-30")', 6, 0.2, "a", "q1")
        p.add_request('count(income=">50K")', 8, 0.2, "b", "q2")
        p.add_request("[1, 1, 0, 0]", 9, 0.2, "c", "q3")
    return path


@pytest.fixture
def old_project(store, monkeypatch):
    """A file two formats old with a decided request in it, and its entries as they were."""
    from dpdesk.engine.mechanisms.noise import SeededSampler

    with monkeypatch.context() as m:
        m.setattr(db, "FORMAT_VERSION", db.FORMAT_VERSION - 2)
        old = store.new_project(name="old.dpdesk", test_project=True)
        with Project.open(old, "w") as p:
            p.add_request('count(age="0-30")', 9, 0.2, "a", "q1")
            p.answer("q1", SeededSampler(1))
    return old, _state(old)[1]


def _fresh_done(path, where):
    report, entries, statuses = _state(path)
    assert report.ok and statuses["q1"] == "answered", where
    assert [k for _, _, k, rid in entries if rid == "q1"] == ["fresh"], where  # drawn and charged once


def _batch_done(path, where):
    report, entries, statuses = _state(path)
    assert report.ok, (where, report.problems)
    plans = [seq for seq, _, k, _ in entries if k == "batch"]
    assert len(plans) == 1, where  # one plan, resumed — never planned and bought again
    with Project.open(path, "r") as p:
        plan = p.ledger()[plans[0] - 1]
        assert math.isclose(p.view().system_cost, plan.payload["system_cost_after"], rel_tol=1e-12), where
        indices = [e.payload["batch"]["index"] for e in p.ledger() if e.kind == "measurement"]
    assert indices == list(range(len(plan.payload["measurements"]))), where
    assert all(s == "answered" for s in statuses.values()), (where, statuses)


def _partition_done(path, where):
    report, entries, _ = _state(path)
    assert report.ok and [k for *_, k, _ in entries].count("partition") == 1, where


def _migration_done(hashes):
    def done(path, where):
        report, entries, statuses = _state(path)
        with Project.open(path, "r") as p:
            version = p.format_version
        assert report.ok and version == db.FORMAT_VERSION, where
        assert entries[: len(hashes)] == hashes, where  # every entry and hash as it was
        assert "q9" in statuses, where

    return done


# each operation: its command, the check that it is done once, and the fewest writes it makes
OPERATIONS = {
    "fresh release": (lambda p: ("answer", p, "--request", "q1", "--yes"), _fresh_done, 4),
    "batch": (lambda p: ("batch", "answer", p, "--pending", "--yes"), _batch_done, 8),
    "partition release": (
        lambda p: ("release", "publish", p, "--cells", "--alpha", "0.1", "--yes"),
        _partition_done,
        4,
    ),
    "migration": (
        lambda p: ("requests", "add", p, "--query", "count()", "--eps", "9", "--delta", "0.2", "--id", "q9"),
        None,  # _migration_done with the old file's entries
        3,
    ),
}


def _operation(name, request):
    argv, done, fewest = OPERATIONS[name]
    if done is None:
        pristine, hashes = request.getfixturevalue("old_project")
        return pristine, argv, _migration_done(hashes), fewest
    return request.getfixturevalue("project"), argv, done, fewest


@pytest.mark.parametrize("name", OPERATIONS)
def test_at_every_write(name, store, failing, tmp_path, request):
    """Each write of the operation fails in turn (a full disk, a failing device, alternately)."""
    pristine, argv, done, fewest = _operation(name, request)
    assert _sweep(store, pristine, argv, done, tmp_path) >= fewest


# -- a real full disk -------------------------------------------------------------------------------------
# The writes above fail where dpdesk issues them. A real full disk fails inside SQLite too: a commit's
# frames half in the log, the closing checkpoint halfway through the main file. So the same operations
# run once more on a small tmpfs (3 MiB, mounted for the test: root on Linux only, skipped elsewhere),
# filled but for ``room`` bytes, for every ``room`` from none upward in steps of one page of the file system
# until the operation succeeds three times running.

PAGE = 4096


@pytest.fixture
def small_disk(tmp_path):
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a tmpfs of a few MiB needs root on Linux (the write-layer sweeps above run everywhere)")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield SmallDisk(disk)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


class SmallDisk:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.filler = root / "filler"

    def fill(self, room: int) -> None:
        """Leave ``room`` bytes free (a whole number of pages)."""
        self.filler.unlink(missing_ok=True)
        st = os.statvfs(self.root)
        with open(self.filler, "wb") as f:
            f.truncate(0)
            left = st.f_bavail * st.f_frsize - room
            chunk = b"\0" * (1 << 20)
            while left > 0:
                left -= f.write(chunk[: min(left, len(chunk))])
        assert os.statvfs(self.root).f_bavail * PAGE <= room + PAGE

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)


def _full_sweep(store, disk: SmallDisk, pristine: Path, argv_for, check_done, tmp: Path) -> dict:
    """``argv_for(path)`` on a copy of ``pristine`` on the small disk with ``room`` bytes left, for every
    ``room`` from 0 up, page by page, until it succeeds three times running; returns the outcomes seen."""
    tight = tmp / f"tight-{pristine.name}"
    shutil.copyfile(pristine, tight)
    with sqlite3.connect(
        tight
    ) as conn:  # no free pages: a change must grow the file, so copying it in can fail
        conn.execute("VACUUM")
    copies = Copies(tight, disk.root / "work.dpdesk", tmp)
    seen = {"failed": 0, "settle": 0, "succeeded": 0}
    room, streak = 0, 0
    while streak < 3:
        assert room < 2 << 20, "never succeeded"
        path = copies.fresh()
        _, before, _ = _state(path)
        disk.fill(room)
        try:
            ran = _run(store, argv_for(path))
            if ran.returncode == 0:
                # it says it worked: then it is all in the file itself, nothing left in a log
                assert not db.log_holds_frames(path), (room, ran)
                report, _, _ = _state(path)  # read on the full disk: never refused as truncated
                assert report.ok, (room, report.problems)
        finally:
            disk.free()
        where = (room, ran.stderr)
        if ran.returncode == 0:
            streak += 1
            seen["succeeded"] += 1
        else:
            streak = 0
            seen["failed"] += 1
            seen["settle"] += "dpdesk project settle" in ran.stderr
            _check_failure(store, path, ran, before, where, "disk is full")
            _retry(store, path, ran, argv_for(path))
        check_done(path, where)
        room += PAGE
    return seen


@pytest.mark.parametrize("name", OPERATIONS)
def test_on_a_full_disk(name, store, small_disk, tmp_path, request):
    pristine, argv, done, _ = _operation(name, request)
    seen = _full_sweep(store, small_disk, pristine, argv, done, tmp_path)
    assert seen["failed"] >= 2, seen


def test_answers_until_the_disk_is_full(store, small_disk, tmp_path):
    """The issue's case: answers one after another on a disk with ``room`` bytes left, until one fails. No
    answer says it worked while its copy into the file failed; the failure is one line; with the disk
    still full every command reads the file (none calls it truncated) and ``requests add`` is one line;
    once there is room the line's command finishes it and answering goes on."""
    pristine = store.new_project(budget=50.0)
    with Project.open(pristine, "w") as p:
        for i in range(1, 13):
            p.add_request('count(age="0-30")', 9, 0.2, "a", f"q{i}")
    copies = Copies(pristine, small_disk.root / "work.dpdesk", tmp_path)
    seen = {"settle": 0, "discarded": 0, "add refused": 0}
    for room in range(0, 160 * 1024, 2 * PAGE):
        path = copies.fresh()
        small_disk.fill(room)
        try:
            for i in range(1, 13):
                ran = _run(store, ("answer", path, "--request", f"q{i}", "--yes"))
                if ran.returncode != 0:
                    break
                assert not db.log_holds_frames(path), (room, i, ran)
            else:
                continue
            where = (room, i, ran.stderr)
            assert ran.returncode == 2 and ran.stderr.count("\n") == 1, where
            assert path.name in ran.stderr and "full" in ran.stderr, where
            # still full: the file is read through its log, verify passes and holds every printed answer
            checked = _run(store, ("verify", path))
            assert checked.returncode == 0, (where, checked)
            _, entries, statuses = _state(path)
            answered = [f"q{j}" for j in range(1, i)] + ([f"q{i}"] if "answer q" in ran.stdout else [])
            assert all(statuses[q] == "answered" for q in answered), (where, statuses)
            added = _run(
                store, ("requests", "add", path, "--query", "count()", "--eps", "9", "--delta", "0.2")
            )
            if added.returncode != 0:  # (a request is smaller than an answer: it may still fit)
                assert added.returncode == 2 and added.stderr.count("\n") == 1, (where, added)
                assert "Traceback" not in added.stderr and path.name in added.stderr, (where, added)
                seen["add refused"] += 1
        finally:
            small_disk.free()
        seen["settle"] += "dpdesk project settle" in ran.stderr
        seen["discarded"] += "discarded unseen" in ran.stderr
        _retry(store, path, ran, ("answer", path, "--request", f"q{i}", "--yes"))
        assert not db.log_holds_frames(path), where
        after = _run(store, ("answer", path, "--request", f"q{i + 1}", "--yes"))
        assert after.returncode == 0, (where, after)
        report, entries, statuses = _state(path)
        assert report.ok and statuses[f"q{i}"] == statuses[f"q{i + 1}"] == "answered", (
            where,
            report.problems,
        )
        decided = [rid for *_, rid in entries if rid is not None]
        assert len(decided) == len(set(decided)), where
    assert seen["settle"] >= 1 and seen["discarded"] >= 1 and seen["add refused"] >= 1, seen
