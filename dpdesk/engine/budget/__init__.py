"""The privacy budget: per-cell accounting (paper Thm 5.4), what a release would cost before it is
made, and spend policies that pace a fixed total."""
