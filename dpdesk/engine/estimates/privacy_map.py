"""The registered mechanisms of the zero-cost estimate and synthetic-table kinds: post-processing of
released answers, so their privacy map charges nothing and adds no history rows."""

from __future__ import annotations

from dpdesk.engine.mechanisms.postprocessing import PostProcessing

__all__ = ["SHRINKAGE_ESTIMATE", "SYNTHETIC_TABLE"]

SHRINKAGE_ESTIMATE = PostProcessing(
    "shrinkage-estimate", "estimate", "kernel-PCA shrinkage estimate (biased)"
)
SYNTHETIC_TABLE = PostProcessing("maxent-synthetic", "synthetic", "maximum-entropy synthetic table")
