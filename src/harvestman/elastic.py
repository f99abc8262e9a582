"""Products for Elasticsearch: bulk-API documents with typed fields, and their index mapping.

``harvestman export --format es --what products -o products.ndjson`` writes the bulk NDJSON
(an ``index`` action line, then the document) and ``products.mapping.json`` beside it, so::

    curl -XPUT localhost:9200/harvestman-products
    curl -XPUT localhost:9200/harvestman-products/_mapping -H 'Content-Type: application/json' \\
         --data-binary @products.mapping.json
    curl -XPOST localhost:9200/_bulk -H 'Content-Type: application/x-ndjson' \\
         --data-binary @products.ndjson

loads them as typed fields. Prices and ratings are JSON numbers written from the stored
decimal, digit for digit (never through a float), mapped as ``scaled_float`` at the column's
scale; times are ISO 8601 in UTC; the mapping is ``strict``, so a field it lacks is refused
rather than guessed. The ``_id`` is the product's page and position in its crawl: the same
product exported twice overwrites itself.

>>> iso(1800000000.5)
'2027-01-15T08:00:00.500Z'
>>> orjson.dumps({"price": number(Decimal("119.9900")), "rating": number(Decimal("4.50"))})
b'{"price":119.99,"rating":4.5}'
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

INDEX = "harvestman-products"

_PRICE = {"type": "scaled_float", "scaling_factor": 10000}  # NUMERIC(18, 4)
_RATING = {"type": "scaled_float", "scaling_factor": 100}  # NUMERIC(6, 2)
_KEYWORD = {"type": "keyword", "ignore_above": 2048}
_TEXT = {"type": "text", "fields": {"raw": {"type": "keyword", "ignore_above": 256}}}
_DATE = {"type": "date", "format": "strict_date_optional_time"}

PROPERTIES: dict[str, dict[str, Any]] = {
    "product_id": {"type": "long"},
    "crawl_id": {"type": "long"},
    "domain": {"type": "keyword"},
    "page_url": _KEYWORD,
    "url": _KEYWORD,
    "name": _TEXT,
    "description": {"type": "text"},
    "brand": _TEXT,
    "category": _TEXT,
    "sku": {"type": "keyword"},
    "gtin": {"type": "keyword"},
    "mpn": {"type": "keyword"},
    "condition": {"type": "keyword"},
    "availability": {"type": "keyword"},
    "currency": {"type": "keyword"},
    "price": _PRICE,
    "low_price": _PRICE,
    "high_price": _PRICE,
    "offer_count": {"type": "integer"},
    "rating": _RATING,
    "best_rating": _RATING,
    "worst_rating": _RATING,
    "review_count": {"type": "integer"},
    "rating_count": {"type": "integer"},
    "confidence": {"type": "float"},
    "source": {"type": "keyword"},
    "parser": {"type": "keyword"},
    "sources": {"type": "keyword"},
    "images": _KEYWORD,
    "first_seen_at": _DATE,
    "updated_at": _DATE,
}
_AS_IS = ("crawl_id", "name", "description", "brand", "category", "sku", "gtin", "mpn",
          "condition", "availability", "currency", "offer_count", "review_count",
          "rating_count", "confidence", "source", "parser", "page_url")  # fmt: skip
_NUMBERS = ("price", "low_price", "high_price", "rating", "best_rating", "worst_rating")


def mapping() -> dict[str, Any]:
    """The body of ``PUT <index>/_mapping``."""
    return {"dynamic": "strict", "properties": PROPERTIES}


def mapping_path(output: Path) -> Path:
    """Where the mapping of an export to ``output`` goes: ``products.ndjson`` ->
    ``products.mapping.json``."""
    return output.with_name(f"{output.stem or output.name}.mapping.json")


def write_mapping(path: Path) -> None:
    path.write_bytes(orjson.dumps(mapping(), option=orjson.OPT_INDENT_2) + b"\n")


def iso(epoch: float | None) -> str | None:
    """An epoch time as ISO 8601 in UTC, to the millisecond."""
    if epoch is None:
        return None
    moment = datetime.fromtimestamp(epoch, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def number(value: Decimal | float | None) -> orjson.Fragment | None:
    """A stored decimal as a JSON number, exactly its digits."""
    if value is None:
        return None
    exact = Decimal(str(value)) if not isinstance(value, Decimal) else value
    if not exact.is_finite():
        return None
    return orjson.Fragment(format(exact.normalize(), "f").encode())


def action(row: dict[str, Any]) -> dict[str, Any]:
    doc_id = f"{row['crawl_id']}-{row['url_hash']}-{row['position']}"
    return {"index": {"_index": INDEX, "_id": doc_id}}


def document(row: dict[str, Any]) -> dict[str, Any]:
    """A stored product row (with its ``images``' URLs) as a document of :data:`PROPERTIES`."""
    doc: dict[str, Any] = {name: row.get(name) for name in _AS_IS}
    doc["product_id"] = row["id"]
    doc["domain"] = row.get("domain")
    doc["url"] = row.get("product_url") or row["page_url"]
    for name in _NUMBERS:
        doc[name] = number(row.get(name))
    doc["sources"] = orjson.loads(row["sources"]) if row.get("sources") else []
    doc["images"] = list(row.get("images", []))
    doc["first_seen_at"] = iso(row.get("created_at"))
    doc["updated_at"] = iso(row.get("updated_at"))
    return doc
