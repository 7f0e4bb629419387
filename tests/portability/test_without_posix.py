"""dpdesk runs where Windows' Python runs: no POSIX-only module, function or signal in its code.

Two checks keep it so. At run time, ``as_windows.py`` takes away what Windows lacks (``fcntl``, ``pwd``,
``os.pwrite``, ``os.fork``, ``signal.SIGKILL`` ...) and then imports every dpdesk module, runs the
command line on a real project and the self-test (store, cube, OpenDP release, verify, the main window
offscreen). In the source, an AST scan finds any import of a POSIX-only module that is not guarded by
``except ImportError``, any ``os.``/``signal.`` name only one platform has, ``chmod`` (only the read-only
bit exists on Windows), and hard-coded ``/tmp`` or ``/dev/`` paths — the run-time check only sees the
code paths it runs.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
AS_WINDOWS = HERE / "as_windows.py"
sys.path.insert(0, str(HERE))
from as_windows import POSIX_MODULES, POSIX_OS_NAMES, POSIX_SIGNALS  # noqa: E402

# Names only Windows' os has: reaching for them directly fails on Linux and macOS.
WINDOWS_OS_NAMES = ("O_BINARY", "O_TEXT", "O_NOINHERIT", "startfile", "add_dll_directory")


def _as_windows(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [sys.executable, str(AS_WINDOWS), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_simulation_takes_away_what_windows_lacks():
    probe = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); import as_windows; as_windows.take_away()\n"
        "import importlib, os, signal\n"
        "for m in ('fcntl', 'pwd', 'resource', 'termios'):\n"
        "    try: importlib.import_module(m); print('present', m)\n"
        "    except ImportError: print('absent', m)\n"
        "print(hasattr(os, 'pwrite'), hasattr(os, 'fork'), hasattr(signal, 'SIGKILL'), hasattr(signal, 'SIGTERM'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.splitlines() == [
        "absent fcntl", "absent pwd", "absent resource", "absent termios", "False False False True",
    ]  # fmt: skip


def test_every_dpdesk_module_imports_without_posix(tmp_path):
    ran = _as_windows("--import-all", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    imported = int(ran.stdout.split()[1])
    on_disk = [p for p in (ROOT / "dpdesk").rglob("*.py") if p.name != "__main__.py"]
    assert imported >= len(on_disk) - 1, (imported, len(on_disk))  # dpdesk/__init__ is not walked


def test_the_command_line_works_on_a_project_without_posix(tmp_path):
    demo = ROOT / "resources" / "demo"
    steps = [
        ("project", "new", "P.dpdesk", "--schema", str(demo / "adult.schema.json"), "--source",
         str(demo / "adult.parquet"), "--budget", "1"),
        ("requests", "add", "P.dpdesk", "--query", 'count(sex="Female")', "--eps", "60", "--delta", "0.05"),
        ("answer", "P.dpdesk", "--request", "r1", "--yes", "--json"),
        ("verify", "P.dpdesk"),
        ("export", "P.dpdesk", "--history", "H.json"),
    ]  # fmt: skip
    outputs = []
    for step in steps:
        ran = _as_windows(*step, cwd=tmp_path)
        assert ran.returncode == 0, (step, ran.stderr)
        outputs.append(ran.stdout)
    release = json.loads(outputs[2])["release"]
    assert release["request_id"] == "r1" and release["kind"] == "fresh" and release["ledger_seq"] == 1
    assert outputs[3].startswith("OK: 1 ledger entries")
    history = json.loads((tmp_path / "H.json").read_text(encoding="utf-8"))
    assert len(history["rows"]) == 1
    # a second writer is refused with the holder named, through the same lock as on Windows
    from dpdesk.store import Project
    from dpdesk.store.errors import LockedError

    with Project.open(tmp_path / "P.dpdesk", "w"):
        ran = _as_windows("requests", "add", "P.dpdesk", "--query", 'count(sex="Male")', "--eps", "60",
                          "--delta", "0.05", cwd=tmp_path)  # fmt: skip
        assert ran.returncode == 2 and f"open for writing by pid {os.getpid()} on " in ran.stderr, ran.stderr
    with pytest.raises(LockedError):
        with Project.open(tmp_path / "P.dpdesk", "w"), Project.open(tmp_path / "P.dpdesk", "w"):
            pass


def test_the_self_test_passes_without_posix(tmp_path):
    """The store, a release through OpenDP, verify, Qt offscreen and the main window, as an installer
    checks them."""
    ran = _as_windows("--self-test", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "self-test passed" in ran.stdout and "window" in ran.stdout


# --- the source scan ---------------------------------------------------------------------------------


def _guarded_by_import_error(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Try):
            for h in node.handlers:
                names = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
                if any(
                    isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names
                ):
                    return True
    return False


def posix_only_uses(source: str, filename: str) -> list[str]:
    """Every unguarded POSIX-only (or Windows-only) use in ``source``, as ``file:line: what``.

    A line that says why it is safe (``# portable: Linux only, checked above``) is let through.
    """
    tree = ast.parse(source, filename)
    lines = source.splitlines()
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Import):
            mods = [a.name.split(".")[0] for a in node.names]
            bad = [m for m in mods if m in POSIX_MODULES]
            if bad and not _guarded_by_import_error(node, parents):
                what = f"import {bad[0]}"
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in POSIX_MODULES and not _guarded_by_import_error(node, parents):
                what = f"from {node.module} import"
            elif node.module == "os" and any(a.name in POSIX_OS_NAMES + WINDOWS_OS_NAMES for a in node.names):
                what = "from os import " + ", ".join(a.name for a in node.names)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner, name = node.value.id, node.attr
            if owner == "os" and name in POSIX_OS_NAMES + WINDOWS_OS_NAMES:
                what = f"os.{name}"
            elif owner == "signal" and name in POSIX_SIGNALS:
                what = f"signal.{name}"
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "chmod"
        ):
            what = "chmod"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.startswith(("/tmp", "/dev/", "/var/", "/proc/")):
                what = f"path {node.value!r}"
        if what and "# portable:" not in lines[node.lineno - 1]:
            found.append((node.lineno, f"{filename}:{node.lineno}: {what}"))
    return [text for _, text in sorted(found)]


def test_the_scan_finds_what_it_looks_for():
    bad = (
        "import fcntl\nimport os, signal\nos.pwrite(1, b'', 0)\nos.kill(1, signal.SIGKILL)\n"
        "p.chmod(0o700)\nopen('/tmp/x')\nfd = os.open('x', os.O_BINARY)\nopen('/proc/x')  # portable: guarded\n"
        "try:\n    import resource\nexcept ImportError:\n    resource = None\n"
        "fd = os.open('x', getattr(os, 'O_BINARY', 0))\n"
    )
    assert [f.split(": ", 1)[1] for f in posix_only_uses(bad, "bad.py")] == [
        "import fcntl", "os.pwrite", "signal.SIGKILL", "chmod", "path '/tmp/x'", "os.O_BINARY",
    ]  # fmt: skip


def test_dpdesk_has_no_posix_only_calls():
    found = []
    for path in sorted((ROOT / "dpdesk").rglob("*.py")):
        found += posix_only_uses(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "POSIX-only code (see tests/portability):\n" + "\n".join(found)
