"""WARC/1.1 output (warcio): a ``warcinfo`` record first, then a ``response`` and a ``request``
record per exchange, linked by ``WARC-Concurrent-To``; and the export of stored pages to a WARC.

Synchronous and thread-safe: an exchange with a 32 KB HTML body costs about 1 ms (0.3 ms without
gzip; zlib releases the GIL), so the engine writes through ``asyncio.to_thread``.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from io import BytesIO
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import urlsplit

import orjson
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvestman import __version__
from harvestman.archive.raw import ArchiveMissing, RawArchive, UnsafeKey

log = logging.getLogger(__name__)

__all__ = ["ORIG_PREFIX", "WarcExport", "WarcWriter", "export_warc"]

Headers = Mapping[str, str] | Iterable[tuple[str, str]]

# The body we hold is decoded, so headers that describe the bytes on the wire would make the
# record lie; they are kept under this prefix (pywb's convention) and Content-Length is recomputed.
ORIG_PREFIX = "X-Archive-Orig-"
_WIRE_HEADERS = frozenset(
    {"content-encoding", "transfer-encoding", "content-length", "content-md5", "content-digest"}
)
_BODYLESS = frozenset({204, 304})
_CONFORMS_TO = "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"


class WarcWriter:
    """A WARC/1.1 file being written; a (sync) context manager. Thread-safe.

    Entering opens ``path`` (truncated, or appended to with ``append=True``) and writes a
    ``warcinfo`` record (``software``, ``format``, ``conformsTo`` and the ``info`` fields). With
    ``gzip`` each record is its own gzip member, as WARC readers expect of ``.warc.gz``.
    Every record is flushed to the file when written, so a killed process loses at most the
    record being written. ``clock`` dates the warcinfo record (epoch seconds).

    Example::

        with WarcWriter(Path("out.warc.gz")) as warc:
            warc.write_exchange("https://a.org/", {"User-Agent": "bot"}, 200, None,
                                {"Content-Type": "text/html"}, b"<p>hi", time.time())
    """

    def __init__(
        self,
        path: Path,
        *,
        gzip: bool = True,
        append: bool = False,
        info: Mapping[str, str] | None = None,
        compresslevel: int = 6,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.gzip = gzip
        self.append = append
        self.info = dict(info or {})
        self.compresslevel = compresslevel
        self.exchanges = 0
        self._clock = clock
        self._lock = threading.Lock()
        self._file: IO[bytes] | None = None
        self._warc: WARCWriter | None = None

    def __enter__(self) -> WarcWriter:
        file = self.path.open("ab" if self.append else "wb")
        out: Any = _GzipMembers(file, self.compresslevel) if self.gzip else file
        self._file = file
        self._warc = WARCWriter(out, gzip=False, warc_version="1.1")
        info = {
            "software": f"harvestman/{__version__}",
            "format": "WARC File Format 1.1",
            "conformsTo": _CONFORMS_TO,
            **self.info,
        }
        record = self._warc.create_warcinfo_record(self.path.name, info)
        record.rec_headers.replace_header("WARC-Date", _warc_date(self._clock()))
        self._warc.write_record(record)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
            self._file = self._warc = None

    def write_exchange(
        self,
        url: str,
        request_headers: Headers,
        status: int,
        reason: str | None,
        response_headers: Headers,
        body: bytes,
        fetched_at: float,
        ip: str | None = None,
        *,
        truncated: bool = False,
        method: str = "GET",
    ) -> None:
        """Write the ``response`` record of ``url`` and its ``request`` record.

        ``body`` is the decoded body; ``response_headers`` are the headers as received (a
        multidict keeps repeated ones). ``Content-Encoding``, ``Transfer-Encoding``,
        ``Content-Length``, ``Content-MD5`` and ``Content-Digest`` are renamed
        ``X-Archive-Orig-<name>`` and ``Content-Length: len(body)`` is added (not for 204/304),
        so the HTTP message in the record is exactly what a reader gets. ``reason`` defaults to
        the standard phrase of ``status``. Both records carry ``WARC-Date`` (from
        ``fetched_at``, epoch seconds), ``WARC-Target-URI`` and, when given,
        ``WARC-IP-Address``; ``truncated`` marks the response ``WARC-Truncated: length``.
        The request record has no body, and a ``Host`` header first unless one is given.
        Non-ASCII header values are %-encoded (RFC 8187) by warcio.
        """
        phrase = reason or _phrase(status)
        response = StatusAndHeaders(
            f"{status} {phrase}".rstrip(),
            _response_headers(response_headers, len(body), status),
            protocol="HTTP/1.1",
        )
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request_pairs = _clean(request_headers)
        if not any(name.lower() == "host" for name, _ in request_pairs):
            request_pairs.insert(0, ("Host", _host(url)))
        request = StatusAndHeaders(
            f"{method} {target} HTTP/1.1", request_pairs, is_http_request=True
        )
        common = {"WARC-Date": _warc_date(fetched_at)}
        if ip:
            common["WARC-IP-Address"] = ip
        response_fields = dict(common)
        if truncated:
            response_fields["WARC-Truncated"] = "length"
        warc = self._warc
        if warc is None:
            raise RuntimeError("WarcWriter.write_exchange() called outside 'with WarcWriter'")
        # Building a record only digests its payload; the lock serializes the file writes.
        resp = warc.create_warc_record(
            url,
            "response",
            payload=BytesIO(body),
            length=len(body),
            warc_headers_dict=response_fields,
            http_headers=response,
        )
        req = warc.create_warc_record(
            url,
            "request",
            payload=BytesIO(b""),
            length=0,
            warc_headers_dict=dict(common),
            http_headers=request,
        )
        with self._lock:
            if self._warc is None:
                raise RuntimeError("WarcWriter closed while writing")
            warc.write_request_response_pair(req, resp)
            self.exchanges += 1


class _GzipMembers:
    """Compresses what warcio writes into one gzip member per record (warcio flushes once at
    the end of each record); warcio's own wrapper uses level 9, 45% slower than 6 on HTML for
    0.4% smaller output."""

    def __init__(self, raw: IO[bytes], level: int) -> None:
        self._raw = raw
        self._level = level
        self._z: Any = None

    def write(self, data: bytes) -> None:
        if self._z is None:
            self._z = zlib.compressobj(self._level, zlib.DEFLATED, 31)
        self._raw.write(self._z.compress(data))

    def flush(self) -> None:
        if self._z is not None:
            self._raw.write(self._z.flush())
            self._z = None
        self._raw.flush()


def _warc_date(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _host(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


_CONTROL = re.compile(r"[\r\n\x00]+")


def _clean(headers: Headers) -> list[tuple[str, str]]:
    """Header pairs safe to serialize: no CR/LF/NUL, and aiohttp's surrogate escapes (bytes
    that were not UTF-8) replaced, since warcio's %-encoding needs valid UTF-8."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    cleaned = []
    for name, value in pairs:
        value = _CONTROL.sub(" ", value)
        if not value.isascii():
            value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        cleaned.append((_CONTROL.sub("", name), value))
    return cleaned


def _response_headers(headers: Headers, length: int, status: int) -> list[tuple[str, str]]:
    pairs = []
    for name, value in _clean(headers):
        if name.lower() in _WIRE_HEADERS:
            pairs.append((ORIG_PREFIX + name, value))
        else:
            pairs.append((name, value))
    if status not in _BODYLESS and not 100 <= status < 200:
        pairs.append(("Content-Length", str(length)))
    return pairs


@dataclass(slots=True)
class WarcExport:
    """What :func:`export_warc` did: exchanges ``written``; pages ``skipped`` because they
    have no response or no archived body; pages whose archived body was ``missing``; pages
    whose ``archive_path`` is no archive key or leaves the archive (``refused``: a crafted
    row, reported rather than a crash)."""

    written: int = 0
    skipped: int = 0
    missing: int = 0
    refused: int = 0


def export_warc(
    pages: Iterable[Mapping[str, Any]],
    archive: RawArchive,
    out: Path,
    *,
    gzip: bool | None = None,
    clock: Callable[[], float] = time.time,
) -> WarcExport:
    """Write a WARC of ``pages`` (rows as ``store.exports.iter_pages`` yields them) to ``out``.

    A page is written when it has a ``status_code`` and an ``archive_path`` whose body the
    archive holds; its response record targets ``final_url`` and is dated ``fetched_at``. The
    store keeps no HTTP headers, so the response carries ``Content-Type`` (with the page's
    ``charset``) and ``Content-Length`` only, unless the row has ``response_headers`` (a JSON
    list of ``[name, value]`` pairs); the request record carries ``Host`` only. ``gzip``
    defaults to whether ``out`` ends in ``.gz``. Memory stays constant: one body at a time.
    """
    counts = WarcExport()
    info = {"description": "exported from a Harvestman store; HTTP headers as stored"}
    use_gzip = out.name.endswith(".gz") if gzip is None else gzip
    with WarcWriter(out, gzip=use_gzip, info=info, clock=clock) as warc:
        for page in pages:
            key = page.get("archive_path")
            status = page.get("status_code")
            if not key or status is None:
                counts.skipped += 1
                continue
            try:
                body = archive.get(key)
            except ArchiveMissing:
                counts.missing += 1
                continue
            except (ValueError, UnsafeKey) as exc:
                counts.refused += 1
                log.warning("page %s not exported: %s", page.get("url"), exc)
                continue
            warc.write_exchange(
                page.get("final_url") or page["url"],
                (),
                status,
                None,
                _stored_headers(page),
                body,
                page["fetched_at"],
            )
            counts.written += 1
    return counts


def _stored_headers(page: Mapping[str, Any]) -> list[tuple[str, str]]:
    stored = page.get("response_headers")
    if stored:
        return [(str(name), str(value)) for name, value in orjson.loads(stored)]
    content_type = page.get("content_type")
    if not content_type:
        return []
    charset = page.get("charset")
    return [("Content-Type", f"{content_type}; charset={charset}" if charset else content_type)]
