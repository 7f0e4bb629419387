"""Shared pieces for the store tests: a small table, its schema, real project files, the CLI in-process."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from cli_helpers import run_dpdesk

SCHEMA = {
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
ROWS = (
    [(10, "<=50K")] * 10 + [(20, ">50K")] * 20 + [(40, "<=50K")] * 20 + [(50, ">50K")] * 10 + [(200, ">50K")]
)


def write_table(path: Path, rows=ROWS) -> Path:
    path.write_text("age,income\n" + "".join(f"{a},{i}\n" for a, i in rows), encoding="utf-8")
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class ForkServer:
    """Client of ``forkserver.py``: runs CLI commands in forked child processes (see that module)."""

    def __init__(self) -> None:
        script = Path(__file__).with_name("forkserver.py")
        self.proc = subprocess.Popen(
            [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        assert json.loads(self.proc.stdout.readline())["ready"]

    def run(self, *argv, env: dict | None = None) -> dict:
        """``{"signal", "code", "output"}`` of ``dpdesk ARGV`` run in a fresh child process (with the calling
        test's receipt log, tests/conftest.py, unless ``env`` names another)."""
        env = {"DPDESK_RECEIPTS_DIR": os.environ.get("DPDESK_RECEIPTS_DIR", ""), **(env or {})}
        self.proc.stdin.write(json.dumps({"argv": [str(a) for a in argv], "env": env}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="session")
def forks():
    server = ForkServer()
    yield server
    server.close()


@pytest.fixture
def store(tmp_path: Path) -> SimpleNamespace:
    """A table, a schema file and a factory of real project files in ``tmp_path``."""
    table = write_table(tmp_path / "people.csv")
    schema_file = tmp_path / "people.schema.json"
    schema_file.write_text(json.dumps(SCHEMA), encoding="utf-8")

    def new_project(
        name: str = "p.dpdesk",
        budget: float = 1.0,
        test_project: bool = False,
        source: Path = table,
        delta_cap: float = 0.0,
    ):
        from dpdesk.store import Project

        path = tmp_path / name
        Project.create(
            path,
            name="people",
            schema=SCHEMA,
            source_location=str(source),
            total_budget=budget,
            test_project=test_project,
            delta_cap=delta_cap,
        ).close()
        return path

    return SimpleNamespace(
        dir=tmp_path,
        table=table,
        schema_file=schema_file,
        new_project=new_project,
        cli=run_dpdesk,
        digest=digest,
        write_table=write_table,
    )
