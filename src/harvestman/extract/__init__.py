"""Structured extractors: what a crawled page holds beyond its text and links (products, ...)."""
