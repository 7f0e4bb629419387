"""Hostile names and targets (issue 31, items 4, 5 and 8): exports write regular files only, every
requester has letters of their own, the ledger CSV holds no formula, killed processes' spill folders go."""

from __future__ import annotations

import csv
import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest


def _answered(store, requesters):
    """A project where each of ``requesters`` has one answered request (test sampler, no OpenDP)."""
    from dpdesk.engine.mechanisms.noise import SeededSampler
    from dpdesk.store import Project

    path = store.new_project(test_project=True)
    with Project.open(path, "w") as p:
        for i, who in enumerate(requesters):
            p.add_request('count(income=">50K")', 20 + i, 0.05, who, f"r{i}")
            p.answer(f"r{i}", SeededSampler(i))
    return path


def test_every_requester_has_letters_of_their_own(store):
    """Names that reduce to the same ASCII (张伟, 李娜 → 'anonymous'), the anonymous requester, one named
    'anonymous', and names differing only in case each get their own two files, each naming its requester."""
    from dpdesk.store import Project
    from dpdesk.store.letters import write_letters
    from dpdesk.store.requesters import accounts

    names = ["张伟", "李娜", "", "anonymous", "Bob", "bob", "a/b", "a b"]
    path = _answered(store, names)
    with Project.open(path, "r") as p:
        accts = accounts(p.ledger(), p.requests())
    written = write_letters(store.dir / "letters", accts, "people")
    files = sorted((store.dir / "letters").iterdir())
    assert len(written) == len(set(written)) == len(files) == 2 * len(names)
    assert len({f.name.casefold() for f in files}) == len(files)  # distinct on case-blind file systems too
    for who in names:
        mine = [
            f for f in files if f.suffix == ".txt" and f"Dear {who or 'requester'}," in f.read_text("utf-8")
        ]
        assert len(mine) == 1, who
    again = write_letters(store.dir / "letters", accts, "people")
    assert again == written  # the same file for the same requester every time


@pytest.fixture
def targets(tmp_path):
    """Things with a name that are not regular files: a FIFO, a folder, a symbolic link (and, as root, a
    character device of our own like /dev/full)."""
    fifo, folder, link = tmp_path / "fifo.csv", tmp_path / "folder.csv", tmp_path / "link.csv"
    kept = tmp_path / "kept.txt"
    os.mkfifo(fifo)
    folder.mkdir()
    kept.write_text("kept\n", encoding="utf-8")
    link.symlink_to(kept)
    out = {
        "FIFO": (fifo, stat.S_ISFIFO),
        "folder": (folder, stat.S_ISDIR),
        "symbolic link": (link, stat.S_ISLNK),
    }
    if os.geteuid() == 0:
        device = tmp_path / "full.csv"
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        out["character device"] = (device, stat.S_ISCHR)
    return out


def test_exports_refuse_what_is_not_a_regular_file(store, targets):
    """Every export path (history, partition table, synthetic table and report, ledger CSV, audit report,
    letters) leaves a FIFO, a folder, a link and a device as they were, with one line naming what it is."""
    from dpdesk.store import Project
    from dpdesk.store.audit_export import export_csv, export_report
    from dpdesk.store.errors import StoreError
    from dpdesk.store.letters import write_letters
    from dpdesk.store.requesters import accounts

    path = _answered(store, ["alice"])
    r = store.cli("release", "publish", path, "--cells", "--alpha", "0.1", "--yes")
    assert r.returncode == 0, r.stderr
    with Project.open(path, "r") as p:
        partition = p.ledger()[-1].seq
    for what, (target, is_kind) in targets.items():
        commands = [
            ("export", path, "--history", target),
            ("release", "export", path, "--release", partition, "--out", f"{target}"),
            ("synth", path, "--rows", 5, "--out", store.dir / "s.csv", "--report", target, "--yes"),
        ]
        for argv in commands:
            r = store.cli(*argv)
            assert r.returncode == 2 and r.stderr.count("\n") == 1, (argv, r.stderr)
            assert f"is a {what}" in r.stderr, r.stderr
            assert is_kind(os.lstat(target).st_mode), argv
        with Project.open(path, "r") as p:
            for write in (lambda: export_csv(p, target), lambda: export_report(p, target, {})):
                with pytest.raises(StoreError, match=what.split()[-1]):
                    write()
                assert is_kind(os.lstat(target).st_mode)
    kept = targets["symbolic link"][0].resolve()
    assert kept.read_text(encoding="utf-8") == "kept\n"
    assert not (store.dir / "s.csv").exists()  # synth refused before it recorded or wrote anything
    # a letter's name taken by a FIFO: refused before any letter is written
    letters = store.dir / "letters"
    letters.mkdir()
    os.mkfifo(letters / "alice.txt")
    with Project.open(path, "r") as p:
        with pytest.raises(StoreError, match="FIFO"):
            write_letters(letters, accounts(p.ledger(), p.requests()), "people")
    assert sorted(f.name for f in letters.iterdir()) == ["alice.txt"]


def test_ledger_csv_cells_are_never_formulas(store):
    """Requester names and reasons that a spreadsheet would run (=HYPERLINK, +cmd, @SUM, -…) are text in the
    ledger CSV; negative released counts stay numbers."""
    from dpdesk.store import Project
    from dpdesk.store.report import ledger_csv
    from dpdesk.store.requesters import requester_of

    hostile = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "@SUM(A1:A9)", "-2+3"]
    path = _answered(store, hostile)
    with Project.open(path, "w") as p:
        p.add_request('count(income=">50K")', 10, 0.05, "carol", "neg")
        p.reject("neg", "=1+1")
        text = ledger_csv(p.ledger(), requesters=requester_of(p.requests()))
    rows = list(csv.DictReader(io.StringIO(text)))
    for row in rows:
        for column, cell in row.items():
            if cell[:1] in ("=", "+", "@", "\t", "\r") or (cell[:1] == "-" and not _number(cell)):
                pytest.fail(f"{column} cell {cell!r} would run as a formula")
    assert [r["requester"] for r in rows[: len(hostile)]] == ["'" + h for h in hostile]
    assert rows[-1]["query"] == "'=1+1"


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_spill_folders_of_killed_processes_are_removed(tmp_path, monkeypatch):
    """DuckDB's spill folder of a process killed mid-count is removed by the next count; a live process's
    folder and folders that are not dpdesk's stay."""
    from dpdesk.sources import open_source
    from dpdesk.sources.duck import SPILL_PREFIX

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = tmp_path / f"{SPILL_PREFIX}{int(dead.stdout)}-abc123"
    (stale / "spill").mkdir(parents=True)
    live = tmp_path / f"{SPILL_PREFIX}{os.getppid()}-def456"
    live.mkdir()
    other = tmp_path / "dpdesk-duckdb-notapid"
    other.mkdir()
    table = tmp_path / "t.csv"
    table.write_text("age\n1\n2\n", encoding="utf-8")
    schema_obj = {"attributes": [{"name": "age", "kind": "numeric", "edges": [0, 10]}]}
    from dpdesk.engine.schema import Schema

    assert open_source(str(table)).build_cube(Schema.from_dict(schema_obj)).total == 2
    assert not stale.exists() and live.exists() and other.exists()
    assert not [p for p in Path(tmp_path).iterdir() if p.name.startswith(f"{SPILL_PREFIX}{os.getpid()}-")]
