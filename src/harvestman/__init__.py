"""Harvestman: a polite, resumable, horizontally scalable web crawler."""

__version__ = "0.1.0"
__all__ = ["__version__"]
