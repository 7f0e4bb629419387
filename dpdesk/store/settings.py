"""The answering settings of a project file, as one service (the tables and their reading and writing:
:mod:`.answering`)."""

from __future__ import annotations

from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.limits import check_table_size
from dpdesk.store import db
from dpdesk.store.answering import (
    check_share,
    read_look_ahead,
    read_policy,
    read_prior,
    write_look_ahead,
    write_policy,
    write_prior,
)
from dpdesk.store.file import ProjectFile

__all__ = ["AnsweringSettings", "settings_of"]


def settings_of(file: ProjectFile, policy: SpendPolicy | None, prior: BoundedPrior | None) -> Settings:
    """The answering rules of ``file`` with ``policy`` and ``prior``: its total budget in the unit its
    per-cell totals are kept in (ε, or under zCDP the ρ its total (ε, δ) allows; engine/budget/mode.py)."""
    if file.accounting is None:
        return Settings(float(file.total_budget), policy, prior)
    return Settings.zcdp(file.accounting, policy, prior)


class AnsweringSettings:
    """The answering settings of one open project file, as a service: read and written here only.

    The total budget is fixed for the project's life (the genesis covers it); the spend policy, the
    declared table size and the look-ahead share are the curator's choices and change at any time.
    """

    def __init__(self, file: ProjectFile) -> None:
        self.file = file

    @property
    def spend_policy(self) -> SpendPolicy | None:
        """The curator's spend policy (None: the greedy rule — spend exactly what a request needs)."""
        return read_policy(self.file.connection)

    def set_spend_policy(self, policy: SpendPolicy | None) -> None:
        """Set (or with None clear) the spend policy assessments use (pure ε projects: its headroom is
        in α)."""
        if policy is not None and self.file.accounting is not None:
            raise DpdeskError(
                "a spend policy paces α, the pure-ε price of a cell: this project accounts in zCDP, "
                "where it is not available"
            )
        self.file.require_writer()
        with db.transaction(self.file.connection):
            write_policy(self.file.connection, policy)

    @property
    def prior(self) -> BoundedPrior | None:
        """The known-bounds prior from the table size the curator declared (None: the flat prior)."""
        return read_prior(self.file.connection)

    def set_prior(self, prior: BoundedPrior | None) -> None:
        """Declare (or with None withdraw) a public table size; inferences then use the bounded prior."""
        if prior is not None:
            check_table_size(prior.table_size)  # a whole number of records, within what is computed exactly
        self.file.require_writer()
        with db.transaction(self.file.connection):
            write_prior(self.file.connection, prior)

    def table_size(self) -> float | None:
        """The declared public table size (None: none declared)."""
        prior = self.prior
        return None if prior is None else float(prior.table_size)

    @property
    def look_ahead(self) -> float | None:
        """The batch plans' look-ahead share (None: off; see :func:`dpdesk.store.batch.plan_pending`)."""
        return read_look_ahead(self.file.connection)

    def set_look_ahead(self, share: float | None) -> None:
        """Turn the batch plans' look-ahead on at ``share`` of the room left on unspent cells (None: off)."""
        if share is not None:
            check_share(share)  # checked before the write lock is asked for
        self.file.require_writer()
        with db.transaction(self.file.connection):
            write_look_ahead(self.file.connection, share)

    def now(self) -> Settings:
        """The curator's answering rules now: total budget, spend policy, known-bounds prior."""
        return settings_of(self.file, self.spend_policy, self.prior)
