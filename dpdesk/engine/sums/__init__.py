"""The home of sums and means of a schema's measures (docs/sums.md).

A sum over a box — ``sum(cost | ward="oncology")``, or any linear combination of sums and counts — is a
linear query over the one vector of counts and sums (:mod:`dpdesk.engine.queries.layout`): the history,
the BLUE, the posterior, the price and the per-cell charge treat it as they treat a count. What is its
own lives here: :mod:`~.query` reads ``mean(measure | box)``; :mod:`~.ratio` holds the law of a ratio of
two linear estimates and the mean's confidence interval, which keeps its confidence at every table;
:mod:`~.accuracy` says what a mean's ``±a at c %`` assumes about the count, decides whether history
meets it, and prices a fresh mean.
"""
