"""The runnable examples in the docstrings of the sums and measures modules run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "dpdesk.engine.queries.layout",
        "dpdesk.engine.queries.measured",
        "dpdesk.engine.sums.query",
        "dpdesk.engine.sums.ratio",
        "dpdesk.engine.sums.accuracy",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
