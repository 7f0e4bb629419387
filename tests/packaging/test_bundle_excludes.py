"""The bundle leaves modules out (``excludes`` in packaging/dpdesk.spec); none of them may be one dpdesk
needs. Checked in seconds, without building the bundle (``test_packaging.py`` builds it and runs its
self-test, which cannot reach every page and source kind):

- no dpdesk module imports an excluded module, at module level or inside a function, except the
  extras listed in ``NOT_BUNDLED`` (imported only after ``sources.base.require_extra`` checked for them,
  so the bundle names what is missing in one line);
- a fresh interpreter that imports every dpdesk module and every outside module dpdesk imports anywhere
  (what the bundle's analysis follows) loads no excluded module, except the optional imports listed in
  ``OPTIONAL`` (a dependency that uses the module when present and carries on without it).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "packaging" / "dpdesk.spec"

# Loaded when installed, not needed: each entry says who imports it and what it does without it.
OPTIONAL = {
    "pyarrow": "pandas 3 stores text columns with pyarrow when it is installed, in Python objects otherwise",
    "PySide6.QtTest": "pyqtgraph imports it in a try block for its test helpers only",
}

# Extras the bundle leaves out on purpose: module -> why.
NOT_BUNDLED = {
    "pyspark": "Spark needs a JVM and its jars: dpdesk[spark] from pip, not the bundle",
    "py4j": "part of pyspark",
}


def excluded() -> list[str]:
    """The ``excludes = [...]`` list of the spec, read without running it."""
    for node in ast.parse(SPEC.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "excludes" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{SPEC}: no excludes = [...] list")


def hits(name: str, excludes: list[str]) -> list[str]:
    return [ex for ex in excludes if name == ex or name.startswith(ex + ".")]


def imports_of_dpdesk() -> dict[str, set[str]]:
    """Every module named by an import statement in dpdesk's sources -> the files that import it."""
    found: dict[str, set[str]] = {}
    for path in (REPO / "dpdesk").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                found.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return found


def test_dpdesk_imports_no_excluded_module():
    excludes = excluded()
    bad = {
        name: sorted(files)
        for name, files in imports_of_dpdesk().items()
        if set(hits(name, excludes)) - set(NOT_BUNDLED)
    }
    assert not bad, f"dpdesk imports modules the bundle excludes (packaging/dpdesk.spec): {bad}"


def test_importing_what_dpdesk_imports_loads_no_excluded_module():
    excludes = excluded()
    skip = {"dpdesk", "__future__", *NOT_BUNDLED}
    outside = sorted({n.split(".")[0] for n in imports_of_dpdesk()} - skip)
    modules = sorted({n for n in imports_of_dpdesk() if n.split(".")[0] not in skip})
    probe = f"""
import importlib, json, pkgutil, sys
import dpdesk
for m in pkgutil.walk_packages(dpdesk.__path__, "dpdesk."):
    if not m.name.endswith("__main__"):  # that one starts the app
        importlib.import_module(m.name)
for name in {modules!r}:
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # 'from package import function' names a function, not a module
print(json.dumps(sorted(sys.modules)))
"""
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.splitlines()[-1])
    assert set(outside) <= {m.split(".")[0] for m in loaded}  # the probe did import them
    bad = sorted({ex for name in loaded for ex in hits(name, excludes)} - set(OPTIONAL))
    assert not bad, f"importing dpdesk loads modules the bundle excludes (packaging/dpdesk.spec): {bad}"
    assert set(OPTIONAL) | set(NOT_BUNDLED) <= set(excludes), "an entry that is not excluded: drop it"
