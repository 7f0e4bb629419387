"""Every docstring example in dpdesk runs and shows what it says (the GUI's excepted: they need a window).

The examples are documentation a reader copies; run here, under the suite's settings (warnings from
dpdesk are errors), they cannot drift from the code. Modules are found by their ``>>>`` lines, so a new
example is picked up without listing it.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import dpdesk

ROOT = Path(dpdesk.__file__).resolve().parent
SKIP = {"gui"}  # subpackages whose examples need a running Qt application


def _modules_with_examples() -> list[str]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in SKIP or ">>> " not in path.read_text(encoding="utf-8"):
            continue
        parts = ("dpdesk", *rel.with_suffix("").parts)
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


MODULES = _modules_with_examples()


def test_the_examples_are_found() -> None:
    # 28 modules held examples when this test was written; fewer means the search above broke
    assert len(MODULES) >= 28, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module, name) if t.examples]
    assert tests, f"{name} has '>>> ' in its source but no example doctest can collect"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for t in tests:
        runner.run(t, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
    assert result.attempted > 0
