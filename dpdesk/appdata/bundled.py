"""Where dpdesk finds its bundled files: the one place that knows how ``resources/`` is packaged.

Installed, the top-level ``resources/`` folder is the package ``dpdesk.resources``; in a source
checkout that was never installed it sits next to the ``dpdesk`` package. Both layouts are tried here
and nowhere else. Bundled files are read-only: callers copy them before changing anything.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path


def _root() -> Path:
    try:
        base = importlib.resources.files("dpdesk.resources")
    except ModuleNotFoundError:
        base = importlib.resources.files("dpdesk").parent / "resources"  # type: ignore[attr-defined]
    return Path(str(base))


def resource(*parts: str) -> Path:
    """The bundled file ``resources/<parts...>`` (e.g. ``resource("demo", "adult.parquet")``)."""
    path = _root().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"bundled resource {'/'.join(parts)} is missing (looked in {_root()})")
    return path
