"""Each release kind's window (estimate, synthetic table, posterior, max/argmax, batch, partition
release) and the chart drawn beside its plan."""
