"""A page process's main loop (``python -m harvestman.crawl.pageprocess``): pages in, analyses out.

The crawler (:mod:`harvestman.crawl.pageworkers`) starts it with pipes on its stdin and
stdout. Each message either way is a frame: a 4-byte big-endian length, then a pickle. The
first frame in is the :class:`~harvestman.crawl.analysis.AnalysisSpec`; then each page comes as
two frames (:func:`page_frames`): ``(number, sent, url, status, header items, charset)``, then
the body's bytes as they are (a 20 KB body pickled, framed and joined was copied three times
in the crawler's process), answered, in order, by a frame that :func:`read_answer` turns into
``(number, analysis, waited)`` (``analysis``
None: the analysis raised, and the crawler analyzes that page
itself, so that the error surfaces there as it always did; ``waited``: seconds from ``sent``, the
crawler's ``time.monotonic()``, a clock all processes share, to the start of its analysis, which
tells the crawler how far behind this process is). The process ends when its stdin closes.

Answers are written together: while more pages already wait in its input, the process holds
its answers back, up to ``MAX_HELD_ANSWERS``, and writes them in one go when it would otherwise
wait for input. One write wakes the crawler's event loop once for several pages where one
write per page woke it every time.

It imports the parsers and nothing of the crawler, and its stdout carries frames only: what
would be printed there goes to stderr.
"""

from __future__ import annotations

import copyreg
import dataclasses
import io
import operator
import os
import pickle
import select
import signal
import struct
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO, Final

from multidict import CIMultiDict

from harvestman.crawl.analysis import AnalysisSpec, PageAnalysis, PageAnalyzer
from harvestman.extract.products import ProductScan
from harvestman.parse import Page
from harvestman.validate import Verdict, VerdictStatus

HEADER: Final = struct.Struct(">I")


# Answers held back while pages wait: a few pages' latency (~0.3 ms each) against a write and
# a wake-up of the crawler's loop per page.
MAX_HELD_ANSWERS: Final = 8
_READ_SIZE: Final = 1 << 18


class Frames:
    """Frames arriving in pieces: :meth:`feed` the bytes as they come, :meth:`pop` each whole
    frame's pickle (None until the next one is whole). What was popped is dropped once per
    feed, not once per frame."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.start = 0

    def feed(self, data: bytes | bytearray) -> None:
        if self.start:
            del self.buffer[: self.start]
            self.start = 0
        self.buffer += data

    def whole(self) -> int:
        """The end of the next whole frame in the buffer, or 0."""
        buffer, start = self.buffer, self.start
        if len(buffer) - start < HEADER.size:
            return 0
        end = start + HEADER.size + HEADER.unpack_from(buffer, start)[0]
        return end if end <= len(buffer) else 0

    def pop(self) -> bytes | None:
        end = self.whole()
        if not end:
            return None
        with memoryview(self.buffer) as view:
            data = bytes(view[self.start + HEADER.size : end])
        self.start = end
        return data


class FrameReader:
    """The frames of a pipe, read in large chunks: :meth:`next` returns the next one's pickle
    (None at the end of the stream), :meth:`ready` whether one is there without waiting."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.frames = Frames()
        self.ended = False

    def ready(self) -> bool:
        """A whole frame is buffered, or the pipe has bytes (a read would not block)."""
        return bool(self.frames.whole() or select.select([self.fd], [], [], 0)[0])

    def next(self) -> bytes | None:
        while (data := self.frames.pop()) is None:
            if self.ended:
                return None
            chunk = os.read(self.fd, _READ_SIZE)
            self.ended = not chunk
            self.frames.feed(chunk)
        return data


def frame(value: object) -> bytes:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def page_frames(
    number: int,
    sent: float,
    url: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    charset: str | None,
) -> list[bytes]:
    """A page's two frames, to be written as they are (``writelines``): the body is neither
    pickled nor copied here. The headers go as their items (a response's are a view), their
    names as plain strings: a ``multidict.istr`` pickles as a class and an argument, which
    took twice the instructions of the whole message."""
    items = tuple([(str(name), value) for name, value in headers.items()])
    meta = pickle.dumps(
        (number, sent, url, status, items, charset), protocol=pickle.HIGHEST_PROTOCOL
    )
    return [HEADER.pack(len(meta)), meta, HEADER.pack(len(body)), body]


def _by_fields(cls: type) -> Callable[[Any], tuple[type, tuple[Any, ...]]]:
    """Pickles a dataclass as its constructor and its fields in order: loading it is one call,
    where a slotted dataclass's own ``__setstate__`` walks its fields in Python (an analysis
    took ~25 µs to load in the crawler's process, ~8 µs so)."""
    names = tuple(field.name for field in dataclasses.fields(cls))
    assert all(field.init for field in dataclasses.fields(cls)), cls

    def reduce(value: Any) -> tuple[type, tuple[Any, ...]]:
        return cls, tuple(map(value.__getattribute__, names))

    return reduce


# What an answer holds beyond plain values (a page's products), pickled field by field; every
# other type as copyreg's table (as loaded with this module) says.
_ANSWER_TABLE: Final[dict[type, Callable[[Any], Any]]] = dict(copyreg.dispatch_table)
_ANSWER_TABLE[ProductScan] = _by_fields(ProductScan)
# An analysis travels as plain values: a class in a pickle is looked up by its module and name
# when written and again when read (~5 µs each way for an analysis's four classes and enum).
for _cls in (Page, Verdict):
    assert all(field.init for field in dataclasses.fields(_cls)), _cls
_PAGE_FIELDS: Final = operator.attrgetter(*(field.name for field in dataclasses.fields(Page)))
_VERDICT_FIELDS: Final = operator.attrgetter(*(field.name for field in dataclasses.fields(Verdict)))
_STATUSES: Final = {status.value: status for status in VerdictStatus}
_NO_PRODUCTS: Final = ProductScan()


def answer_frame(number: int, analysis: PageAnalysis | None, waited: float) -> bytes:
    plain: tuple[Any, ...] | None = None
    if analysis is not None:
        verdict: tuple[Any, ...] | None = None
        if analysis.verdict is not None:
            status, *rest = _VERDICT_FIELDS(analysis.verdict)
            verdict = (status.value, *rest)
        products = analysis.products
        plain = (
            _PAGE_FIELDS(analysis.page),
            verdict,
            analysis.fingerprint,
            () if products == _NO_PRODUCTS else products,
        )
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _ANSWER_TABLE
    pickler.dump((number, plain, waited))
    with buffer.getbuffer() as data:
        HEADER.pack_into(data, 0, len(data) - HEADER.size)
    return buffer.getvalue()


def read_answer(data: bytes) -> tuple[int, PageAnalysis | None, float]:
    """``(number, analysis, waited)`` from the pickle of an :func:`answer_frame`."""
    number, plain, waited = pickle.loads(data)
    if plain is None:
        return number, None, waited
    page, verdict, fingerprint, products = plain
    analysis = PageAnalysis(
        page=Page(*page),
        verdict=None if verdict is None else Verdict(_STATUSES[verdict[0]], *verdict[1:]),
        fingerprint=fingerprint,
        products=ProductScan() if products == () else products,
    )
    return number, analysis, waited


def serve(requests: int, replies: BinaryIO) -> None:
    """Answer pages from the pipe ``requests`` on ``replies`` until ``requests`` ends."""
    reader = FrameReader(requests)
    first = reader.next()
    if first is None:
        return
    spec = pickle.loads(first)
    assert isinstance(spec, AnalysisSpec)
    analyzer = PageAnalyzer(spec)
    held: list[bytes] = []

    def write_held() -> None:
        replies.write(b"".join(held))
        replies.flush()
        held.clear()

    while True:
        if held and (len(held) >= MAX_HELD_ANSWERS or not reader.ready()):
            write_held()
        data = reader.next()
        body = reader.next()
        if data is None or body is None:
            break
        number, sent, url, status, header_items, charset = pickle.loads(data)
        waited = time.monotonic() - sent
        analysis: PageAnalysis | None
        try:
            analysis = analyzer.analyze(url, status, CIMultiDict(header_items), body, charset)
        except Exception:
            analysis = None
        held.append(answer_frame(number, analysis, waited))
    if held:
        write_held()


def main() -> None:
    # Ctrl-C reaches the terminal's whole process group: the crawler stops on it and closes
    # this process's stdin, which ends it; a KeyboardInterrupt here would only print a trace.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not break a frame
    serve(sys.stdin.fileno(), replies)


if __name__ == "__main__":
    main()
