"""Estimates from released history that spend no budget: kernel-PCA shrinkage and maximum entropy
(the Chen–Zhou–Bhowmick seed). Both are post-processing of released answers and never build an n-vector."""
