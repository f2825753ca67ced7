"""eagle3lint: a static compatibility linter for EAGLE-3 speculative decoding."""

__version__ = "0.2.2"
