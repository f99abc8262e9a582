"""Where a crawl's raw archive is, as a string the store keeps with the crawl.

A crawl with the raw archive on records its location when it starts, so an export finds the
bodies whatever the exporting command's own settings say: ``s3://bucket/prefix`` for a bucket,
else the directory's absolute path (a relative ``archive_dir`` means the crawl's working
directory). Endpoint, region and credentials are never stored: the reader brings its own.

>>> from harvestman.config import Settings
>>> archive_location(Settings(archive_s3_bucket="bodies", archive_s3_prefix="/crawl-7/"))
's3://bodies/crawl-7'
>>> archive_location(Settings(archive_dir="/srv/archive/"))
'/srv/archive'
>>> type(open_blobs("/srv/archive", Settings())).__name__
'LocalBlobs'
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harvestman.archive.raw import LocalBlobs, S3Blobs

if TYPE_CHECKING:
    from harvestman.config import Settings

__all__ = ["archive_location", "open_blobs"]

_S3 = "s3://"


def archive_location(settings: Settings) -> str:
    """The location of the raw archive ``settings`` name (see the module docstring)."""
    if settings.archive_s3_bucket:
        return f"{_S3}{settings.archive_s3_bucket}/{settings.archive_s3_prefix.strip('/')}"
    return str(Path(settings.archive_dir).resolve())


def open_blobs(location: str, settings: Settings) -> LocalBlobs | S3Blobs:
    """The blob store at ``location``; a bucket is reached with the endpoint, region and
    credentials of ``settings``."""
    if location.startswith(_S3):
        bucket, _, prefix = location.removeprefix(_S3).partition("/")
        return S3Blobs(
            bucket,
            endpoint_url=settings.archive_s3_endpoint_url,
            region=settings.archive_s3_region,
            access_key_id=settings.archive_s3_access_key_id,
            secret_access_key=settings.archive_s3_secret_access_key,
            prefix=prefix,
        )
    return LocalBlobs(Path(location))
