"""Products as a data product: the query over stored products (filters, orders, keyset
pages), one product with its images and offers, its price and availability history, and
what a batch write keeps of product changes (``history``)."""

from __future__ import annotations

from harvestman.store.products.query import SORTS, ProductQuery
from harvestman.store.products.repository import OFFER_FIELDS, ProductRepository

__all__ = ["OFFER_FIELDS", "SORTS", "ProductQuery", "ProductRepository"]
