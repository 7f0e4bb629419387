"""The version dpdesk reports is the one it was installed as (setuptools-scm, from git tags)."""

from __future__ import annotations

import importlib.metadata

import dpdesk


def test_the_reported_version_is_the_installed_one() -> None:
    assert dpdesk.__version__ == importlib.metadata.version("dpdesk")
    assert dpdesk.__version__ != "0+unknown"  # the version file was written at install time
