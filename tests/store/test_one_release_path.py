"""Noise meets a true value in one place only (DESIGN §4): the release path hands the data to a plan's
``draw`` with the vetted sampler, and the sampler is handed the true value and returns the released one.

Read off the source (every module of the package, parsed): the vetted sampler is made, and a plan's
``draw`` is called with the data, only in ``store/releasing.py``'s ``Releaser``; the samplers offer no
call that returns bare noise (so no kind can add noise to a value itself); and every call that hands a
sampler a value sits in a kind's ``draw`` or in a function that ``draw`` reaches with its sampler.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import dpdesk
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler

PACKAGE = Path(dpdesk.__file__).resolve().parent
SAMPLER_CALLS = {"release", "release_vector", "noisy_max", "select"}  # the true value in, the release out


def _modules() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(PACKAGE)): ast.parse(p.read_text(encoding="utf-8"), str(p))
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def _calls(tree: ast.Module):
    """``(enclosing functions, call)`` for every call in ``tree``, the functions outermost first."""
    out = []

    def visit(node: ast.AST, stack: tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, (*stack, child))
            else:
                if isinstance(child, ast.Call):
                    out.append((stack, child))
                visit(child, stack)

    visit(tree, ())
    return out


def _name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _receiver(call: ast.Call) -> str:
    f = call.func
    return f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""


def test_the_vetted_sampler_and_a_plan_draw_only_in_the_release_path():
    made, drawn = [], []
    for path, tree in _modules().items():
        for stack, call in _calls(tree):
            where = (path, tuple(f.name for f in stack))
            if _name(call) == "OpenDPSampler":
                made.append(where)
            # a plan's draw: handed the data and a sampler (cube, sampler[, allow_insecure=...])
            if _name(call) == "draw" and len(call.args) == 2 and _receiver(call) == "plan":
                drawn.append(where)
    assert made == [("store/releasing.py", ("_draw",))], made
    assert drawn == [("store/releasing.py", ("_draw",))], drawn


def test_a_sampler_is_handed_values_only_where_a_kind_draws():
    """Each call that hands a sampler a value is in a function taking that sampler as a parameter
    (a kind's ``draw``, or a helper it passes its sampler to): none builds its own sampler."""
    found = []
    for path, tree in _modules().items():
        for stack, call in _calls(tree):
            if _name(call) in SAMPLER_CALLS and _receiver(call) == "sampler":
                assert stack, f"{path}: a module-level call hands a sampler a value"
                params = {
                    a.arg for fn in stack for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)
                }
                what = ".".join(f.name for f in stack)
                assert "sampler" in params, f"{path}: {what} uses a sampler it was not handed"
                found.append(path)
    # the kinds that draw: fresh answers, batch measurements, partitions, posteriors, selection, means
    assert {
        "engine/answering/fresh.py",
        "engine/planning/release.py",
        "engine/partition/release.py",
        "engine/dirichlet/plan.py",
        "engine/dirichlet/mechanisms.py",
        "engine/selection/mechanism.py",
        "engine/sums/plan.py",
    } <= set(found), sorted(set(found))


@pytest.mark.parametrize("sampler", [OpenDPSampler(), SeededSampler(3)], ids=["opendp", "seeded"])
def test_no_sampler_hands_out_bare_noise(sampler):
    public = {n for n in dir(sampler) if not n.startswith("_")}
    assert not {n for n in public if n.startswith("draw") or "noise" in n}, public
    # what it does offer takes the true value: the same call on another value moves with it
    if isinstance(sampler, SeededSampler):
        a, b = (
            SeededSampler(3).release("laplace", 0, 1.0, 1.0),
            SeededSampler(3).release("laplace", 5, 1.0, 1.0),
        )
        assert b - a == pytest.approx(5.0)
        counts = np.array([0, 7])
        v = SeededSampler(4).release_vector("discrete_laplace", counts, 1.0)
        w = SeededSampler(4).release_vector("discrete_laplace", counts + 1, 1.0)
        assert (np.asarray(w) - np.asarray(v)).tolist() == [1, 1]
