"""Workloads and data for the Chen–Zhou–Bhowmick experiments (seed §5)."""
