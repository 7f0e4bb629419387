"""The home of the private max/argmax kind: ``max(A | box)`` / ``argmax(A | box)`` by report-noisy-max.

:mod:`~.query` reads the text form, :mod:`~.mechanism` is the mechanism (its privacy map, its
public accuracy, its draw through the vetted sampler), :mod:`~.plan` prices it from public inputs into
a release plan, and :mod:`~.kind` is what the registry lists.
"""
