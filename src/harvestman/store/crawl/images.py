"""Downloaded product images on the ``images`` rows: an image row's outcome is written to
every row of the crawl that shows its URL, in the outcome batch's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, and_, bindparam, or_, select, update

from harvestman.records import Outcome, UrlStatus
from harvestman.store.schema import images, products

_DOWNLOAD_COLUMNS = (
    "path", "bytes", "sha256", "content_type", "width", "height", "error_class", "error",
    "fetched_at",
)  # fmt: skip
_FINAL = (UrlStatus.COMPLETED, UrlStatus.FAILED, UrlStatus.BLOCKED)


def _of_crawl(crawl_id: int) -> Any:
    return images.c.product_id.in_(select(products.c.id).where(products.c.crawl_id == crawl_id))


def write_image_outcomes(
    conn: Connection, crawl_id: int, outcomes: Sequence[Outcome], now: float
) -> None:
    """Record each finished image row on the ``images`` rows showing it: what was kept, or
    why nothing was (its error class and message; an earlier download's blob stays named).
    A 304 changes nothing."""
    kept: list[dict[str, Any]] = []
    broken: list[dict[str, Any]] = []
    for o in outcomes:
        if o.request.kind != "image" or o.status not in _FINAL:
            continue
        if o.image is not None:
            image = o.image
            kept.append(
                {
                    "u": o.request.url,
                    "new_path": image.path,
                    "new_bytes": image.bytes,
                    "new_sha": image.sha256,
                    "new_type": image.content_type[:200],
                    "new_w": image.width,
                    "new_h": image.height,
                    "new_at": image.fetched_at,
                }
            )
        elif o.error_class is not None:
            broken.append(
                {
                    "u": o.request.url,
                    "new_class": o.error_class,
                    "new_error": (o.error or o.error_class)[:2000],
                    "new_at": now,
                }
            )
    where = and_(images.c.url == bindparam("u"), _of_crawl(crawl_id))
    if kept:
        conn.execute(
            update(images)
            .where(where)
            .values(
                path=bindparam("new_path"),
                bytes=bindparam("new_bytes"),
                sha256=bindparam("new_sha"),
                content_type=bindparam("new_type"),
                width=bindparam("new_w"),
                height=bindparam("new_h"),
                error_class=None,
                error=None,
                fetched_at=bindparam("new_at"),
            ),
            kept,
        )
    if broken:
        conn.execute(
            update(images)
            .where(where)
            .values(
                error_class=bindparam("new_class"),
                error=bindparam("new_error"),
                fetched_at=bindparam("new_at"),
            ),
            broken,
        )


def delete_product_images(conn: Connection, product_id: int) -> dict[str, Any]:
    """Delete a product's ``images`` rows (it is written again); returns what they knew of
    their downloads, by URL, for ``carry_downloads``."""
    known = conn.execute(
        select(images.c.url, *(images.c[name] for name in _DOWNLOAD_COLUMNS)).where(
            images.c.product_id == product_id,
            or_(images.c.sha256.is_not(None), images.c.error_class.is_not(None)),
        )
    ).all()
    conn.execute(images.delete().where(images.c.product_id == product_id))
    return {row.url: row for row in known}


def carry_downloads(
    conn: Connection, crawl_id: int, urls: Sequence[str], known: dict[str, Any] | None = None
) -> None:
    """New ``images`` rows (a product written again, or a second product showing an image
    already fetched) take what is known of the same URL's download: from the crawl's other
    rows, else from ``known`` (the rows just deleted): its frontier row is done and would not
    tell them again."""
    if not urls:
        return
    wanted = sorted(set(urls))
    found = conn.execute(
        select(images.c.url, *(images.c[name] for name in _DOWNLOAD_COLUMNS))
        .where(
            images.c.url.in_(wanted),
            _of_crawl(crawl_id),
            or_(images.c.sha256.is_not(None), images.c.error_class.is_not(None)),
        )
        .order_by(images.c.fetched_at.desc())
    ).all()
    latest: dict[str, Any] = {}
    for row in found:
        latest.setdefault(row.url, row)
    for url, row in (known or {}).items():
        if url in wanted:
            latest.setdefault(url, row)
    if not latest:
        return
    conn.execute(
        update(images)
        .where(
            images.c.url == bindparam("u"),
            _of_crawl(crawl_id),
            images.c.sha256.is_(None),
            images.c.error_class.is_(None),
        )
        .values({name: bindparam(f"v_{name}") for name in _DOWNLOAD_COLUMNS}),
        [
            {"u": url, **{f"v_{name}": getattr(row, name) for name in _DOWNLOAD_COLUMNS}}
            for url, row in sorted(latest.items())
        ],
    )
