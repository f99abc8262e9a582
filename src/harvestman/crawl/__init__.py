"""The crawler and the pipeline each request runs through (see :mod:`harvestman.crawl.wiring`
for the gates and steps, in order)."""

from harvestman.crawl.crawler import Crawler
from harvestman.crawl.wiring import raw_blobs
from harvestman.crawl.writer import PagesCallback

__all__ = ["Crawler", "PagesCallback", "raw_blobs"]
