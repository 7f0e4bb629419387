"""Nothing derived from the raw table reaches the files of a project except releases (DESIGN §4).

A table with a distinctive row count (48 731), out-of-domain count (1 379) and in-domain total (47 352)
is bound to a project through the command line; requests are answered, the project described, verified
and exported, and every file dpdesk wrote for it — the project file and its sidecars, the view cache,
the history export, the ledger CSV, the HTML report, the reply letters, the per-user data folder with the source key and the receipt log — and
everything the commands printed as JSON is searched for those counts and for the source file's plain
SHA-256 (hex and raw bytes). The same after a rebind to the table with 21 rows more (17 in the domain).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sqlite3
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

from dpdesk.store import Project, view_cache
from dpdesk.store.audit_export import export_csv, export_report
from dpdesk.store.letters import write_letters
from dpdesk.store.requesters import accounts

SCHEMA = {
    "attributes": [
        {"name": "age", "column": "age", "kind": "numeric", "edges": [0, 20, 40, 60, 80, 100]},
        {"name": "sex", "column": "sex", "kind": "categorical", "values": ["F", "M"]},
    ]
}
ROWS, OUT = 48_731, 1_379  # rows of the table and rows out of the declared domain
MORE, MORE_OUT = 21, 4  # added before the rebind: 17 inside the domain, 4 outside


def _write(path: Path, rows: int, out: int) -> None:
    lines = ["age,sex"]
    for i in range(rows - out):
        lines.append(f"{(i * 7919) % 100},{'FM'[(i * 31) % 2]}")
    for i in range(out):  # outside: an undeclared sex, an age over the last edge, or no age at all
        lines.append(("50,X", "150,F", ",M")[i % 3])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _number_patterns(n: int) -> list[re.Pattern[bytes]]:
    """The text forms of ``n`` (plain, grouped) as a whole number, and its 4- and 8-byte binary forms."""
    grouped = f"{n:,}"
    texts = {str(n), grouped, grouped.replace(",", " "), grouped.replace(",", "_"), grouped.replace(",", ".")}
    texts.add(grouped.replace(",", "\u202f").encode("utf-8").decode("latin-1"))
    pats = [
        re.compile(rb"(?<![\w.])" + re.escape(t.encode("latin-1")) + rb"(?:\.0+(?!\d))?(?!\w|\.\d)")
        for t in texts
    ]
    for fmt in ("<q", ">q", "<i", ">i", "<d", ">d"):
        pats.append(re.compile(re.escape(struct.pack(fmt, n))))
    return pats


def _digest_patterns(data: bytes) -> list[re.Pattern[bytes]]:
    raw = hashlib.sha256(data).digest()
    forms = [raw, raw.hex().encode(), raw.hex().upper().encode(), base64.b64encode(raw)]
    return [re.compile(re.escape(f)) for f in forms]


def _sqlite_values(path: Path) -> list[object]:
    """Every value of every table of an SQLite file (integers in records are not whole-byte patterns)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out: list[object] = []
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                out.extend(row)
        return out
    finally:
        conn.close()


@dataclass(frozen=True)
class Secret:
    """A raw-data derivative that must not be written: its name, its byte patterns, its value if a number."""

    name: str
    patterns: tuple[re.Pattern[bytes], ...]
    number: int | None = None

    def in_bytes(self, blob: bytes) -> bool:
        return any(p.search(blob) for p in self.patterns)


def _secrets(table: Path, rows: int, out: int) -> list[Secret]:
    named = {"row count": rows, "out-of-domain count": out, "in-domain total": rows - out}
    counts = [Secret(f"{k} {v}", tuple(_number_patterns(v)), v) for k, v in named.items()]
    return [*counts, Secret(f"sha256 of {table.name}", tuple(_digest_patterns(table.read_bytes())))]


def _leaks(files: list[Path], texts: dict[str, str], secrets: list[Secret]) -> list[tuple[str, str]]:
    """(where, what) for every secret found in a file's bytes, a stored SQLite value or a printed text."""
    found = []
    blobs = {str(f): f.read_bytes() for f in files}
    blobs.update({f"printed by {name}": text.encode("utf-8") for name, text in texts.items()})
    for where, blob in blobs.items():
        found += [(where, s.name) for s in secrets if s.in_bytes(blob)]
    for f in files:
        if f.read_bytes()[:16] != b"SQLite format 3\x00":
            continue
        for value in _sqlite_values(f):
            for s in secrets:
                if isinstance(value, bytes | str):
                    hit = s.in_bytes(value if isinstance(value, bytes) else value.encode("utf-8"))
                else:
                    hit = s.number is not None and value == s.number
                if hit:
                    found.append((f"{f} (a stored value)", s.name))
    return sorted(set(found))


def _written(folder: Path, data_dir: Path, tables: set[Path]) -> list[Path]:
    return sorted(
        f for base in (folder, data_dir) for f in base.rglob("*") if f.is_file() and f not in tables
    )


def test_no_count_or_plain_hash_of_the_source_in_any_file(store, tmp_path, monkeypatch):
    data_dir = tmp_path / "user-data"
    monkeypatch.setenv("DPDESK_DATA_DIR", str(data_dir))
    monkeypatch.delenv("DPDESK_RECEIPTS_DIR")  # the receipt log where dpdesk keeps it: in the data folder
    monkeypatch.setattr(view_cache, "MIN_ROWS", 1)  # the view cache is written even for this short ledger
    folder = tmp_path / "project"
    folder.mkdir()
    table = folder / "people.csv"
    _write(table, ROWS, OUT)
    first = table.read_bytes()
    schema = folder / "people.schema.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    path = folder / "p.dpdesk"
    printed: dict[str, str] = {}

    def cli(*args: object) -> str:
        res = store.cli(*args)
        assert res.returncode in (0, 1), (args, res.stderr)
        printed[" ".join(str(a) for a in args[:2])] = res.stdout
        return res.stdout

    cli("project", "new", path, "--schema", schema, "--source", table, "--budget", "40")
    for i, q in enumerate(
        ('count(age="0-20", sex="F")', 'count(age="20-40") - 0.5*count(sex="M", age="60-80")')
    ):
        cli("requests", "add", path, "--query", q, "--eps", "400", "--delta", "0.05", "--requester", f"R{i}")
    cli("answer", path, "--request", "r1", "--yes")
    cli("answer", path, "--request", "r2", "--yes")

    def export_everything(tag: str) -> None:
        cli("project", "info", path, "--json")
        cli("verify", path, "--json")
        cli("export", path, "--history", folder / f"{tag}.history.json")
        with Project.open(path, "w") as p:
            p.view()
            export_csv(p, folder / f"{tag}.ledger.csv")
            export_report(p, folder / f"{tag}.report.html", {})
            write_letters(folder / f"{tag}-letters", accounts(p.ledger(), p.requests()), p.name)
            p.save_view_cache()

    export_everything("first")
    secrets = _secrets(table, ROWS, OUT)
    tables = {table}
    assert (data_dir / "receipts").is_dir()  # searched with the rest of the data folder
    assert _leaks(_written(folder, data_dir, tables), printed, secrets) == []

    # more rows arrive; the curator accepts them with a rebind and answers again
    _write(table, ROWS + MORE, OUT + MORE_OUT)
    cli("requests", "add", path, "--query", 'count(age="80-100")', "--eps", "400", "--delta", "0.05")
    res = store.cli("answer", path, "--request", "r3", "--yes")
    assert res.returncode == 2 and "changed" in res.stderr, res.stderr
    cli("project", "rebind", path)
    cli("answer", path, "--request", "r3", "--yes")
    export_everything("second")
    with Project.open(path, "r") as p:
        assert [e.kind for e in p.ledger()] == ["fresh", "fresh", "rebind", "fresh"]
        assert p.verify().ok
    secrets += _secrets(table, ROWS + MORE, OUT + MORE_OUT)
    old = folder / "first-table.csv"
    old.write_bytes(first)
    assert _leaks(_written(folder, data_dir, tables | {old}), printed, secrets) == []


@pytest.mark.parametrize("n", [48_731, 1_379])
def test_the_search_finds_the_count_where_it_is(tmp_path, n):
    """The patterns above catch each form a count could take (so a clean search means something)."""
    pats = _number_patterns(n)
    for blob in (
        f'{{"row_count":{n}}}'.encode(),
        f"{n:,} rows".encode(),
        f"= {float(n)}".encode(),
        struct.pack("<q", n),
        struct.pack(">d", float(n)),
    ):
        assert any(p.search(blob) for p in pats), blob
    for blob in (f"{n}.25".encode(), f"a{n}f".encode(), f"9{n}".encode(), f"0.{n}".encode()):
        assert not any(p.search(b" " + blob + b" ") for p in pats[:5]), blob
