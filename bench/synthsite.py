"""A synthetic static website for the crawl benchmark, generated deterministically from a seed.

Each host is a directory of static files:

- ``index.html`` (served as ``/``) and ``p/<n>.html`` for ``n`` in ``1 .. pages-1``: about
  ``page_bytes`` of HTML each (head, nav, paragraphs of text, a related-links aside, a footer),
  with 20-40 links to other pages. A 20-ary tree of links (page ``n`` links to ``20n+1 .. 20n+20``)
  makes every page reachable from ``/``; the rest of the links are random. Some links carry a
  fragment or a ``utm_*`` parameter, a few point into ``/private/``; every page also has a
  ``mailto:`` link, an out-of-scope ``http://localhost/`` link and a stylesheet, none of which a
  crawler may fetch.
- ``private/<n>.html``: pages that exist but that ``robots.txt`` disallows.
- ``robots.txt``: ``User-agent: *`` / ``Disallow: /private/``.

The expected outcome of a crawl from ``/`` honouring robots.txt and a maximum depth (the root is
depth 0) is computed by BFS over the link graph and written to ``manifest.json``:

- ``allowed``: the pages a crawl fetches and completes (robots.txt not included),
- ``denied``: the ``/private/`` URLs it discovers within depth and records as blocked.

``--hosts K`` writes K independent sites (``host-000`` ...), ``pages // K`` pages each, each from
its own seed; one host is the throughput benchmark, many hosts the politeness one.

    python bench/synthsite.py bench/out/site --pages 20000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

GENERATOR_VERSION = 1
TREE_FANOUT = 20
SECTIONS = 6  # pages 1..6 are the nav sections every page links to
PRIVATE_LINK_RATE = 0.03
PARAGRAPH_POOL = 3000


@dataclass(frozen=True)
class SiteParams:
    """What determines a generated site; two equal ``SiteParams`` give byte-identical files."""

    pages: int = 20_000
    hosts: int = 1
    seed: int = 1
    page_bytes: int = 20_000
    max_depth: int = 20

    @property
    def pages_per_host(self) -> int:
        return max(SECTIONS + 1, self.pages // self.hosts)

    def key(self) -> str:
        """A short stable name for the files of this parameter set (``max_depth`` aside)."""
        site = {k: v for k, v in asdict(self).items() if k != "max_depth"}
        text = json.dumps({**site, "version": GENERATOR_VERSION}, sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:10]
        return f"synth-{self.pages}p-{self.hosts}h-{digest}"


@dataclass
class HostPlan:
    """One host's link graph: ``links[n]`` are page numbers, ``private_links[n]`` private ones."""

    pages: int
    links: list[list[int]]
    private_links: list[list[int]]
    private_pages: int


def page_path(n: int) -> str:
    return "/" if n == 0 else f"/p/{n}.html"


def private_path(n: int) -> str:
    return f"/private/{n}.html"


def plan_host(pages: int, rng: random.Random) -> HostPlan:
    """Draw the link graph of one host: tree links first, then random ones up to 20-40."""
    private_pages = max(1, pages // 100)
    links: list[list[int]] = []
    private_links: list[list[int]] = []
    sections = list(range(1, min(SECTIONS, pages - 1) + 1))
    for n in range(pages):
        children = list(
            range(TREE_FANOUT * n + 1, min(TREE_FANOUT * n + TREE_FANOUT, pages - 1) + 1)
        )
        wanted = rng.randint(20, 40)
        chosen = [0, *sections, *children]
        chosen += rng.choices(range(pages), k=max(0, wanted - len(chosen)))
        links.append(chosen)
        is_linking = rng.random() < PRIVATE_LINK_RATE
        private_links.append([rng.randrange(private_pages)] if is_linking else [])
    return HostPlan(pages, links, private_links, private_pages)


def expected_outcome(plan: HostPlan, max_depth: int) -> tuple[list[str], list[str], int]:
    """BFS from the root: (allowed paths, denied paths, deepest depth reached).

    A page at depth ``d < max_depth`` contributes its links at depth ``d + 1``; links past the
    maximum depth are dropped, so a private URL is denied only if discovered within depth.
    """
    depth = [-1] * plan.pages
    depth[0] = 0
    queue = deque([0])
    denied: set[int] = set()
    while queue:
        n = queue.popleft()
        if depth[n] >= max_depth:
            continue
        denied.update(plan.private_links[n])
        for target in plan.links[n]:
            if depth[target] < 0:
                depth[target] = depth[n] + 1
                queue.append(target)
    allowed = [page_path(n) for n in range(plan.pages) if depth[n] >= 0]
    return allowed, [private_path(n) for n in sorted(denied)], max(depth)


class Writer:
    """Renders pages of one site; the text comes from a shared seeded paragraph pool."""

    def __init__(self, rng: random.Random, page_bytes: int) -> None:
        self.rng = rng  # replaced per host, so that each host has its own stream
        self.page_bytes = page_bytes
        syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "den", "mar", "pel", "qua"]
        words = sorted({"".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(3000)})
        self.words = words
        self.paragraphs = [self._paragraph() for _ in range(PARAGRAPH_POOL)]

    def _paragraph(self) -> str:
        sentences = []
        for _ in range(self.rng.randint(3, 7)):
            words = self.rng.choices(self.words, k=self.rng.randint(8, 20))
            sentences.append(" ".join(words).capitalize() + ".")
        return " ".join(sentences)

    def _href(self, n: int, here: int) -> str:
        path = page_path(n)
        roll = self.rng.random()
        if roll < 0.05:
            return f"{path}#section-{self.rng.randint(1, 5)}"
        if roll < 0.08:
            return f"{path}?utm_source=related&amp;utm_medium=web"
        if roll < 0.3 and here != 0 and n != 0:
            return f"{n}.html"  # relative to /p/
        return path

    def page(self, n: int, plan: HostPlan) -> bytes:
        rng = self.rng
        title = " ".join(rng.choices(self.words, k=4)).title()
        description = " ".join(rng.choices(self.words, k=18))
        nav = "".join(
            f'<li><a href="{page_path(s)}">Section {s}</a></li>' for s in range(1, SECTIONS + 1)
        )
        targets = plan.links[n][SECTIONS + 1 :]
        private = plan.private_links[n]
        related = "".join(
            f'<li><a href="{self._href(t, n)}">{" ".join(rng.choices(self.words, k=3))}</a></li>'
            for t in targets
        )
        related += "".join(
            f'<li><a href="{private_path(p)}">Members only</a></li>' for p in private
        )
        head = (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{title} | Synthetic site</title>\n"
            f'<meta name="description" content="{description}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<link rel="stylesheet" href="/static/site.css">\n'
            f'<link rel="canonical" href="{page_path(n)}">\n</head>\n<body>\n'
            f'<header><a href="/">Home</a><nav><ul>{nav}</ul></nav></header>\n'
            f'<main>\n<article>\n<h1>{title}</h1>\n<p class="byline">Page {n}</p>\n'
        )
        tail = (
            "</article>\n"
            f"<aside><h2>Related</h2><ul>{related}</ul></aside>\n</main>\n"
            '<footer><p><a href="mailto:webmaster@example.com">Contact</a> '
            '<a href="http://localhost/elsewhere.html">Partner site</a></p></footer>\n'
            "</body>\n</html>\n"
        )
        budget = self.page_bytes - len(head) - len(tail)
        body: list[str] = []
        while budget > 0:
            paragraph = f"<p>{rng.choice(self.paragraphs)}</p>\n"
            body.append(paragraph)
            budget -= len(paragraph)
        return (head + "".join(body) + tail).encode()

    def private_page(self, n: int) -> bytes:
        return (
            f"<!DOCTYPE html>\n<html><head><title>Private {n}</title></head><body>\n"
            f'<p>{self.paragraphs[n % PARAGRAPH_POOL]}</p><a href="/">Home</a>\n</body></html>\n'
        ).encode()


SITEMAP_MAX_URLS = 50_000  # the protocol's limit per sitemap
SITEMAPS_PER_HOST = 4


def write_sitemaps(root: Path, origin: str, paths: list[str], listed: int) -> int:
    """Write ``/sitemap.xml`` (an index) and ``/sitemaps/<k>.xml`` under ``root``, listing
    ``paths`` then ``/listed/<n>.html`` (404s) up to ``listed`` URLs, absolute on ``origin``
    (``http://127.0.0.1:PORT``: known once the server runs); returns the sitemaps written.

    At least four sitemaps per host, as a shop or documentation site splits its pages, and at
    most 50,000 URLs in each; each entry ~115 bytes (a 5,000-URL sitemap is ~570 KB).
    """
    remove_sitemaps(root)
    total = max(listed, len(paths))
    count = max(SITEMAPS_PER_HOST, -(-total // SITEMAP_MAX_URLS))
    per = -(-total // count)
    folder = root / "sitemaps"
    folder.mkdir()
    for k in range(count):
        with (folder / f"{k}.xml").open("w") as out:
            out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
            out.write('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n')
            for n in range(k * per, min(total, (k + 1) * per)):
                path = paths[n] if n < len(paths) else f"/listed/{n}.html"
                out.write(
                    f"<url><loc>{origin}{path}</loc><lastmod>2025-06-{1 + n % 28:02d}"
                    "</lastmod><changefreq>weekly</changefreq></url>\n"
                )
            out.write("</urlset>\n")
    index = "".join(
        f"<sitemap><loc>{origin}/sitemaps/{k}.xml</loc></sitemap>\n" for k in range(count)
    )
    (root / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{index}'
        "</sitemapindex>\n"
    )
    return count


def remove_sitemaps(root: Path) -> None:
    """Remove what :func:`write_sitemaps` wrote (their URLs name a server's ports)."""
    (root / "sitemap.xml").unlink(missing_ok=True)
    folder = root / "sitemaps"
    if folder.exists():
        for file in folder.iterdir():
            file.unlink()
        folder.rmdir()


def host_plans(params: SiteParams) -> Iterator[tuple[random.Random, HostPlan]]:
    """Each host's random stream and link graph; the stream goes on to write its pages."""
    for host in range(params.hosts):
        rng = random.Random(f"{params.seed}-{host}")
        yield rng, plan_host(params.pages_per_host, rng)


def expectations(params: SiteParams) -> dict[str, object]:
    """The manifest's expected outcome for ``params.max_depth`` (replays the plans only)."""
    hosts: list[dict[str, object]] = []
    total_allowed = total_denied = 0
    for host, (_, plan) in enumerate(host_plans(params)):
        allowed, denied, deepest = expected_outcome(plan, params.max_depth)
        total_allowed += len(allowed)
        total_denied += len(denied)
        hosts.append(
            {
                "dir": f"host-{host:03d}",
                "allowed": len(allowed),
                "denied": len(denied),
                "deepest": deepest,
                "allowed_paths": allowed,
                "denied_paths": denied,
            }
        )
    return {
        "params": asdict(params),
        "expected_allowed": total_allowed,
        "expected_denied": total_denied,
        "hosts": hosts,
    }


def generate(params: SiteParams, out: Path) -> dict[str, object]:
    """Write the site(s) for ``params`` under ``out`` and return the manifest (also written)."""
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    writer = Writer(random.Random(params.seed), params.page_bytes)
    total_bytes = 0
    for host, (rng, plan) in enumerate(host_plans(params)):
        writer.rng = rng
        root = out / f"host-{host:03d}"
        (root / "p").mkdir(parents=True, exist_ok=True)
        (root / "private").mkdir(exist_ok=True)
        (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
        for n in range(plan.pages):
            body = writer.page(n, plan)
            total_bytes += len(body)
            target = root / "index.html" if n == 0 else root / "p" / f"{n}.html"
            target.write_bytes(body)
        for n in range(plan.private_pages):
            (root / "private" / f"{n}.html").write_bytes(writer.private_page(n))
    manifest: dict[str, object] = {
        "version": GENERATOR_VERSION,
        "pages_per_host": params.pages_per_host,
        "html_bytes": total_bytes,
        "generated_in_s": round(time.perf_counter() - started, 2),
        **expectations(params),
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def describe(manifest: dict[str, object]) -> str:
    """One line saying what a manifest holds."""
    params = SiteParams(**manifest["params"])  # type: ignore[arg-type]
    megabytes = int(manifest["html_bytes"]) / 1e6  # type: ignore[call-overload]
    return (
        f"{params.hosts} host(s) x {params.pages_per_host} pages, {megabytes:.0f} MB of HTML, "
        f"generated in {manifest['generated_in_s']} s; expected allowed "
        f"{manifest['expected_allowed']}, denied {manifest['expected_denied']} "
        f"(max depth {params.max_depth})"
    )


def load_or_generate(params: SiteParams, cache: Path) -> tuple[Path, dict[str, object]]:
    """The site for ``params`` under ``cache``, generated only if not there already.

    The files do not depend on ``max_depth``: for another depth only the expectations are
    recomputed (and the manifest rewritten).
    """
    out = cache / params.key()
    manifest_file = out / "manifest.json"
    if manifest_file.exists():
        manifest = json.loads(manifest_file.read_text())
        if manifest.get("params") != asdict(params):
            manifest.update(expectations(params))
            manifest_file.write_text(json.dumps(manifest))
        return out, manifest
    return out, generate(params, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory to write into")
    parser.add_argument("--pages", type=int, default=SiteParams.pages, help="pages in all")
    parser.add_argument("--hosts", type=int, default=SiteParams.hosts)
    parser.add_argument("--seed", type=int, default=SiteParams.seed)
    parser.add_argument("--page-bytes", type=int, default=SiteParams.page_bytes)
    parser.add_argument("--max-depth", type=int, default=SiteParams.max_depth)
    args = parser.parse_args()
    params = SiteParams(args.pages, args.hosts, args.seed, args.page_bytes, args.max_depth)
    print(describe(generate(params, args.out)))


if __name__ == "__main__":
    main()
