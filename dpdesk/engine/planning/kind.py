"""The batch-measurement kind as the registry lists it: a strategy row of a batch plan (issue 19), a
fresh noisy count no data user asked for as such, charged ``α|Q_j|/S`` per cell by its noise family's
privacy map. It is not planned alone: ``dpdesk batch`` and the batch dialog release a batch plan one
measurement at a time on the one release path, then answer the batch's requests from history.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpdesk.engine.kinds.base import ReleaseKind
from dpdesk.engine.planning.privacy_map import MEASUREMENTS

if TYPE_CHECKING:
    from dpdesk.engine.planning.release import MeasurementPlan  # noqa: F401  (the type argument below)

__all__ = ["MEASUREMENT", "MeasurementKind"]


class MeasurementKind(ReleaseKind["MeasurementPlan"]):
    name = "measurement"
    label = "batch measurement"
    mechanisms = tuple(MEASUREMENTS.values())


MEASUREMENT = MeasurementKind()
