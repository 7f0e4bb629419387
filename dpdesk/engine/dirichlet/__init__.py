"""Private posterior of proportions: a Dirichlet (Beta) posterior released under add/remove DP.

The mathematics and proofs are in docs/dirichlet.md. Modules: ``hellinger`` (distances, the
one-record step, global sensitivity), ``candidates`` (public candidate sets), ``smooth`` (local and
smooth sensitivity, Thm 4.1 calibration), ``mechanisms`` (the release mechanisms and their charges),
``sampling`` (OpenDP-backed and seeded samplers), ``accuracy`` (data-free guarantees, exact expected
distances).
"""
