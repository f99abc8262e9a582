"""Main text extraction: the article alone, its metadata, and nothing from pages without one."""

from __future__ import annotations

import datetime as dt
import gzip
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harvestman.extract.maintext import MainText, MainTextExtractor, extract_main_text

FIXTURES = Path(__file__).parent / "fixtures" / "maintext"
NEWS_URL = "https://www.riversidecourier.example/environment/2024/nov/18/thames-barrier"
BLOG_URL = "https://crumbandcrust.example/2023/03/sourdough-at-altitude/"
SHOP_URL = "https://www.roestwerk.example/muehlen/bergfeld-k2"

NEWS_TEXT = """\
The Thames Barrier is expected to close around 40 times this winter, more than in any season \
since it opened in 1982, the Environment Agency has said.
The barrier, which spans 520 metres of the river at Woolwich, protects 125 square kilometres \
of central London from tidal surges coming up the estuary from the North Sea.
When it was designed in the 1970s, engineers expected it to close two or three times a year. \
It now closes several times a month between October and March, and the agency's own \
projections show that the figure will keep rising as sea levels climb.
"Every closure is a success, because it means the barrier did its job," said Julie Foley, the \
agency's director of flood risk strategy. "But the number of closures is also a measure of how \
much pressure the defences are under."
A barrier built for another century
The agency's Thames Estuary 2100 plan, published in 2012 and updated last year, assumes the \
barrier can keep London safe until about 2070. After that, a new barrier further downstream \
may be needed, at a cost that engineers put at between £6bn and £12bn.
Maintenance crews now work on the gates in the summer months only, because a closure can be \
ordered at four hours' notice during the storm season.
Residents of riverside boroughs are being urged to sign up for flood warnings, which the \
agency sends by text message and telephone."""

BLOG_TEXT = """\
For six years I baked the same loaf every Saturday in a small flat near the coast. Then we \
moved to Denver, a mile above sea level, and my first three loaves came out flat, sour and \
gummy in the middle.
Water boils at about 95 °C here instead of 100 °C, the air is dry, and dough rises faster \
because there is less air pressure holding it back. All three of those things matter for bread.
What I changed
- I raised the hydration from 72% to 76%, because the flour here is much drier.
- I cut the bulk fermentation from five hours to a little under four.
- I bake five minutes longer with the lid on, so the centre sets before the crust browns.
The biggest surprise was the starter. It peaks almost an hour earlier than it used to, so I \
now feed it at 1:5:5 in the evening instead of 1:2:2.
After a month of adjustments the loaves are as open and glossy as they were at sea level. If \
you are baking at altitude too, start with the fermentation time: it made the largest \
difference by far."""

# The menu, cart, banner, cross-selling and footer of the product page.
SHOP_AROUND = ["Warenkorb", "Zubehör", "Kostenloser Versand", "Kunden kauften auch",
               "Hausmischung", "Impressum", "Newsletter", "Zahlungsarten", "© 2024"]  # fmt: skip


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_a_news_article_loses_its_nav_sidebar_newsletter_box_comments_and_footer() -> None:
    found = extract_main_text(fixture("news_article.html"), NEWS_URL)

    assert found == MainText(
        text=NEWS_TEXT,
        title="River Thames barrier to close 40 times this winter, agency warns",
        author="Hannah Okafor",
        date=dt.date(2024, 11, 18),
        language="en",
    )


def test_a_blog_post_keeps_its_list_and_loses_the_widgets_and_the_comment_form() -> None:
    found = extract_main_text(fixture("blog_post.html"), BLOG_URL)

    assert found == MainText(
        text=BLOG_TEXT,
        title="Sourdough at altitude: what changed when I moved to Denver",
        author="Marisol Vega",
        date=dt.date(2023, 3, 4),
        language="en",
    )


def test_a_product_page_keeps_the_description_and_specifications_not_the_shop_around_them() -> None:
    found = extract_main_text(fixture("product_page.html"), SHOP_URL)
    lines = found.text.splitlines()

    assert found.title == "Kaffeemühle Handmühle „Bergfeld K2“"
    assert found.language == "de"
    for kept in [
        "Die Bergfeld K2 ist eine Handmühle mit einem Kegelmahlwerk aus gehärtetem Edelstahl. "
        "Das Mahlwerk ist doppelt gelagert und läuft deshalb auch bei feinen Einstellungen ohne "
        "Spiel.",
        "Der Korpus besteht aus eloxiertem Aluminium, die Kurbel ist abnehmbar, damit die Mühle "
        "in jede Reisetasche passt.",
        "| Mahlwerk | Kegelmahlwerk, Edelstahl, 38 mm |",
        "| Gewicht | 540 g |",
    ]:
        assert kept in lines
    for dropped in SHOP_AROUND:
        assert dropped not in found.text


def test_a_page_without_an_article_gives_no_text() -> None:
    found = extract_main_text(fixture("no_article.html"), "https://app.ledgerly.example/login")

    assert found == MainText(text="", language="en")


def test_comments_are_kept_apart_when_asked_for() -> None:
    extractor = MainTextExtractor(include_comments=True)

    found = extractor.extract(fixture("blog_post.html"), BLOG_URL)

    assert found.text == BLOG_TEXT
    assert found.comments == (
        "Same here! Shorter bulk was the fix for me as well.\n"
        "Did you change the oven temperature at all?"
    )


def test_balanced_focus_keeps_the_headline_and_standfirst() -> None:
    found = MainTextExtractor(focus="balanced").extract(fixture("news_article.html"), NEWS_URL)

    assert found.text.splitlines()[:3] == [
        "River Thames barrier to close 40 times this winter, agency warns",
        "Engineers say the flood defence is being used far more often than it was designed for.",
        NEWS_TEXT.splitlines()[0],
    ]


def test_a_publication_date_after_today_is_not_believed() -> None:
    before_publication = dt.datetime(2024, 6, 1, tzinfo=dt.UTC).timestamp()
    extractor = MainTextExtractor(clock=lambda: before_publication)

    assert extractor.extract(fixture("news_article.html"), NEWS_URL).date is None
    assert extractor.extract(fixture("blog_post.html"), BLOG_URL).date == dt.date(2023, 3, 4)


def test_bytes_are_decoded_with_the_http_charset() -> None:
    html = (
        "<html lang='fr'><head><title>Le café</title></head><body><article><p>"
        + "Le café crème se boit au comptoir, debout, avant le travail. " * 6
        + "</p></article></body></html>"
    )

    found = extract_main_text(html.encode("cp1252"), "https://cafe.example/", charset="latin-1")

    assert found.title == "Le café"
    assert found.language == "fr"
    assert found.text.startswith("Le café crème se boit au comptoir")


@pytest.mark.parametrize(
    ("html", "language"),
    [
        ('<html class="no-js" lang="EN-gb">', "en"),
        ("<html xml:lang='nl' lang=nl>", "nl"),
        ('<html><head><meta http-equiv="Content-Language" content="pt-BR">', "pt"),
        ('<html><head><meta content="sv_SE" property="og:locale">', "sv"),
        ('<html><head><meta property="og:locale" content="de_DE">', "de"),
        ('<html lang="">', None),
        ("<html>", None),
    ],
)
def test_the_declared_language_is_read_from_the_head(html: str, language: str | None) -> None:
    page = html + "<body><article><p>" + "Enough words to make an article. " * 10 + "</p>"

    assert extract_main_text(page, "https://a.example/").language == language


@pytest.mark.parametrize(
    "html",
    [
        b"",
        "",
        b"\x00" * 100,
        bytes(random.Random(3).randrange(256) for _ in range(5000)),
        gzip.compress(b"<html><body><p>" + b"compressed words " * 500 + b"</p></body></html>"),
        '{"not": ["html"]}',
        "<div>" * 50_000 + "deep" + "</div>" * 50_000,
        "<html><head></head><body></body></html>",
    ],
    ids=["empty-bytes", "empty", "nul", "random", "gzip", "json", "deep", "no-body"],
)
def test_garbage_never_raises_and_gives_no_text(html: bytes | str) -> None:
    assert extract_main_text(html, "https://a.example/") == MainText(text="")


def test_a_lone_surrogate_becomes_a_replacement_character_instead_of_ending_the_text() -> None:
    html = "<html><body><p>a \ud800 lone surrogate, and the rest</p></body></html>"

    assert (
        extract_main_text(html, "https://a.example/").text
        == "a \ufffd lone surrogate, and the rest"
    )


def test_a_page_over_the_size_limit_is_not_extracted() -> None:
    extractor = MainTextExtractor(max_chars=1000)

    found = extractor.extract("<p>" + "word " * 300 + "</p>", "https://a.example/")

    assert found == MainText(text="", error="too_large: 1507 characters")


def test_extractions_running_in_threads_give_the_same_results() -> None:
    pages = [
        (fixture(name), url)
        for name, url in [("news_article.html", NEWS_URL), ("blog_post.html", BLOG_URL),
                          ("product_page.html", SHOP_URL)]
    ]  # fmt: skip
    expected = [extract_main_text(body, url) for body, url in pages]

    with ThreadPoolExecutor(3) as pool:
        found = list(pool.map(lambda n: extract_main_text(*pages[n % 3]), range(30)))

    assert found == expected * 10
