"""Downloaded product images, content-addressed in the raw archive's blob store.

An image is kept as fetched (PNG, JPEG, WebP and GIF are compressed already; gzip would only
cost CPU) under ``images/ab/cd/<sha256>.<ext>`` in the same directory or bucket as the raw HTML
bodies (:class:`~harvestman.archive.raw.BlobStore`). The key is the SHA-256 of the bytes, so two
products showing the same image, under one URL or several, share one object.
"""

from __future__ import annotations

import hashlib

from harvestman.archive.raw import BlobStore

__all__ = ["ImageArchive", "image_key"]

# Pillow's format names -> the extension of the key.
_EXTENSIONS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif"}


def image_key(sha256: str, image_format: str) -> str:
    """The key of an image whose bytes have digest ``sha256``.

    >>> image_key("ab" * 32, "PNG")
    'images/ab/ab/abababababababababababababababababababababababababababababababab.png'
    """
    extension = _EXTENSIONS.get(image_format.upper(), "img")
    return f"images/{sha256[:2]}/{sha256[2:4]}/{sha256}.{extension}"


class ImageArchive:
    """Keeps image bytes once per SHA-256. Synchronous and thread-safe (the blob store is):
    the crawler calls ``put`` through ``asyncio.to_thread``. Raises ``ArchiveError``."""

    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs

    def check(self) -> None:
        self.blobs.check()

    def close(self) -> None:
        self.blobs.close()

    def put(self, body: bytes, content_type: str, image_format: str) -> tuple[str, str, bool]:
        """Store ``body``; returns its key, its SHA-256 and whether it was new."""
        digest = hashlib.sha256(body).hexdigest()
        key = image_key(digest, image_format)
        if self.blobs.exists(key):
            return key, digest, False
        self.blobs.write(key, body, content_type)
        return key, digest, True

    def get(self, key: str) -> bytes:
        return self.blobs.read(key)
