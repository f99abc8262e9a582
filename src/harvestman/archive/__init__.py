"""What a crawl keeps of the bytes it fetched: WARC files and the raw body archive.

- :class:`WarcWriter` writes WARC/1.1 files; :func:`export_warc` turns stored pages whose
  bodies are in the raw archive into one (:mod:`harvestman.archive.warc`).
- :class:`RawArchive` keeps bodies compressed and content-addressed in :class:`LocalBlobs` or
  :class:`S3Blobs`; the page row keeps the key (:mod:`harvestman.archive.raw`).
"""

from harvestman.archive.raw import (
    ArchiveError,
    ArchiveMissing,
    BlobStore,
    LocalBlobs,
    RawArchive,
    S3Blobs,
    archive_key,
)
from harvestman.archive.warc import ORIG_PREFIX, WarcExport, WarcWriter, export_warc

__all__ = [
    "ORIG_PREFIX",
    "ArchiveError",
    "ArchiveMissing",
    "BlobStore",
    "LocalBlobs",
    "RawArchive",
    "S3Blobs",
    "WarcExport",
    "WarcWriter",
    "archive_key",
    "export_warc",
]
