"""One-shot partition releases (the Xiao–Xiong–Yuan seed, §4–§6, generalised).

A partition release publishes, once, noisy counts of a fixed set of partitions of the cube: every cell
(the seed's release), a set of marginals, or the levels of a hierarchical interval tree over one ordered
attribute, optionally crossed with the other attributes. Its rows are ordinary history rows for the
engine, so later requests are assessed against them. This package owns the plans (:mod:`.plan`), the
best linear unbiased estimate from a release's structure (:mod:`.solver`), the exact posterior of a
sum of grouped discrete-Laplace terms (:mod:`.grouped`), the guarantees and budget preview
(:mod:`.guarantee`), the released values (:mod:`.release`) and parity queries (:mod:`.parity`).
"""
