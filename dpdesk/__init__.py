"""dpdesk: answer counting queries under differential privacy, inferring from released history."""

__version__ = "0.1.0"
