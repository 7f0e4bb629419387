"""A pre-1.0 dependency may change its API in any minor release: each one the app needs is bounded
above, and the version installed here (what the tests ran against) is inside the bounds."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _requirements() -> list[Requirement]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return [Requirement(r) for r in project["dependencies"]]


def test_every_pre_1_0_dependency_has_an_upper_bound():
    pre_1_0 = {}
    for req in _requirements():
        lows = [Version(s.version) for s in req.specifier if s.operator in (">=", ">", "==", "~=")]
        if lows and max(lows) < Version("1"):
            highs = [Version(s.version) for s in req.specifier if s.operator in ("<", "<=")]
            assert highs and min(highs) <= Version("1"), f"{req}: a pre-1.0 dependency needs an upper bound"
            pre_1_0[req.name] = (max(lows), min(highs))
    # the release path draws through OpenDP's API: one minor release at a time
    low, high = pre_1_0["opendp"]
    assert high == Version(f"0.{low.minor + 1}"), f"opendp: bound it below {low.major}.{low.minor + 1}"


def test_the_installed_versions_satisfy_the_bounds():
    for req in _requirements():
        if req.marker is None or req.marker.evaluate():
            assert req.specifier.contains(version(req.name), prereleases=True), (req, version(req.name))
