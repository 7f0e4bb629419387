"""Inference control: watched claims about a linear query, read and guarded from public inputs only."""
