"""The source binding: a keyed fingerprint of the cube, checked without a second pass over the source.

The key lives in the per-user data folder, not in the project: another machine without it still opens,
verifies and exports the project, and is told the changed-source check is unavailable there. Files of
format 7 and older keep their unkeyed binding (its plain hash and counts are under the hash chain), verify
says what they expose, and a rebind replaces it.
"""

from __future__ import annotations

import importlib
import shutil
import stat

import pytest

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.sources.base import Source
from dpdesk.store import Project, db
from dpdesk.store.errors import BindingError
from dpdesk.store.source_key import find_key, key_folder, own_key


def _no_second_pass(monkeypatch) -> list[str]:
    """Make every file source's old fingerprint (the files hashed, the rows counted) a failure."""
    for module in ("dpdesk.sources.duck", "dpdesk.sources.sqlite_source"):  # a CSV's source is DuckDB's
        importlib.import_module(module)  # imported, so that it is patched too

    def refuse(self, **_):
        raise AssertionError(f"{type(self).__name__}.fingerprint: a second pass over the source")

    patched = [cls.__name__ for cls in (Source, *Source.__subclasses__())]
    for cls in (Source, *Source.__subclasses__()):
        monkeypatch.setattr(cls, "fingerprint", refuse)
    return patched


def test_binding_and_checking_read_the_source_once(store, monkeypatch):
    """Creating, answering, describing and rebinding build the cube and nothing else of the source."""
    assert "DuckDBSource" in _no_second_pass(monkeypatch)  # the CSV's source
    path = store.new_project(budget=10, test_project=True)
    with Project.open(path, "w") as p:
        r = p.add_request("[1,0,0,0]", 5, 0.1)
        p.answer(r.id, SeededSampler(1))
        assert p.binding_problem() is None
    store.write_table(store.table, [(10, "<=50K")] * 11)
    with Project.open(path, "w") as p:
        assert "changed since it was bound" in p.binding_problem()
        entry = p.rebind()
        assert p.binding_problem() is None and entry.payload["current"]["key_id"] == own_key().key_id


@pytest.mark.parametrize(
    "rows",
    [
        [(10, "<=50K")] * 9 + [(20, ">50K")] * 21,  # one record moved between cells
        [(10, "<=50K")] * 10 + [(20, ">50K")] * 20 + [(300, ">50K")],  # one more record out of the domain
        [(10, "<=50K")] * 10 + [(20, ">50K")] * 19,  # one record fewer
    ],
)
def test_the_keyed_fingerprint_sees_every_change_a_release_could_see(store, rows):
    base = [(10, "<=50K")] * 10 + [(20, ">50K")] * 20
    store.write_table(store.table, base)
    path = store.new_project()
    with Project.open(path, "r") as p:
        assert p.binding_problem() is None
    store.write_table(store.table, list(reversed(base)))  # the same records in another order: the same data
    with Project.open(path, "r") as p:
        assert p.binding_problem() is None
    store.write_table(store.table, rows)
    with Project.open(path, "r") as p:
        assert "changed since it was bound" in p.binding_problem()


def test_the_key_stays_in_the_user_folder(store):
    path = store.new_project()
    key = own_key()
    assert find_key(key.key_id) == key and len(key.secret) == 32
    assert stat.S_IMODE((key_folder() / f"{key.key_id}.key").stat().st_mode) == 0o600
    assert key.secret not in path.read_bytes() and key.secret.hex().encode() not in path.read_bytes()
    with Project.open(path, "r") as p:
        assert p.source.key_id == key.key_id


def test_another_machine_without_the_key(store, tmp_path, monkeypatch):
    """verify and reading work; releasing refuses in one line until the key is copied or a rebind."""
    path = store.new_project(budget=10)
    with Project.open(path, "w") as p:
        p.add_request("[1,0,0,0]", 5, 0.1)
        p.add_request("[0,1,0,0]", 5, 0.1)
        key_id = p.source.key_id
    home = key_folder()
    monkeypatch.setenv("DPDESK_DATA_DIR", str(tmp_path / "elsewhere"))  # the auditor's machine
    assert find_key(key_id) is None
    res = store.cli("verify", path)
    assert res.returncode == 0 and res.stdout.startswith("OK") and "exposes" not in res.stdout, res
    res = store.cli("project", "info", path)
    assert res.returncode == 0 and f"source key {key_id}" in res.stdout and "does not have" in res.stdout
    before = store.digest(path)
    res = store.cli("answer", path, "--request", "r1", "--yes")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and f"{key_id}.key" in res.stderr, res.stderr
    assert store.digest(path) == before and not (tmp_path / "elsewhere" / "source-keys").exists()

    key_folder().mkdir(parents=True)  # the curator copies the key over: the check works again
    shutil.copy(home / f"{key_id}.key", key_folder())
    assert store.cli("answer", path, "--request", "r1", "--yes").returncode == 0
    (key_folder() / f"{key_id}.key").unlink()

    res = store.cli("project", "rebind", path)  # or binds the data as it is here, with this machine's key
    assert res.returncode == 0 and f"source key {own_key().key_id}" in res.stdout, res
    assert own_key().key_id != key_id
    assert store.cli("answer", path, "--request", "r2", "--yes").returncode == 0
    with Project.open(path, "r") as p:
        assert [e.kind for e in p.ledger()] == ["fresh", "rebind", "fresh"] and p.verify().ok


def test_an_old_file_keeps_working_says_what_it_exposes_and_a_rebind_replaces_its_binding(store, monkeypatch):
    with monkeypatch.context() as m:  # written by a dpdesk of format 7: an unkeyed binding
        m.setattr(db, "FORMAT_VERSION", 7)
        path = store.new_project(budget=10)
        with Project.open(path, "w") as p:
            p.add_request("[1,0,0,0]", 5, 0.1)
            p.add_request("[0,1,0,0]", 5, 0.1)
            assert p.source.row_count == 61 and p.source.fingerprint_method == "sha256"
    res = store.cli("verify", path)
    assert res.returncode == 0 and res.stdout.startswith("OK"), res
    exposed = [line for line in res.stdout.splitlines() if line.startswith("  exposes: ")]
    assert len(exposed) == 2 and "initial source binding" in exposed[0] and "row count" in exposed[0]
    assert "current source binding" in exposed[1] and "project rebind" in exposed[1]

    assert (
        store.cli("answer", path, "--request", "r1", "--yes").returncode == 0
    )  # migrated; checked as before
    with Project.open(path, "r") as p:
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == db.FORMAT_VERSION
        assert not p.source.keyed and p.verify().ok
    res = store.cli("project", "rebind", path)  # the data did not change: the rebind replaces the binding
    assert res.returncode == 0 and "keyed" in res.stdout, res
    assert store.cli("answer", path, "--request", "r2", "--yes").returncode == 0
    with Project.open(path, "r") as p:
        report = p.verify()
        assert (
            p.source.keyed
            and p.source.row_count is None
            and [e.kind for e in p.ledger()]
            == [
                "fresh",
                "rebind",
                "fresh",
            ]
        )
    assert report.ok and len(report.exposes) == 2, report.exposes
    assert "initial" in report.exposes[0] and "rebind entry 2" in report.exposes[1]

    store.write_table(store.table, [(10, "<=50K")] * 3)
    with Project.open(path, "w") as p, pytest.raises(BindingError, match="changed since it was bound"):
        p.cube()
