"""Time garbage validation and SimHash per page, and the near-duplicate index; print µs per page.

The engine already has the page's visible text (``Page.text``) when it validates, so the
figure that matters is ``Validator.validate(..., text=page.text)`` plus ``simhash64(page.text)``
on a ~20 KB page, against the crawl's ~800 µs of CPU per page (the budget: 15 % for
validation, SimHash and discovery together; the target: under 60 µs for these two). The
realistic page of ``bench_parse.py`` and pages of the crawl benchmark's synthetic site are
timed, the fingerprint is split into its parts, and the alternative the design rejected (a
per-shingle ``blake2b`` in Python) is timed for comparison. The index is timed and its memory
measured at 10,000 pages, and the synthetic site is checked for verdicts and near-duplicates
(the crawl benchmark expects every page kept).

Run: ``.venv/bin/python bench/bench_validate.py`` (about 20 s).
"""

from __future__ import annotations

import hashlib
import random
import statistics
import time
import timeit
import tracemalloc
from collections import Counter
from collections.abc import Callable

import numpy as np

from bench_parse import PAGE_URL, realistic_page, synthetic_site_pages
from harvestman.parse import parse_html
from harvestman.simhash import (
    _WORD_BYTES,
    NearDuplicateIndex,
    _majority,
    hamming,
    simhash64,
)
from harvestman.validate import Validator

HEADERS = {"Content-Type": "text/html; charset=utf-8"}
CRAWL_US_PER_PAGE = 800.0
TARGET_US = 60.0


def us_per_call(function: Callable[[], object], number: int) -> float:
    """Best CPU µs per call over 7 rounds (CPU time: the machine is shared)."""
    rounds = timeit.Timer(function, timer=time.process_time).repeat(repeat=7, number=number)
    return min(rounds) / number * 1e6


def blake2b_features(text: str) -> list[int]:
    """The rejected design's hashing step alone: one blake2b per word 3-gram, in Python."""
    tokens = text.lower().split()
    return [
        int.from_bytes(
            hashlib.blake2b(" ".join(tokens[i : i + 3]).encode(), digest_size=8).digest()
        )
        for i in range(len(tokens) - 2)
    ]


def line(label: str, us: float, note: str = "") -> None:
    print(f"  {label:<40} {us:7.1f} µs{note}")


def main() -> None:
    validator = Validator()
    body, _ = realistic_page()
    page = parse_html(body, PAGE_URL, charset="utf-8")
    text = page.text
    print(
        f"realistic page: {len(body):,} bytes, text {len(text):,} chars, "
        f"{len(text.split()):,} words, ASCII: {text.isascii()}"
    )
    validate_us = us_per_call(lambda: validator.validate(200, HEADERS, body, text), 20_000)
    simhash_us = us_per_call(lambda: simhash64(text), 2_000)
    combined = validate_us + simhash_us
    line("validate(text=page.text)", validate_us)
    line("simhash64(page.text)", simhash_us)
    verdict = "met" if combined < TARGET_US else "MISSED"
    line(
        "together",
        combined,
        f" = {combined / CRAWL_US_PER_PAGE:.1%} of {CRAWL_US_PER_PAGE:.0f} µs/page "
        f"(target {TARGET_US:.0f} µs: {verdict})",
    )
    ascii_text = text.encode("ascii", "ignore").decode()
    line("simhash64, the same text in ASCII", us_per_call(lambda: simhash64(ascii_text), 2_000))
    data = text.encode().translate(_WORD_BYTES)
    features = np.random.default_rng(1).integers(0, 2**63, size=len(text.split()), dtype=np.uint64)
    parts: dict[str, Callable[[], object]] = {
        "encode + translate": lambda: text.encode().translate(_WORD_BYTES),
        "word edges (flatnonzero)": lambda: np.flatnonzero(
            np.frombuffer(data, dtype=np.uint8) != 0
        ),
        f"majority of {features.size:,} features": lambda: _majority(features),
    }
    for label, function in parts.items():
        line(f"  of which {label}", us_per_call(function, 2_000))
    short = " ".join(text.split()[:300])
    line("simhash64 of a 300-word text", us_per_call(lambda: simhash64(short), 2_000))
    line(
        "rejected: blake2b per 3-gram alone",
        us_per_call(lambda: blake2b_features(text), 50),
        " (before any bit counting)",
    )
    line("for scale: parse_html", us_per_call(lambda: parse_html(body, PAGE_URL), 300))
    line(
        "validate without text (parses)",
        us_per_call(lambda: validator.validate(200, HEADERS, body), 300),
    )
    shell = (
        b'<!doctype html><html><head><title>App</title><script src="/app.js"></script></head>'
        b'<body><div id="root"></div></body></html>'
    )
    shell_text = parse_html(shell, PAGE_URL).text
    shell_verdict = validator.validate(200, HEADERS, shell, shell_text).reason
    line(
        "validate an app shell, text given",
        us_per_call(lambda: validator.validate(200, HEADERS, shell, shell_text), 5_000),
        f" ({shell_verdict}: parsed again for its structure)",
    )
    synthetic_site()
    near_duplicate_index()


def synthetic_site() -> None:
    validator = Validator()
    pages = synthetic_site_pages(2_000)
    if not pages:
        return
    texts = [parse_html(p, PAGE_URL).text for p in pages]
    size = statistics.mean(map(len, pages)) / 1000
    chars = statistics.mean(map(len, texts)) / 1000
    print(f"synthetic site: {len(pages):,} pages of ~{size:.0f} KB, text ~{chars:.0f} K chars")
    timings = [
        us_per_call(lambda p=p, t=t: (validator.validate(200, HEADERS, p, t), simhash64(t)), 200)
        for p, t in zip(pages[:100], texts[:100], strict=True)
    ]
    line(
        "validate + simhash64",
        statistics.mean(timings),
        f"/page (min {min(timings):.1f}, max {max(timings):.1f})",
    )
    verdicts = Counter(
        validator.validate(200, HEADERS, p, t).status.value
        for p, t in zip(pages, texts, strict=True)
    )
    index = NearDuplicateIndex()
    fingerprints = [simhash64(t) for t in texts]
    duplicates = sum(index.add(str(n), f) is not None for n, f in enumerate(fingerprints))
    closest = min(hamming(fingerprints[i], fingerprints[j]) for i in range(300) for j in range(i))
    print(
        f"  verdicts {dict(verdicts)}; near-duplicates {duplicates} "
        f"(closest pair among 300 pages: {closest} bits; the crawl benchmark needs 0)"
    )


def near_duplicate_index() -> None:
    rng = random.Random(1)
    count = 10_000
    doc_ids = [hashlib.sha256(str(n).encode()).hexdigest() for n in range(count)]
    fingerprints = [rng.getrandbits(64) for _ in doc_ids]
    index = NearDuplicateIndex(max_docs=count)
    started = time.process_time()
    for doc_id, fingerprint in zip(doc_ids, fingerprints, strict=True):
        index.add(doc_id, fingerprint)
    add_us = (time.process_time() - started) / count * 1e6
    probes = [f ^ (1 << rng.randrange(64)) for f in fingerprints[:1000]]
    find_us = us_per_call(lambda: [index.find(p) for p in probes], 20) / len(probes)
    evict = NearDuplicateIndex(max_docs=1_000)
    started = time.process_time()
    for doc_id, fingerprint in zip(doc_ids, fingerprints, strict=True):
        evict.add(doc_id, fingerprint)
    evict_us = (time.process_time() - started) / count * 1e6

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    measured = NearDuplicateIndex(max_docs=count)
    for doc_id, fingerprint in zip(doc_ids, fingerprints, strict=True):
        measured.add(doc_id, fingerprint)
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    print(f"near-duplicate index of {count:,} pages:")
    line("add (new page)", add_us)
    line("add at the cap (evicts one)", evict_us)
    line("find (a near-duplicate)", find_us)
    print(
        f"  memory: {size / count:.0f} bytes per page, {size / 2**20:.1f} MiB "
        "(doc ids not counted: they are the caller's strings)"
    )


if __name__ == "__main__":
    main()
