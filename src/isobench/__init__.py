"""isobench: measure what isolation costs."""

__version__ = "0.1.0"
