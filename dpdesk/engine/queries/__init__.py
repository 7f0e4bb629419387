"""Queries over the cube: the product-form and sparse :class:`~dpdesk.engine.queries.query.Query`, its
text form (``count(age="0-30")``) and inner products that never build an n-vector."""
