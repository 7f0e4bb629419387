"""Helpers of the evaluation scripts (``benchmarks/eval_all.py``): data, systems, timing, report."""
