"""The raw body archive: bodies gzip-compressed and content-addressed (``ab/cd/<sha256>.html.gz``)
in a local directory (:class:`LocalBlobs`) or an S3-compatible bucket (:class:`S3Blobs`).

Synchronous and thread-safe: a ``put`` of a new 32 KB HTML page costs about 1.3 ms, mostly zlib at
level 6, which releases the GIL (a body already stored: 40 µs), so the engine calls ``put``
through ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import zlib
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from harvestman.errors import StoreError

__all__ = [
    "ArchiveError",
    "ArchiveMissing",
    "BlobStore",
    "LocalBlobs",
    "RawArchive",
    "S3Blobs",
    "UnsafeKey",
    "archive_key",
    "confined_key",
]


class ArchiveError(StoreError):
    """The raw archive failed (disk, bucket, network) or holds a corrupt object."""


class ArchiveMissing(ArchiveError):
    """No object exists under the requested key."""


class UnsafeKey(ArchiveError):
    """A key that would reach outside the archive: absolute, with a ``..``, ``.`` or empty
    segment, a backslash or a NUL, or (in a directory) resolving through a link beyond it."""


def confined_key(key: str) -> str:
    """``key`` when it is a relative ``/``-separated path that stays inside the archive, else
    ``UnsafeKey``. Keys come from the store, and the store from a restored archive: a crafted
    ``archive_path`` of ``/etc/x`` or ``../../x`` once made retention delete files anywhere.

    >>> confined_key("ab/cd/e.html.gz")
    'ab/cd/e.html.gz'
    >>> for key in ("../x", "/etc/passwd", "a//b"):
    ...     try:
    ...         confined_key(key)
    ...     except UnsafeKey as exc:
    ...         print(exc)
    archive key '../x' is outside the archive
    archive key '/etc/passwd' is outside the archive
    archive key 'a//b' is outside the archive
    """
    parts = key.split("/")
    if (
        not key
        or "\\" in key
        or "\x00" in key
        or any(part in ("", ".", "..") for part in parts)
        or len(key) > MAX_KEY_LENGTH
    ):
        raise UnsafeKey(f"archive key {key[:100]!r} is outside the archive")
    return key


_EXTENSIONS = {
    "text/html": "html",
    "application/xhtml+xml": "xhtml",
    "text/plain": "txt",
    "text/css": "css",
    "text/csv": "csv",
    "text/xml": "xml",
    "application/xml": "xml",
    "application/rss+xml": "xml",
    "application/atom+xml": "xml",
    "application/json": "json",
    "application/ld+json": "json",
    "application/javascript": "js",
    "text/javascript": "js",
    "application/pdf": "pdf",
}
MAX_KEY_LENGTH = 1024  # S3's limit; ours are ~80 characters
_KEY = re.compile(r"[0-9a-f]{2}/[0-9a-f]{2}/([0-9a-f]{64})\.[a-z]{2,5}\.gz")


def archive_key(body: bytes, content_type: str) -> str:
    """The key of ``body`` in the raw archive: its SHA-256, fanned out, with an extension from
    the MIME type (``bin`` for types without one), gzip-compressed.

    >>> archive_key(b"<p>hi", "text/html; charset=utf-8")
    'e2/45/e24523bbf0b1805b6d6dbc6f0bd5851f8ab0c661c5fd610541277058c5bce3bf.html.gz'
    """
    digest = hashlib.sha256(body).hexdigest()
    mime = content_type.partition(";")[0].strip().lower()
    return f"{digest[:2]}/{digest[2:4]}/{digest}.{_EXTENSIONS.get(mime, 'bin')}.gz"


class BlobStore(Protocol):
    """Where the raw archive keeps objects: immutable bytes under ``/``-separated keys.

    ``write`` may replace an object with identical bytes (content addressing makes that
    harmless) and is atomic: a reader sees the whole object or none. ``read`` raises
    ``ArchiveMissing`` for an absent key; every other failure is an ``ArchiveError``.
    All methods may be called from several threads at once.
    """

    def check(self) -> None:
        """Raise ``ArchiveError`` unless objects can be written (call once at start)."""
        ...

    def exists(self, key: str) -> bool: ...

    def write(self, key: str, data: bytes, content_type: str) -> None: ...

    def read(self, key: str) -> bytes: ...

    def delete(self, key: str) -> None:
        """Remove the object under ``key``; an absent one is no error (retention deletes the
        bodies of the pages it removes, and a second run may find them gone)."""
        ...

    def usage(self) -> tuple[int, int]:
        """(objects, bytes) stored: a walk of every object, for the storage report."""
        ...

    def close(self) -> None: ...


class LocalBlobs:
    """Objects as files under ``root`` (created on demand), written to a temporary file and
    renamed into place."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        """The file of ``key``, refused (``UnsafeKey``) unless it resolves inside the root:
        checked before every read, write and delete."""
        path = self.root / confined_key(key)
        root = self.root.resolve()
        if not path.resolve().is_relative_to(root):
            raise UnsafeKey(f"archive key {key[:100]!r} is outside the archive {root}")
        return path

    def check(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArchiveError(f"archive directory {self.root} is unusable: {exc}") from exc
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise ArchiveError(f"archive directory {self.root} is not writable")

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def write(self, key: str, data: bytes, content_type: str) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            raise ArchiveError(f"cannot write {path}: {exc}") from exc

    def read(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise ArchiveMissing(f"no archived object {key}") from None
        except OSError as exc:
            raise ArchiveError(f"cannot read {path}: {exc}") from exc

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise ArchiveError(f"cannot delete {path}: {exc}") from exc

    def usage(self) -> tuple[int, int]:
        objects = size = 0
        for directory, _, names in os.walk(self.root):
            for name in names:
                if not name.startswith(".tmp-"):
                    with contextlib.suppress(FileNotFoundError):  # deleted meanwhile
                        size += os.stat(os.path.join(directory, name)).st_size
                        objects += 1
        return objects, size

    def close(self) -> None:
        pass


class S3Blobs:
    """Objects in an S3-compatible bucket (AWS, MinIO, Ceph, moto), through boto3.

    boto3 rather than aiobotocore: every caller here is synchronous (exports stream from a
    thread, the engine writes through ``asyncio.to_thread``), boto3 clients are thread-safe,
    and aiobotocore pins exact botocore versions that fight other packages. ``endpoint_url``
    (None: AWS) switches to path-style addressing, which self-hosted servers expect.
    Credentials left None come from boto3's usual chain (environment, config files, IAM).
    ``prefix`` is put before every key; ``max_connections`` bounds the pool (match it to the
    threads that call in). The bucket must exist.
    """

    def __init__(
        self,
        bucket: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        prefix: str = "",
        max_connections: int = 16,
        timeout: float = 30.0,
    ) -> None:
        import boto3
        from botocore.config import Config

        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        config = Config(
            max_pool_connections=max_connections,
            connect_timeout=timeout,
            read_timeout=timeout,
            retries={"max_attempts": 3, "mode": "standard"},
            s3={"addressing_style": "path" if endpoint_url else "auto"},
        )
        self._client = boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=region,
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            config=config,
        )

    def check(self) -> None:
        self._call("head_bucket", f"bucket {self.bucket}", Bucket=self.bucket)

    def exists(self, key: str) -> bool:
        try:
            self._call("head_object", key, Bucket=self.bucket, Key=self.prefix + confined_key(key))
        except ArchiveMissing:
            return False
        return True

    def write(self, key: str, data: bytes, content_type: str) -> None:
        self._call(
            "put_object",
            key,
            Bucket=self.bucket,
            Key=self.prefix + confined_key(key),
            Body=data,
            # Raw bodies are kept gzipped (.gz keys); images as they are (archive/images.py).
            ContentType="application/gzip" if key.endswith(".gz") else content_type[:200],
            Metadata={"content-type": content_type[:200]},
        )

    def read(self, key: str) -> bytes:
        response = self._call(
            "get_object", key, Bucket=self.bucket, Key=self.prefix + confined_key(key)
        )
        try:
            body: bytes = response["Body"].read()
            return body
        except Exception as exc:  # a dropped connection mid-body, from urllib3 or botocore
            raise ArchiveError(f"cannot read {key} from bucket {self.bucket}: {exc}") from exc

    def delete(self, key: str) -> None:
        # S3 answers 204 for an absent key as for a present one.
        self._call("delete_object", key, Bucket=self.bucket, Key=self.prefix + confined_key(key))

    def usage(self) -> tuple[int, int]:
        from botocore.exceptions import BotoCoreError, ClientError

        objects = size = 0
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix
            )
            for page in pages:
                for listed in page.get("Contents", ()):
                    objects += 1
                    size += int(listed["Size"])
        except (BotoCoreError, ClientError) as exc:
            raise ArchiveError(f"S3 list of bucket {self.bucket} failed: {exc}") from exc
        return objects, size

    def close(self) -> None:
        self._client.close()

    def _call(self, operation: str, what: str, **params: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self._client, operation)(**params)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            if code in ("404", "NoSuchKey", "NotFound") and operation != "head_bucket":
                raise ArchiveMissing(f"no archived object {what}") from None
            message = error.get("Message") or code
            raise ArchiveError(f"S3 {operation} {what} failed: {message}") from exc
        except BotoCoreError as exc:
            raise ArchiveError(f"S3 {operation} {what} failed: {exc}") from exc


class RawArchive:
    """Bodies kept gzip-compressed under their :func:`archive_key`; a (sync) context manager
    that closes its blob store. Thread-safe.

    Example::

        with RawArchive(LocalBlobs(Path("archive"))) as archive:
            key = archive.put(b"<p>hi", "text/html")  # 'e2/45/e24523bb….html.gz'
            assert archive.get(key) == b"<p>hi"
    """

    def __init__(self, blobs: BlobStore, *, compresslevel: int = 6) -> None:
        self.blobs = blobs
        self.compresslevel = compresslevel

    def __enter__(self) -> RawArchive:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self.blobs.close()

    def check(self) -> None:
        """Raise ``ArchiveError`` unless bodies can be stored (call once at start)."""
        self.blobs.check()

    def put(self, body: bytes, content_type: str) -> str:
        """Archive ``body``; return its key. A body already archived is not written again."""
        key = archive_key(body, content_type)
        if not self.blobs.exists(key):
            # zlib writes no mtime in the gzip header: a body always compresses to the same bytes.
            z = zlib.compressobj(self.compresslevel, zlib.DEFLATED, 31)
            self.blobs.write(key, z.compress(body) + z.flush(), content_type)
        return key

    def get(self, key: str) -> bytes:
        """The body archived under ``key``, checked against the digest the key names.

        Raises ``ValueError`` for a string that is not an archive key, ``ArchiveMissing`` when
        nothing is stored under it, ``ArchiveError`` when the object is corrupt.
        """
        match = _KEY.fullmatch(key)
        if match is None:
            raise ValueError(f"not an archive key: {key[:200]!r}")
        data = self.blobs.read(key)
        try:
            body = zlib.decompress(data, 31)
        except zlib.error as exc:
            raise ArchiveError(f"archived object {key} is not valid gzip: {exc}") from None
        if hashlib.sha256(body).hexdigest() != match.group(1):
            raise ArchiveError(f"archived object {key} does not match its digest")
        return body
