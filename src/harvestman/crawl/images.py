"""Product images (``crawl_images``): found on product pages, fetched as frontier rows.

An image URL becomes a frontier row of kind ``image``, so it is leased, robots-checked,
guarded and spaced by its host's politeness like any page (the frontier does not tell them
apart). Its response is handled here instead of by the HTML parser: the type must be
``image/*``, the body (capped at ``image_max_bytes`` while it streams: ``BodyTooLarge``) must
decode as PNG, JPEG, WebP or GIF within ``image_max_pixels``, and it is kept once per SHA-256
in the raw archive's blob store. A broken image fails its own row, with its reason, and every
``images`` row showing it records that reason; the page it was found on is not touched.

Image URLs are not held to the crawl's domain scope (shops serve images from CDNs); the
network guard and robots.txt still apply to them.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar, Self

from harvestman.archive.images import ImageArchive
from harvestman.archive.raw import ArchiveError
from harvestman.config import Settings
from harvestman.crawl.discovery import Discovery
from harvestman.crawl.fetch import FetchResult
from harvestman.crawl.outcomes import Outcomes
from harvestman.crawl.run import CrawlRun
from harvestman.crawl.work import PageWork
from harvestman.errors import ImageRejected, UrlError
from harvestman.images import is_image_type, measure_image
from harvestman.records import CrawlRequest, ImageRecord, NewUrl, Outcome, UrlStatus
from harvestman.stats import Stats
from harvestman.urls import UrlNormalizer, host_key, url_hash

IMAGE_PRIORITY = 1  # after the pages of the same host: they reveal the products


class ImageLinksStep:
    """A page step: the images of the page's products join the frontier as ``image`` rows.

    The row keeps the URL as the product gives it (the ``images`` rows are matched by it);
    a URL the crawl's normalizer refuses is dropped and counted. The fetch itself goes by the
    normalized form where it matters: a proxy is sent each hop's normalized URL, the one the
    guard checked (:mod:`harvestman.crawl.fetch`).
    """

    on_rejected: ClassVar[bool] = False
    reads_text: ClassVar[bool] = False

    def __init__(self, discovery: Discovery, normalizer: UrlNormalizer, stats: Stats) -> None:
        self.discovery = discovery
        self.normalizer = normalizer
        self.stats = stats

    @classmethod
    def from_settings(
        cls, settings: Settings, discovery: Discovery, normalizer: UrlNormalizer, stats: Stats
    ) -> Self | None:
        if not (settings.crawl_images and settings.extract_products):
            return None
        return cls(discovery, normalizer, stats)

    def run(self, work: PageWork) -> None:
        if not work.products:
            return
        seen = self.discovery.seen
        depth = work.request.depth + 1
        for product in work.products:
            for image in product.image_details:
                url = image.url
                if url in seen:  # the seen cache holds URL strings
                    continue
                seen.add(url)
                try:
                    self.normalizer.normalize(url)
                except UrlError:
                    self.stats.inc("images/bad_url")
                    continue
                work.new_urls.append(
                    NewUrl(url, url_hash(url), host_key(url), depth, IMAGE_PRIORITY, kind="image")
                )
                self.stats.inc("images/found")


class ImageStep:
    """Makes the outcome of an image response below 400 (see the module docstring)."""

    def __init__(
        self,
        archive: ImageArchive,
        run: CrawlRun,
        outcomes: Outcomes,
        *,
        max_pixels: int,
    ) -> None:
        self.archive = archive
        self.run = run
        self.outcomes = outcomes
        self.max_pixels = max_pixels

    async def handle(self, request: CrawlRequest, result: FetchResult) -> Outcome:
        stats, now = self.run.stats, self.run.clock()
        again = now + self.outcomes.visited_ttl
        if result.status == 304:  # unchanged: the rows keep what the last download found
            return Outcome(request, UrlStatus.COMPLETED, again, request.attempts, status_code=304)
        content_type = result.content_type or ""
        try:
            if not is_image_type(content_type):
                raise ImageRejected("not_image", f"Content-Type {content_type or 'none'!r}")
            info = await asyncio.to_thread(measure_image, result.body, max_pixels=self.max_pixels)
            path, digest, new = await asyncio.to_thread(
                self.archive.put, result.body, content_type, info.image_format
            )
        except ImageRejected as exc:
            stats.inc(f"images/rejected/{exc.reason}")
            return Outcome.failed(request, exc, again, status_code=result.status)
        except ArchiveError as exc:
            stats.inc("images/archive_errors")
            return Outcome.failed(request, exc, again, status_code=result.status)
        stats.inc("images/stored" if new else "images/duplicates")
        stats.inc("images/bytes", len(result.body))
        outcome = Outcome(
            request,
            UrlStatus.COMPLETED,
            again,
            request.attempts,
            status_code=result.status,
            etag=result.headers.get("ETag"),
            last_modified=result.headers.get("Last-Modified"),
        )
        outcome.image = ImageRecord(
            url=request.url,
            path=path,
            bytes=len(result.body),
            sha256=digest,
            content_type=content_type,
            width=info.width,
            height=info.height,
            fetched_at=now,
        )
        return outcome
