"""Zero-cost releases: values computed from earlier releases only (post-processing, free under DP).

An answer inferred from history, a kernel-PCA estimate or a synthetic table drawn from released
marginals reads no data and spends no budget. Each is a :class:`PostProcessing` mechanism with its
own ledger ``kind``: its charge is empty and it adds no rows to history (rows derived from history
carry no new information). ``INFERENCE`` is the inferred count of paper Fig. 4; the estimates' home
registers its own two (``engine/estimates/privacy_map.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpdesk.engine.mechanisms.base import Contribution
from dpdesk.engine.mechanisms.charge import Charge

__all__ = ["INFERENCE", "PostProcessing"]


@dataclass(frozen=True)
class PostProcessing:
    """A free release of kind ``kind``; ``value_keys`` name the payload members it released."""

    name: str
    kind: str
    label: str
    value_keys: tuple[str, ...] = ("values",)

    def contribution(self, payload: Mapping[str, Any], shape: tuple[int, ...]) -> Contribution:
        """No charge and no history rows; the released values as recorded."""
        if "values" in payload:
            values = tuple(float(v) for v in payload["values"])
        else:  # entries written before the generic "values" member (project format 2)
            values = tuple(float(payload[k]) for k in self.value_keys)
        return Contribution(Charge(), (), values)


INFERENCE = PostProcessing("inference", "inferred", "inferred from history", value_keys=("estimate",))
