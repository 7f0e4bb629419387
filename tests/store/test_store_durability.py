"""Shown means stored in the main file (DESIGN §4): a release survives the loss of ``-wal`` and ``-shm``.

``dpdesk answer`` is SIGKILLed right after it printed the answer (a real process), and the project's
write-ahead log and shared-memory file are deleted — what a curator who copies only ``p.dpdesk`` does.
The main file alone must hold that release: ``verify`` counts it, and answering again shows the same
value instead of drawing a second one. Killed between the commit and the checkpoint that writes it into
the main file, the release was never shown; the main file then says a ledger entry was being recorded,
so with the log gone every command refuses it in one line naming the missing file, and nothing is drawn.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from dpdesk.store import Project

ANSWER = re.compile(r"^answer r1: (\S+)  \[", re.M)
ALREADY = re.compile(r"was already answered \(fresh, ledger entry (\d+)\): (\S+) \[")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, forks) -> Path:
    d = tmp_path_factory.mktemp("durable")
    table = d / "people.csv"
    table.write_text("age,sex\n" + "".join(f"{(i * 37) % 90},{'FM'[i % 2]}\n" for i in range(300)))
    schema = d / "s.json"
    schema.write_text(
        '{"attributes": [{"name": "age", "column": "age", "kind": "numeric", "edges": [0, 30, 60, 90]},'
        ' {"name": "sex", "column": "sex", "kind": "categorical", "values": ["F", "M"]}]}'
    )
    path = d / "p.dpdesk"
    assert (
        forks.run("project", "new", path, "--schema", schema, "--source", table, "--budget", "50")["code"]
        == 0
    )
    res = forks.run(
        "requests", "add", path, "--query", 'count(age="0-30", sex="F")', "--eps", "4", "--delta", "0.05"
    )
    assert res["code"] == 0, res
    with Project.open(path, "r") as p:
        assert p.assess("r1").decision == "spend"
    return path


def _points(forks, path: Path, tmp: Path) -> list[str]:
    log, trial = tmp / "points.log", tmp / "trial.dpdesk"
    shutil.copy(path, trial)
    # the trial is a copy of the same project that draws its own answer: it keeps its own receipts
    env = {"DPDESK_TEST_CHECKPOINT_LOG": str(log), "DPDESK_RECEIPTS_DIR": str(tmp / "trial-receipts")}
    res = forks.run("answer", trial, "--request", "r1", "--yes", env=env)
    assert res["code"] == 0, res
    return [line.split()[1] for line in log.read_text().splitlines()]


def _killed_at(forks, pristine: Path, tmp: Path, label: str) -> tuple[Path, dict]:
    """A copy of the project after ``dpdesk answer`` was SIGKILLed at ``label``, its -wal and -shm deleted."""
    n = _points(forks, pristine, tmp).index(label) + 1
    work = tmp / "work.dpdesk"
    shutil.copy(pristine, work)
    res = forks.run("answer", work, "--request", "r1", "--yes", env={"DPDESK_TEST_KILL_AT": str(n)})
    assert res["signal"] == 9, res
    for suffix in ("-wal", "-shm"):
        Path(f"{work}{suffix}").unlink(missing_ok=True)
    return work, res


def test_killed_after_the_printed_answer_the_main_file_alone_holds_it(forks, pristine, tmp_path):
    work, res = _killed_at(forks, pristine, tmp_path, "cli:printed")
    shown = ANSWER.search(res["output"])
    assert shown, res
    with Project.open(work, "r") as p:
        report = p.verify()
        (entry,) = [e for e in p.ledger() if e.request_id == "r1"]
    assert report.ok and report.fresh == 1, report.problems
    again = forks.run("answer", work, "--request", "r1", "--yes")  # shows the recorded answer: no second draw
    m = ALREADY.search(again["output"])
    assert again["code"] == 2 and m and int(m.group(1)) == entry.seq and m.group(2) == shown.group(1), again
    with Project.open(work, "r") as p:
        assert [e.hash for e in p.ledger()] == [entry.hash] and p.verify().ok


def test_killed_before_the_main_file_holds_the_release_every_command_refuses(forks, pristine, tmp_path):
    work, res = _killed_at(forks, pristine, tmp_path, "tx:committed")
    assert not ANSWER.search(res["output"])  # not shown
    before = work.read_bytes()
    for argv in (
        ["verify", work],
        ["answer", work, "--request", "r1", "--yes"],
        ["project", "info", work],
        ["requests", "list", work],
        ["export", work, "--history", tmp_path / "h.json"],
    ):
        out = forks.run(*argv)
        assert out["code"] == 2, (argv, out)
        lines = out["output"].strip().splitlines()
        assert len(lines) == 1 and "work.dpdesk-wal" in lines[0] and "missing" in lines[0], (argv, out)
    assert work.read_bytes() == before and not (tmp_path / "h.json").exists()


def test_a_release_a_reader_keeps_out_of_the_main_file_is_not_shown(store, monkeypatch):
    """A reader holding an older state keeps a checkpoint from finishing. Before the entry is announced:
    nothing is recorded (the draw is discarded unseen). Between the announcement and the commit: the
    release is recorded, not returned; once the reader is gone, asking again returns that recorded
    release, and the main file alone holds it (no second draw)."""
    import sqlite3

    from dpdesk.engine.mechanisms.noise import SeededSampler
    from dpdesk.store import ledger_book as book_module
    from dpdesk.store.errors import DrawDiscarded, Unsettled

    path = store.new_project(budget=10, test_project=True)
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)

    def hold() -> None:  # a reader starts a read transaction and keeps its state
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM ledger").fetchone()

    with Project.open(path, "w") as p:
        p.add_request("[1,0,0,0]", 5, 0.1)
        hold()
        with pytest.raises(DrawDiscarded, match="another program is reading it"):
            p.answer("r1", SeededSampler(1))
        reader.execute("COMMIT")
        assert p.ledger() == [] and p.request("r1").status == "pending"

        passed = book_module.checkpoint
        monkeypatch.setattr(
            book_module, "checkpoint", lambda label: hold() if label == "tx:announced" else passed(label)
        )
        with pytest.raises(Unsettled, match=r"p\.dpdesk-wal but not yet written into p\.dpdesk"):
            p.answer("r1", SeededSampler(1))
        monkeypatch.setattr(book_module, "checkpoint", passed)
        reader.execute("COMMIT")
        reader.close()
        (entry,) = p.ledger()
        again = p.answer("r1", SeededSampler(2))  # settles, then shows what was recorded
        assert again.recovered and again.entry.hash == entry.hash
    alone = store.dir / "alone.dpdesk"
    alone.write_bytes(path.read_bytes())  # the main file without its log
    with Project.open(alone, "r") as q:
        assert [e.hash for e in q.ledger()] == [entry.hash] and q.verify().ok
