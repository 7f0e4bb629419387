"""The engine's exception types.

Every error a curator can cause by bad input is a :class:`DpdeskError` whose message is one line that
names the problem and where it is. Front ends (CLI, GUI) catch this one type and show the message.
"""

from __future__ import annotations


class DpdeskError(ValueError):
    """Bad input or an impossible request, described in one line for the curator."""


class SchemaError(DpdeskError):
    """A schema declaration is malformed."""


class QueryError(DpdeskError):
    """A query is malformed, empty, or refers to unknown attributes or labels."""


class HistoryError(DpdeskError):
    """A history row or history file is malformed."""


class BudgetError(DpdeskError):
    """A budget, ε or δ is out of range, or a release would exceed the total budget."""


class Cancelled(Exception):
    """A long computation stopped because its ``cancelled`` callback returned True."""


class PlanError(DpdeskError):
    """A release plan (cells, marginals, interval tree) or a selection query is malformed."""
