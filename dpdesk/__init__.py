"""dpdesk: answer counting queries under differential privacy, inferring from released history."""

try:  # written by setuptools-scm when dpdesk is installed (pyproject.toml: the version from git tags)
    from dpdesk._version import __version__
except ImportError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
