"""Full-text search on 500,000 pages of synthetic text, on SQLite and PostgreSQL; write costs.

The store is built once (cached: ``bench/out/search/pages-N-vV.db`` and the PostgreSQL schema
``bench_search_N_vV``) through the real migrations, so the index is the one the crawler gets:
SQLite triggers feeding FTS5, PostgreSQL's generated ``search_vector`` and its GIN index (built
after the load, as the migration defines it; the rows are read back from the SQLite file when
it is there, which is faster than generating them again).

- Text: a vocabulary of 60,000 made-up words drawn with Zipf's law (s = 1), as in natural text:
  the commonest word is in nearly every page, the 100th in one page in four. Titles 4-8 words,
  descriptions 10-25, visible text log-normal around 300 words (mean ~3.2 KB), 2,000 hosts
  of Pareto-distributed sizes (a third ``www.``), two crawls (90% / 10% of the pages),
  ``fetched_at`` spread over 90 days in insertion order.
- Queries: 200, drawn with a fixed seed: one word (its rank log-uniform over the vocabulary, so
  the commonest words are there too), two words, a phrase of two neighbouring words of a page
  (one of them outside the 100 commonest words), ``a OR b``, a word with a domain, a word
  within the last 7 or 30 days, deep pages (offset 100-200); one in ten in the small crawl.
  Phrases of two of the 100 commonest words ("of the") are timed apart, outside the bar: both
  stores must check positions in most pages for them. Each query is timed end to end through
  ``search_pages`` (ranking, the hits' rows, snippets) after one untimed pass to warm the
  caches. The bar (issue 7): p99 < 50 ms on both stores.
- ``--write-cost N``: the cost of the index on the write path: N pages written in batches of
  200 as the crawler's batch writer does (an upsert), with no text, with the text stored but
  not indexed, and with the text indexed; CPU of this process (SQLite runs in it) and of the
  PostgreSQL backend, per page. ``--words 1700`` gives pages of ~18 KB of text, as the crawl
  benchmark's.

Run: ``.venv/bin/python bench/bench_search.py [--store sqlite|postgresql|both] [--pages 500000]``
(building takes ~4 min for SQLite and ~25 min for PostgreSQL on an idle machine, ~15 and ~45
min under load, the first time; queries ~2 min). Exit status 1 if the bar is missed.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, text

from harvestman.search.hits import RANK_WINDOW
from harvestman.store import dialect, migrate
from harvestman.store.search.targets import search_pages

# The caches' versions, bumped when a store's search schema changes (PostgreSQL 3: migration
# 0008's lz4 vectors, bounded pending list and rank_vector; 4: 0011's pair_vector).
SQLITE_VERSION, PG_VERSION = 1, 4
BAR_MS = 50.0
OUT = Path(__file__).parent / "out" / "search"
PG_URL = os.environ.get("HARVESTMAN_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
SYLLABLES = (
    "ka", "lo", "mi", "ne", "ru", "to", "sa", "vi", "pel", "den", "mar", "qua", "ti",
    "zo", "bre", "dal", "fen", "gor", "hul", "jin", "kor", "lum", "nav", "ost", "pri", "quo",
    "ras", "sel", "tun", "ulm", "ver", "wex", "yal", "zan", "cro", "dri", "fla", "gri", "plo",
    "sta",
)  # fmt: skip
DAY = 86_400.0
COMMON_RANKS = 100  # the commonest words: each in more than ~15% of the pages
START = 1_767_225_600.0  # 2026-01-01
COLUMNS = (
    "crawl_id, url_hash, url, final_url, host, status_code, content_type, content_length, "
    "content_hash, title, description, fetched_at, links_count, text"
)


def vocabulary(size: int = 60_000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    while len(seen) < size:
        seen[("".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 3, 4)))))] = None
    return list(seen)


def hosts(count: int = 2000, seed: int = 11) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    names = [("www." if i % 3 == 0 else "") + f"site{i}.example" for i in range(count)]
    weights = rng.pareto(1.2, count) + 0.05
    return names, weights / weights.sum()


def pages(
    n: int, seed: int = 1, words: int = 300
) -> Iterator[tuple[int, str, str, str, str, float]]:
    """(crawl_id, host, title, description, text, fetched_at) for n pages, deterministically."""
    vocab = np.array(vocabulary(), dtype=object)
    cdf = np.cumsum(1.0 / np.arange(1, len(vocab) + 1))
    cdf /= cdf[-1]
    host_names, host_p = hosts()
    rng = np.random.default_rng(seed)
    done = 0
    while done < n:
        m = min(5000, n - done)
        lengths = np.clip(rng.lognormal(math.log(words), 0.6, m).astype(int), 30, 10 * words)
        title_n, desc_n = rng.integers(4, 9, m), rng.integers(10, 26, m)
        total = int(lengths.sum() + title_n.sum() + desc_n.sum())
        drawn = vocab[np.minimum(np.searchsorted(cdf, rng.random(total)), len(vocab) - 1)]
        page_hosts = rng.choice(len(host_names), m, p=host_p)
        crawl = np.where(rng.random(m) < 0.9, 1, 2)
        jitter = rng.random(m) * 2 * DAY
        at = 0
        for i in range(m):
            title = " ".join(drawn[at : at + title_n[i]]).capitalize()
            at += title_n[i]
            description = " ".join(drawn[at : at + desc_n[i]]).capitalize() + "."
            at += desc_n[i]
            body = drawn[at : at + lengths[i]]
            at += lengths[i]
            sentences = (
                " ".join(body[j : j + 12]).capitalize() + "." for j in range(0, len(body), 12)
            )
            fetched = START + (done + i) / n * 88 * DAY + jitter[i]
            yield (
                int(crawl[i]),
                host_names[page_hosts[i]],
                title,
                description,
                " ".join(sentences),
                fetched,
            )
        done += m


def rows(n: int, seed: int = 1, words: int = 300) -> Iterator[tuple]:
    for i, (crawl, host, title, description, body, fetched) in enumerate(pages(n, seed, words)):
        url = f"https://{host}/p/{i}"
        yield (crawl, f"{i:064x}", url, url, host, 200, "text/html", 20_000, f"{i:064x}",
               title, description, fetched, 30, body)  # fmt: skip


# -- building -------------------------------------------------------------------------------


def sqlite_store(n: int) -> Engine:
    path = OUT / f"pages-{n}-v{SQLITE_VERSION}.db"
    engine = dialect.make_engine(f"sqlite:///{path}")
    if path.exists() and _count(engine) == n:
        return engine
    engine.dispose()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    engine = dialect.make_engine(f"sqlite:///{path}")
    migrate.upgrade(engine)
    _load(engine, n)
    return engine


def pg_store(n: int) -> Engine:
    schema = f"bench_search_{n}_v{PG_VERSION}"
    engine = dialect.make_engine(f"{PG_URL}?options=-csearch_path%3D{schema}")
    with engine.begin() as conn:
        exists = conn.execute(
            text("SELECT 1 FROM information_schema.schemata WHERE schema_name = :s"), {"s": schema}
        ).first()
    if exists and _count(engine) == n:
        _build_indexes(engine)  # those an earlier run left unbuilt
        return engine
    with engine.begin() as conn:
        # Older versions' caches (4 GB each at 500,000 pages) go with the new one's build.
        for version in range(1, PG_VERSION + 1):
            conn.execute(text(f"DROP SCHEMA IF EXISTS bench_search_{n}_v{version} CASCADE"))
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    migrate.upgrade(engine)
    # The migrations' GIN indexes, built once after the load (a sorted build) rather than row by
    # row: the same definitions, in a fraction of the time. They are kept in a table until
    # built, so a run that stopped before (a build of the pairs' index takes ~20 min) resumes.
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE bench_unbuilt_indexes (definition text)"))
        gins = conn.execute(
            text(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = :s "
                "AND tablename = 'crawled_pages' AND indexdef LIKE '%USING gin%'"
            ),
            {"s": schema},
        ).all()
        for name, definition in gins:
            conn.execute(text("INSERT INTO bench_unbuilt_indexes VALUES (:d)"), {"d": definition})
            conn.execute(text(f"DROP INDEX {name}"))
    _load(engine, n)
    _build_indexes(engine)
    _maintain(engine, "VACUUM crawled_pages")
    return engine


def _build_indexes(engine: Engine) -> None:
    with engine.connect() as conn:
        unbuilt = conn.execute(text("SELECT definition FROM bench_unbuilt_indexes")).scalars()
        definitions = list(unbuilt)
    for definition in definitions:
        _maintain(engine, definition)
        with engine.begin() as conn:
            conn.execute(
                text("DELETE FROM bench_unbuilt_indexes WHERE definition = :d"), {"d": definition}
            )
    if definitions:
        _maintain(engine, "ANALYZE crawled_pages")


def _maintain(engine: Engine, statement: str) -> None:
    """Run a long statement of the build, again after a lost connection (a shared server may
    restart under the load; an index build it interrupted left nothing behind)."""
    import psycopg

    started = time.perf_counter()
    for _ in range(20):
        try:
            with engine.connect() as conn:
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                conn.execute(text("SET maintenance_work_mem = '1GB'"))
                conn.execute(text(statement))
            print(f"  {statement[:60]}…: {time.perf_counter() - started:.0f} s", flush=True)
            return
        except Exception as exc:
            if not isinstance(getattr(exc, "orig", exc), psycopg.OperationalError):
                raise
            print(f"  connection lost ({exc}); again", flush=True)
            engine.dispose()
            time.sleep(5)
    raise RuntimeError(f"{statement[:60]} failed 20 times")


def _stored_rows(n: int, start: int = 0) -> Iterator[tuple] | None:
    """The same rows read back from the SQLite store when it is built (generating them costs
    ~1 ms a page); None when it is not."""
    path = OUT / f"pages-{n}-v{SQLITE_VERSION}.db"
    if not path.exists():
        return None
    engine = dialect.make_engine(f"sqlite:///{path}")
    if _count(engine) != n:
        engine.dispose()
        return None

    def read() -> Iterator[tuple]:
        try:
            with engine.connect() as conn:
                result = conn.execution_options(yield_per=2000).execute(
                    text(f"SELECT {COLUMNS} FROM crawled_pages WHERE id > :start ORDER BY id"),
                    {"start": start},
                )
                yield from (tuple(row) for row in result)
        finally:
            engine.dispose()

    return read()


def _count(engine: Engine) -> int:
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT count(*) FROM crawled_pages")).scalar_one()
    except Exception:
        return -1


def _load(engine: Engine, n: int) -> None:
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO crawls (id, name, created_at, seeds) "
                "VALUES (1, 'big', 0, '[]'), (2, 'small', 0, '[]')"
            )
        )
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        if dialect.is_sqlite(engine):
            batch: list[tuple] = []
            marks = ", ".join("?" * 14)
            for i, row in enumerate(rows(n), 1):
                batch.append(row)
                if len(batch) == 5000:
                    cursor.execute("BEGIN IMMEDIATE")
                    cursor.executemany(
                        f"INSERT INTO crawled_pages ({COLUMNS}) VALUES ({marks})", batch
                    )
                    cursor.execute("COMMIT")
                    batch = []
                    if i % 50_000 == 0:
                        print(f"  {i:,} rows, {time.perf_counter() - started:.0f} s", flush=True)
            if batch:
                cursor.execute("BEGIN IMMEDIATE")
                cursor.executemany(f"INSERT INTO crawled_pages ({COLUMNS}) VALUES ({marks})", batch)
                cursor.execute("COMMIT")
        else:
            _copy(engine, n, started)
    finally:
        raw.close()
    print(f"  built {n:,} pages in {time.perf_counter() - started:.0f} s", flush=True)


def _copy(engine: Engine, n: int, started: float, chunk: int = 25_000) -> None:
    """COPY the rows in committed chunks, resuming after a lost connection (a shared server
    may restart under the load: a test of another suite), so a long build is not lost."""
    import psycopg

    for _ in range(20):
        done = _count(engine)
        if done < 0:
            time.sleep(5)
            continue
        source = _stored_rows(n, done) or itertools.islice(rows(n), done, None)
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            while done < n:
                with cursor.copy(f"COPY crawled_pages ({COLUMNS}) FROM STDIN") as copy:
                    for row in itertools.islice(source, chunk):
                        copy.write_row(row)
                raw.commit()
                done = min(n, done + chunk)
                print(f"  {done:,} rows, {time.perf_counter() - started:.0f} s", flush=True)
            return
        except psycopg.OperationalError as exc:
            print(f"  connection lost at {done:,} rows ({exc}); resuming", flush=True)
            engine.dispose()  # the pool's connections died with the server
            time.sleep(5)
        finally:
            with contextlib.suppress(Exception):
                raw.close()
    raise RuntimeError("the PostgreSQL build failed 20 times")


# -- queries ----------------------------------------------------------------------------------


def log_uniform_word(rng: random.Random, vocab: list[str]) -> str:
    return vocab[int(math.exp(rng.uniform(0, math.log(len(vocab))))) - 1]


def queries(count: int = 200, seed: int = 5) -> list[tuple[str, str, dict]]:
    """(class, q, keyword arguments of search_pages)."""
    rng = random.Random(seed)
    vocab = vocabulary()
    host_names, host_p = hosts()
    sample = list(pages(200, seed=99))
    end = START + 90 * DAY
    rank = {w: i + 1 for i, w in enumerate(vocab)}
    out = []
    kinds = (
        ["word"] * 6
        + ["two words"] * 6
        + ["phrase"] * 2
        + ["or"]
        + ["domain"] * 2
        + ["date"] * 2
        + ["deep page"]
    )
    for i in range(count):
        kind = kinds[i % len(kinds)]
        word = log_uniform_word(rng, vocab)
        kw: dict = {"crawl_id": 2 if rng.random() < 0.1 else 1}
        if kind == "word":
            q = word
        elif kind == "two words":
            q = f"{word} {log_uniform_word(rng, vocab)}"
        elif kind == "phrase":
            q = _phrase(rng, sample, rank, common=False)
        elif kind == "or":
            q = f"{word} OR {log_uniform_word(rng, vocab)}"
        elif kind == "domain":
            q = word
            kw["domain"] = rng.choices(host_names, host_p)[0].removeprefix("www.")
        elif kind == "date":
            q = word
            kw["since"] = end - rng.choice((7, 30)) * DAY
        else:
            q = word
            kw["offset"] = rng.randrange(100, 200)
        out.append((kind, q, kw))
    return out


def _phrase(rng: random.Random, sample: list, rank: dict[str, int], common: bool) -> str:
    """Two neighbouring words of a page's text: at least one of them a content word (rank >
    COMMON_RANKS), as people quote "heat pump" or "the beatles"; or, ``common``, two of the
    commonest words, the "of the" no one searches for, which both stores scan for long."""
    while True:
        body = rng.choice(sample)[4].lower().replace(".", "").split()
        at = rng.randrange(len(body) - 2)
        pair = body[at], body[at + 1]
        if common == all(rank[w] <= COMMON_RANKS for w in pair):
            return f'"{pair[0]} {pair[1]}"'


def common_phrases(count: int = 20, seed: int = 6) -> list[str]:
    rng = random.Random(seed)
    rank = {w: i + 1 for i, w in enumerate(vocabulary())}
    sample = list(pages(200, seed=99))
    return [_phrase(rng, sample, rank, common=True) for _ in range(count)]


def run_common_phrases(engine: Engine, name: str, window: int) -> None:
    phrases = common_phrases()
    for q in phrases:
        search_pages(engine, 1, q, window=window)
    times = []
    for q in phrases:
        started = time.perf_counter()
        search_pages(engine, 1, q, window=window)
        times.append((time.perf_counter() - started) * 1000)
    print(
        f"  not in the bar: {len(times)} phrases of two of the {COMMON_RANKS} commonest words "
        f"(e.g. {phrases[0]}): p50 {_pct(times, 50):.1f} ms, p90 {_pct(times, 90):.1f} ms, "
        f"max {max(times):.1f} ms"
    )


def run_queries(engine: Engine, name: str, window: int) -> bool:
    plan = queries()
    for _, q, kw in plan:  # warm the caches
        crawl = kw.pop("crawl_id")
        search_pages(engine, crawl, q, window=window, **kw)
        kw["crawl_id"] = crawl
    times: dict[str, list[float]] = {}
    every: list[float] = []
    slowest: list[tuple[float, str, dict, int]] = []
    inexact = 0
    totals = []
    for kind, q, kw in plan:
        args = dict(kw)
        crawl = args.pop("crawl_id")
        started = time.perf_counter()
        result = search_pages(engine, crawl, q, window=window, **args)
        elapsed = (time.perf_counter() - started) * 1000
        times.setdefault(kind, []).append(elapsed)
        every.append(elapsed)
        slowest.append((elapsed, q, kw, result.total))
        inexact += not result.total_is_exact
        totals.append(result.total)
    p99 = _pct(every, 99)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{name}: {len(every)} queries, window {window} (load average {load}: shared machine)")
    print(f"  {'class':<10} {'n':>4} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for kind, values in [*times.items(), ("all", every)]:
        print(
            f"  {kind:<10} {len(values):>4} {_pct(values, 50):>8.1f} {_pct(values, 90):>8.1f} "
            f"{_pct(values, 99):>8.1f} {max(values):>8.1f}"
        )
    print(
        f"  matches: median {statistics.median(totals):.0f}; {inexact} queries passed the window "
        "(total is a lower bound)"
    )
    for elapsed, q, kw, total in sorted(slowest, key=lambda s: s[0])[-5:]:
        print(f"  slow: {elapsed:6.1f} ms  {q!r} {kw} matches {total}")
    passed = p99 < BAR_MS
    print(f"  {'PASS' if passed else 'FAIL'}  p99 {p99:.1f} ms < {BAR_MS:.0f} ms")
    return passed


def _pct(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(pct / 100 * len(ordered)) - 1)]


# -- write cost -------------------------------------------------------------------------------


def write_cost(n: int, words: int, stores: tuple[str, ...], revision: str) -> None:
    data = list(rows(n, seed=3, words=words))
    print(
        f"\nwrite cost: {n:,} pages (text mean {statistics.mean(len(r[13]) for r in data):,.0f} "
        "chars), batches of 200, upsert"
    )
    print(f"  schema at revision {revision}")
    for store in stores:
        for mode in ("no text", "text, not indexed", "text, indexed"):
            cpu, server, wall = _write(store, mode, data, revision)
            print(
                f"  {store:<10} {mode:<18} {cpu / n * 1e6:7.0f} µs CPU/page here  "
                f"{server / n * 1e6:7.0f} µs in the server  {n / wall:7.0f} pages/s"
            )


def _write(store: str, mode: str, data: list[tuple], revision: str) -> tuple[float, float, float]:
    if store == "sqlite":
        path = OUT / "write-cost.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        engine = dialect.make_engine(f"sqlite:///{path}")
    else:
        engine = dialect.make_engine(f"{PG_URL}?options=-csearch_path%3Dbench_search_write")
        with engine.begin() as conn:
            conn.execute(text("DROP SCHEMA IF EXISTS bench_search_write CASCADE"))
            conn.execute(text("CREATE SCHEMA bench_search_write"))
    migrate.upgrade(engine, revision)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO crawls (id, name, created_at, seeds) "
                "VALUES (1, 'a', 0, '[]'), (2, 'b', 0, '[]')"
            )
        )
        if mode != "text, indexed":
            if store == "sqlite":
                for trigger in ("insert", "delete", "unindex", "reindex"):
                    conn.execute(text(f"DROP TRIGGER crawled_pages_fts_{trigger}"))
            else:
                conn.execute(
                    text("DROP TRIGGER IF EXISTS crawled_pages_search_vectors ON crawled_pages")
                )
                for column in ("search_vector", "rank_vector", "pair_vector"):
                    conn.execute(text(f"ALTER TABLE crawled_pages DROP COLUMN IF EXISTS {column}"))
    columns = COLUMNS if mode != "no text" else COLUMNS.removesuffix(", text")
    width = 14 if mode != "no text" else 13
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns.split(", ")[2:])
    sql = (
        f"INSERT INTO crawled_pages ({columns}) "
        f"VALUES ({', '.join(['%s' if store != 'sqlite' else '?'] * width)}) "
        f"ON CONFLICT (crawl_id, url_hash) DO UPDATE SET {updates}"
    )
    raw = engine.raw_connection()
    cursor = raw.cursor()
    backend = None
    if store != "sqlite":
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
        raw.commit()
    server = _proc_cpu(backend)
    cpu, wall = time.process_time(), time.perf_counter()
    for start in range(0, len(data), 200):
        batch = [r[:width] for r in data[start : start + 200]]
        if store == "sqlite":
            cursor.execute("BEGIN IMMEDIATE")
            cursor.executemany(sql, batch)
            cursor.execute("COMMIT")
        else:
            cursor.executemany(sql, batch)
            raw.commit()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    server = _proc_cpu(backend) - server
    raw.close()
    engine.dispose()
    return cpu, server, wall


def _proc_cpu(pid: int | None) -> float:
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--pages", type=int, default=500_000)
    parser.add_argument("--window", type=int, default=RANK_WINDOW)
    parser.add_argument("--write-cost", type=int, default=0, metavar="N")
    parser.add_argument("--words", type=int, default=300, help="median words of text a page")
    parser.add_argument(
        "--revision", default="head", help="--write-cost: the schema revision (compare 0007)"
    )
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.write_cost:
        stores = ("sqlite", "postgresql") if args.store == "both" else (args.store,)
        write_cost(args.write_cost, args.words, stores, args.revision)
        return 0
    passed = True
    for store in ("sqlite", "postgresql") if args.store == "both" else (args.store,):
        print(f"{store}: building or opening {args.pages:,} pages", flush=True)
        engine = sqlite_store(args.pages) if store == "sqlite" else pg_store(args.pages)
        passed &= run_queries(engine, store, args.window)
        run_common_phrases(engine, store, args.window)
        engine.dispose()
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
