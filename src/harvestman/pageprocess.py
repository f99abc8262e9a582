"""A page process's main loop (``python -m harvestman.pageprocess``): pages in, analyses out.

The crawler (:mod:`harvestman.crawl.pageworkers`) starts it with pipes on its stdin and
stdout. Each message either way is a frame: a 4-byte big-endian length, then a pickle. The
first frame in is the :class:`~harvestman.analysis.AnalysisSpec`; each next one a page,
``(number, sent, url, status, headers, body, charset)``, answered by ``(number, analysis,
waited)``, in order (``analysis`` None: the analysis raised, and the crawler analyzes that page
itself, so that the error surfaces there as it always did; ``waited``: seconds from ``sent``, the
crawler's ``time.monotonic()``, a clock all processes share, to the start of its analysis, which
tells the crawler how far behind this process is). The process ends when its stdin closes.

It imports the parsers and nothing of the crawler, and its stdout carries frames only: what
would be printed there goes to stderr.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import time
from typing import BinaryIO, Final

from harvestman.analysis import AnalysisSpec, PageAnalysis, PageAnalyzer

HEADER: Final = struct.Struct(">I")


def read_frame(stream: BinaryIO) -> bytes | None:
    """The next frame's pickle; None at the end of the stream."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    data = stream.read(size)
    return data if len(data) == size else None


def frame(value: object) -> bytes:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """Answer pages from ``requests`` on ``replies`` until ``requests`` ends."""
    first = read_frame(requests)
    if first is None:
        return
    spec = pickle.loads(first)
    assert isinstance(spec, AnalysisSpec)
    analyzer = PageAnalyzer(spec)
    while (data := read_frame(requests)) is not None:
        number, sent, url, status, headers, body, charset = pickle.loads(data)
        waited = time.monotonic() - sent
        analysis: PageAnalysis | None
        try:
            analysis = analyzer.analyze(url, status, headers, body, charset)
        except Exception:
            analysis = None
        replies.write(frame((number, analysis, waited)))
        replies.flush()


def main() -> None:
    # Ctrl-C reaches the terminal's whole process group: the crawler stops on it and closes
    # this process's stdin, which ends it; a KeyboardInterrupt here would only print a trace.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not break a frame
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
