"""Hostile input to every subcommand and to the query and schema parsers (issue 31).

A property-based test in the way SQLite tests itself: hypothesis builds command lines for every
subcommand from the command-line parser itself (every option of every leaf command, mutually exclusive
groups respected), with values drawn from pools of hostile numbers, texts, paths and files, and runs
each through :func:`dpdesk.cli.main` in this process on a fresh copy of a small project. Whatever the
input: no exception escapes, the exit code is 0, 1 or 2, and a refusal (exit 2) is one line on stderr
with the project folder exactly as it was (nothing written). Every input issue 31 found is a fixed
example. The examples are derandomized (tests/conftest.py) and their number fixed, so the run is the
same everywhere; the project is four cells and every input is bounded in size, so no command has work
to do that grows with the input unless dpdesk lets it — the test's timeout is only a backstop.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from cli_helpers import run_dpdesk
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.timeout(600)

SCHEMA = {
    "attributes": [
        {
            "name": "age",
            "column": "age",
            "kind": "numeric",
            "edges": [0, 30, 150],
            "labels": ["0-30", "30-150"],
        },
        {"name": "sex", "column": "sex", "kind": "categorical", "values": ["Female", "Male"]},
    ]
}
ROWS = [(10, "Female")] * 10 + [(20, "Male")] * 20 + [(40, "Female")] * 20 + [(50, "Male")] * 10

# -- hostile value pools -------------------------------------------------------------------------------
NUMBERS = (
    "0", "-0", "-1", "0.5", "1", "2", "3", "0.05", "0.95", "50", "1e6", "1e9", "1e308", "-1e308", "1e-300",
    "5e-324", "1e-12", "nan", "inf", "-inf", "1e999", "0x10", "1_000", "١", "¹", "", " ", "abc", "9" * 400,
)  # fmt: skip
INTEGERS = ("0", "-1", "1", "2", "3", "10", "64", "1000", "99999999999999999999", "1e3", "", "x", "9" * 400)
TEXTS = (
    "", " ", "a", "bob", "张伟", "李娜", "../../etc/passwd", "a/b", "\\", "=HYPERLINK(\"http://x\")", "+1", "-1",
    "@SUM(A1)", "\t", "x\ny", "\x00", "\u202e", "'; DROP TABLE ledger; --", "ä" * 300, "r1", "q-1",
)  # fmt: skip
QUERY_PIECES = (
    'count(age="0-30")', 'count(sex="Male")', "count()", 'count(age=["0-30","30-150"])', "parity(sex)",
    'max(age)', 'argmax(sex | age="0-30")', 'posterior(sex; prior=1; budget=0.1)', 'estimate(count(sex="Male"))',
    "¹", "٣*count()", "1e308*count()", "1e-300*count()", "5e-324*count()", "1e999*count()", "nan*count()",
    "2*count() - count()", "count(age=1)", 'count("age"="0-30")', "count(nope=1)", "[1,2,3,4]", "[1,0,0]",
    '{"indices":[0],"values":[1e308]}', '{"indices":[9],"values":[1]}', "[[[[[]]]]]", "((((count()))))",
    "-" * 300 + "count()", "(" * 300 + "count()" + ")" * 300, "count(", ")", "'unterminated", "",
)  # fmt: skip
IDS = ("r1", "r2", "m1", "nope", "", "../r1", "r" * 65, "张", "-r")
HASHES = ("0" * 64, "z" * 64, "abc", "")
ATTRS = ("age", "sex", "age,sex", "nope", "", ",", "age,age", "1,2", "0", "9" * 30)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A pristine small project with a little of everything recorded, and the files inputs point at."""
    from dpdesk.store.project import Project

    base = tmp_path_factory.mktemp("fuzz")
    csv = base / "people.csv"
    csv.write_text("age,sex\n" + "".join(f"{a},{s}\n" for a, s in ROWS), encoding="utf-8")
    files = {
        "CSV": csv,
        "CSV_RAGGED": base / "ragged.csv",
        "CSV_WIDE": base / "wide.csv",
        "CSV_LONG": base / "long.csv",
        "SCHEMA_GH": base / "gh.schema.json",
        "SCHEMA": base / "people.schema.json",
        "SCHEMA_DEEP": base / "deep.schema.json",
        "SCHEMA_WIDE": base / "wide.schema.json",
        "SCHEMA_BIGEDGE": base / "bigedge.schema.json",
        "SCHEMA_BAD": base / "bad.schema.json",
        "REQ_JSON": base / "requests.json",
        "REQ_CSV": base / "requests.csv",
        "REQ_DEEP": base / "deep.json",
        "REQ_BIGFIELD": base / "bigfield.csv",
        "HISTORY": base / "h.history.json",
    }
    files["CSV_RAGGED"].write_text("g,h\n1,a\n2,b,4\n3\n", encoding="utf-8")
    files["CSV_WIDE"].write_text("age," * 20_000 + "sex\n", encoding="utf-8")
    files["CSV_LONG"].write_text("query" + ",x" * 2**20, encoding="utf-8")  # one line of 2 MiB
    gh = [
        {"name": "g", "kind": "numeric", "edges": [0, 10]},
        {"name": "h", "kind": "categorical", "values": ["a", "b"]},
    ]
    files["SCHEMA_GH"].write_text(json.dumps({"attributes": gh}), encoding="utf-8")
    files["SCHEMA"].write_text(json.dumps(SCHEMA), encoding="utf-8")
    files["SCHEMA_DEEP"].write_text('{"attributes": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    wide = {
        "attributes": [
            {"name": f"a{i}", "kind": "categorical", "values": list(range(1000))} for i in range(8)
        ]
    }
    files["SCHEMA_WIDE"].write_text(json.dumps(wide), encoding="utf-8")
    files["SCHEMA_BIGEDGE"].write_text(
        '{"attributes": [{"name": "age", "kind": "numeric", "edges": [0, 1' + "0" * 5000 + "]}]}",
        encoding="utf-8",
    )
    files["SCHEMA_BAD"].write_text('{"attributes": [{"name": "age", "kind": "numeric"', encoding="utf-8")
    files["REQ_JSON"].write_text(
        json.dumps(
            [{"query": 'count(sex="Male")', "eps": 5, "delta": 0.05, "requester": "=cmd|' /C calc'!A0"}]
        ),
        encoding="utf-8",
    )
    files["REQ_CSV"].write_text('query,eps,delta\n"count(sex=""Male"")",1e308,0.05\n', encoding="utf-8")
    files["REQ_BIGFIELD"].write_text(
        'query,eps,delta\n"count(' + "a" * 200_000 + ')",1,0.05\n', encoding="utf-8"
    )
    files["REQ_DEEP"].write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    files["HISTORY"].write_text(
        json.dumps(
            {"cells": 4, "total_budget": 1.0, "rows": [{"query": [1, 1, 0, 0], "alpha": 0.1, "answer": 30.8}]}
        ),
        encoding="utf-8",
    )
    project = base / "p.dpdesk"
    with Project.create(
        project, name="people", schema=SCHEMA, source_location=str(csv), total_budget=1.0, test_project=True
    ) as p:
        p.add_request('count(sex="Male")', 10, 0.05, "alice", "r1")
        p.add_request('count(age="0-30")', 20, 0.05, "bob", "r2")
        p.add_request("max(age)", 5, 0.1, "carol", "m1")
        p.answer("r1")
    flipped = base / "flipped.dpdesk"
    shutil.copyfile(project, flipped)
    data = bytearray(flipped.read_bytes())
    at = data.find(b"alice")
    data[at] = 0xFF  # a bit flip in the requester's name: no longer UTF-8
    flipped.write_bytes(bytes(data))
    return {"base": base, "project": project, "flipped": flipped, "files": files}


def _leaves() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    from dpdesk.cli import build_parser

    out = []

    def walk(parser, words):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out.append((words, parser))
            return
        for name, sp in subs[0].choices.items():
            walk(sp, (*words, name))

    walk(build_parser(), ())
    return out


LEAVES = _leaves()
OUT_DESTS = {("export", "history"), ("release export", "out"), ("synth", "out"), ("synth", "report")}


def _pool(command: str, dest: str, nargs) -> st.SearchStrategy:
    """Values for option ``dest`` of ``command``: hostile, with the valid ones mixed in."""
    files = st.sampled_from(
        [
            "{SCHEMA}",
            "{SCHEMA_DEEP}",
            "{SCHEMA_WIDE}",
            "{SCHEMA_BIGEDGE}",
            "{SCHEMA_BAD}",
            "{CSV}",
            "{CSV_RAGGED}",
        ]
        + [
            "{CSV_WIDE}",
            "{CSV_LONG}",
            "{SCHEMA_GH}",
            "{REQ_JSON}",
            "{REQ_CSV}",
            "{REQ_DEEP}",
            "{REQ_BIGFIELD}",
            "{HISTORY}",
            "{MISSING}",
            "{DIR}",
            "{P}",
        ]
    )
    outs = st.sampled_from(
        ["{OUT}.csv", "{OUT}.parquet", "{OUT}.json", "{FIFO}", "{LINK}", "{DIR}", "{DEVICE}", "{NODIR}/x.csv"]
    )
    if (command, dest) in OUT_DESTS:
        return outs
    if dest in ("path", "project"):
        return st.sampled_from(
            ["{P}"] * 6 + ["{FLIPPED}", "{NODIR}/x.dpdesk", "{DIR}", "{SCHEMA}", "{MISSING}"]
        )
    if dest in ("schema", "source", "file", "history", "queries"):
        return files
    if dest == "query":
        return st.one_of(
            st.sampled_from(QUERY_PIECES),
            st.lists(st.sampled_from(QUERY_PIECES), min_size=2, max_size=4).map(" + ".join),
            st.text(max_size=40),
        )
    if dest in ("request", "id"):
        return st.sampled_from(IDS)
    if dest == "requests":
        return st.lists(st.sampled_from(IDS), max_size=3).map(",".join)
    if dest in ("requester", "name", "reason", "table"):
        return st.sampled_from(TEXTS)
    if dest == "extends":
        return st.sampled_from(HASHES)
    if dest in ("marginals", "marginal", "tree", "cross"):
        return st.sampled_from(ATTRS)
    hostile = st.sampled_from(INTEGERS if dest in WHOLE else NUMBERS)
    if dest not in WHOLE:
        hostile = st.one_of(hostile, st.floats(allow_nan=False).map(repr))
    if dest in PLAUSIBLE:  # often a sensible value, so that the commands get past argparse to their work
        return st.one_of(st.sampled_from(PLAUSIBLE[dest]), hostile)
    return hostile


WHOLE = ("reference_size", "branching", "depth", "rows", "seed", "release")
PLAUSIBLE = {
    "eps": ("5", "20", "60"), "delta": ("0.05", "0.1"), "alpha": ("0.1", "0.5"), "budget": ("1", "0.5"),
    "table_size": ("100", "60"), "tau": ("1", "0.1"), "interval": ("0", "100"), "pace": ("0.1", "0.5"),
    "share": ("0.5", "1"), "look_ahead": ("0.5", "1"), "accuracy": ("5", "20"), "delta_cap": ("0", "1e-6"),
    "threshold": ("0.9",), "risk": ("0.05",), "between": ("0", "10", "100"), "at_most": ("10",),
    "at_least": ("10",), "reference_size": ("100",), "branching": ("2",), "depth": ("1",),
    "rows": ("10", "100"), "seed": ("0", "7"), "release": ("1", "2"),
}  # fmt: skip


@st.composite
def command_lines(draw) -> list[str]:
    words, parser = draw(st.sampled_from(LEAVES))
    command = " ".join(words)
    argv = list(words)
    exclusive = {}
    for group in parser._mutually_exclusive_groups:
        actions = list(group._group_actions)
        keep = draw(st.sampled_from(actions)) if group.required or draw(st.booleans()) else None
        for a in actions:
            exclusive[a.dest] = a is keep
    for a in parser._actions:
        if isinstance(a, argparse._HelpAction) or a.dest == "spark":  # Spark would start a JVM
            continue
        if a.dest in exclusive and not exclusive[a.dest]:
            continue
        required = a.required or not a.option_strings or exclusive.get(a.dest, False)
        if not required and not draw(st.booleans()):
            continue
        if a.nargs == 0:
            argv.append(a.option_strings[0])
            continue
        count = a.nargs if isinstance(a.nargs, int) else (0 if a.nargs == "?" and draw(st.booleans()) else 1)
        values = [draw(_pool(command, a.dest, a.nargs)) for _ in range(count)]
        if a.option_strings:
            argv.append(a.option_strings[0])
        argv.extend(values)
    return argv


def _fill(argv: list[str], world: dict, here: Path) -> list[str]:
    names = {f"{{{k}}}": str(v) for k, v in world["files"].items()}
    names |= {
        "{P}": str(here / "p.dpdesk"),
        "{FLIPPED}": str(here / "flipped.dpdesk"),
        "{OUT}": str(here / "out"),
        "{FIFO}": str(here / "fifo"),
        "{DEVICE}": str(here / "device"),
        "{LINK}": str(here / "link.csv"),
        "{DIR}": str(here / "adir"),
        "{NODIR}": str(here / "nodir"),
        "{MISSING}": str(here / "missing.json"),
    }
    out = []
    for word in argv:
        if word.startswith("{"):  # a placeholder (or a path under one)
            for k, v in names.items():
                word = word.replace(k, v)
        out.append(word)
    return out


def _state(folder: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``folder`` (sidecars and the lock file aside): its type and, for files, a digest."""
    out = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if name.endswith((".lock", "-wal", "-shm")):
            continue
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            out[name] = ("link", os.readlink(path))
        elif stat.S_ISREG(mode):
            out[name] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
        else:
            out[name] = ("dir" if stat.S_ISDIR(mode) else "other", "")
    return out


def _prepare(world: dict) -> Path:
    here = world["base"] / "run"
    if here.exists():
        shutil.rmtree(here)
    here.mkdir()
    shutil.copyfile(world["project"], here / "p.dpdesk")
    shutil.copyfile(world["flipped"], here / "flipped.dpdesk")
    (here / "adir").mkdir()
    os.mkfifo(here / "fifo")
    if os.geteuid() == 0:  # a device node of our own, like /dev/full (never the system's)
        os.mknod(here / "device", stat.S_IFCHR | 0o666, os.makedev(1, 7))
    (here / "elsewhere.csv").write_text("kept\n", encoding="utf-8")
    (here / "link.csv").symlink_to(here / "elsewhere.csv")
    return here


def check_command(argv: list[str], world: dict) -> None:
    here = _prepare(world)
    argv = _fill(argv, world, here)
    before = _state(here)
    ran = run_dpdesk(*argv)
    assert ran.returncode in (0, 1, 2), (argv, ran)
    assert "Traceback" not in ran.stderr + ran.stdout, (argv, ran)
    if ran.returncode == 2:
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("dpdesk: error: "), (argv, ran.stderr)
        assert _state(here) == before, (argv, ran.stderr)


BIG_NAME = "x" * 50_000_000

# The inputs issue 31 found (its items 6, 7 and 8), each a fixed example of the property test and each
# checked here for what it must give: the exit code and a word of the one line that names the problem.
ISSUE_INPUTS = [
    (["requests", "add", "{P}", "--query", "¹", "--eps", "1", "--delta", "0.05"], 2, "unexpected character"),
    (["requests", "add", "{P}", "--query", "(" * 5000 + 'count(sex="Male")' + ")" * 5000, "--eps", "1", "--delta", "0.05"], 2, "deep"),
    (["requests", "add", "{P}", "--query=" + "-" * 5000 + 'count(sex="Male")', "--eps", "1", "--delta", "0.05"], 2, "deep"),
    (["project", "new", "{OUT}.dpdesk", "--schema", "{SCHEMA_DEEP}", "--source", "{CSV}", "--budget", "1"], 2, "nested too deeply"),
    (["project", "new", "{OUT}.dpdesk", "--schema", "{SCHEMA_WIDE}", "--source", "{CSV}", "--budget", "1"], 2, "cells"),
    (["cube", "{CSV}", "--schema", "{SCHEMA_WIDE}"], 2, "cells"),
    (["project", "new", "{OUT}.dpdesk", "--schema", "{SCHEMA_BIGEDGE}", "--source", "{CSV}", "--budget", "1"], 2, "too long"),
    (["project", "new", "{NODIR}/x.dpdesk", "--schema", "{SCHEMA}", "--source", "{CSV}", "--budget", "1"], 2, "does not exist"),
    (["release", "publish", "{P}", "--cells", "--alpha", "1e308", "--yes"], 2, "alpha"),
    (["release", "plan", "{P}", "--cells", "--accuracy", "1e-300"], 2, "accuracy"),
    (["release", "plan", "{P}", "--cells", "--accuracy", "1e9"], 2, "too wide"),  # found by the property test
    (["requests", "list", "{FLIPPED}"], 2, "not UTF-8"),
    (["verify", "{FLIPPED}"], None, ""),
    (["requests", "add", "{P}", "--query", '1e308*count(sex="Male")', "--eps", "50", "--delta", "0.05"], 2, "coefficient"),
    (["requests", "add", "{P}", "--query", 'count(sex="Male")', "--eps", "1e308", "--delta", "0.05"], 2, "eps"),
    (["requests", "add", "{P}", "--query", 'count(sex="Male")', "--eps", "10", "--delta", "0.05", "--requester", BIG_NAME], 2, "requester"),
    (["project", "new", "{OUT}.dpdesk", "--schema", "{SCHEMA}", "--source", "{CSV_LONG}", "--budget", "1"], 2, "first line"),
    (["project", "new", "{OUT}.dpdesk", "--schema", "{SCHEMA}", "--source", "{CSV_WIDE}", "--budget", "1"], 2, "columns"),
    (["project", "new", "{OUT}.dpdesk", "--schema", "{SCHEMA_GH}", "--source", "{CSV_RAGGED}", "--budget", "1"], 2, "do not match"),
    (["requests", "import", "{P}", "{REQ_BIGFIELD}"], 2, "field larger"),
    (["project", "prior", "{P}", "--table-size", "0.5"], 2, "whole number"),
    (["assess", "{P}", "--request", "r2", "--table-size", "0.5"], 2, "whole number"),
    (["export", "{P}", "--history", "{FIFO}"], 2, "FIFO"),
    (["export", "{P}", "--history", "{LINK}"], 2, "symbolic link"),
    (["export", "{P}", "--history", "{DIR}"], 2, "folder"),
    (["requests", "import", "{P}", "{FIFO}"], 2, "not a regular file"),
]  # fmt: skip


def _with_examples(test):
    for argv, _code, _needle in ISSUE_INPUTS:
        test = example(argv=argv)(test)
    return test


@pytest.mark.parametrize(
    "argv,code,needle", ISSUE_INPUTS, ids=[f"issue-{i}" for i in range(len(ISSUE_INPUTS))]
)
def test_issue_inputs(world, argv, code, needle):
    """Each input issue 31 listed gets its one line and exit code, and the project folder is untouched."""
    here = _prepare(world)
    before = _state(here)
    ran = run_dpdesk(*_fill(argv, world, here))
    if code is not None:
        assert ran.returncode == code and needle in ran.stderr, ran
    if ran.returncode == 2:
        assert ran.stderr.count("\n") == 1 and _state(here) == before, ran.stderr


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(argv=command_lines())
@_with_examples
def test_hostile_command_lines(world, argv):
    check_command(argv, world)
