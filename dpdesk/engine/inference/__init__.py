"""What released history says about a query: the BLUE over history (primal and dual row spaces), the
posterior of the answer and its intervals, priors, and fusion of a fresh answer with history."""
