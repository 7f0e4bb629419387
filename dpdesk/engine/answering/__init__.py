"""Answering a request: assess it from public inputs (infer, price, decide), then release."""
