"""The noise mechanisms releases are drawn from and the vetted sampler behind them."""
