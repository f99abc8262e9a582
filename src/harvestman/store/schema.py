"""The store's tables, one SQLAlchemy schema for SQLite and PostgreSQL.

Times are UNIX epoch seconds (``Float``): they compare and index the same on both databases and
cost nothing to convert on the hot path. Changes go through Alembic (``store/migrations``) only.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# SQLite only aliases the rowid for a column declared exactly INTEGER PRIMARY KEY.
Id = BigInteger().with_variant(Integer(), "sqlite")

crawls = Table(
    "crawls",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("created_at", Float, nullable=False),
    Column("seeds", Text, nullable=False, default="[]"),  # JSON list of seed URLs
    # Where the raw archive keeps this crawl's bodies (archive/location.py), set when a crawl
    # with the archive on starts; NULL: never archived, or archived before migration 0012.
    Column("archive_location", Text, nullable=True),
)

urls = Table(
    "urls",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("crawl_id", Id, ForeignKey("crawls.id", ondelete="CASCADE"), nullable=False),
    Column("url_hash", String(64), nullable=False),
    Column("url", Text, nullable=False),
    Column("host", String(300), nullable=False),
    Column("status", String(16), nullable=False, default="pending"),
    Column("priority", SmallInteger, nullable=False, default=2),
    Column("depth", SmallInteger, nullable=False, default=0),
    Column("next_crawl_at", Float, nullable=False),
    Column("lease_until", Float),
    Column("leased_by", String(64)),
    Column("attempts", SmallInteger, nullable=False, default=0),
    Column("discovered_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("last_fetched_at", Float),
    Column("status_code", SmallInteger),
    Column("error_class", String(64)),
    Column("error", Text),
    Column("content_hash", String(64)),
    Column("etag", Text),
    Column("last_modified", Text),
    # page | sitemap | feed: what the body is parsed as.
    Column("kind", String(16), nullable=False, default="page", server_default="page"),
    Column("lastmod", Float),  # a sitemap's or feed's claim of the last change
    UniqueConstraint("crawl_id", "url_hash"),
    # Leasing: the ready rows of one host in priority order; also serves "which hosts have
    # pending work" and the stale-lease sweep (status = in_progress).
    Index("ix_urls_lease", "crawl_id", "status", "host", "priority", "next_crawl_at"),
    # The API's keyset-paged frontier list (id order), unfiltered and by status or host.
    Index("ix_urls_crawl_id", "crawl_id", "id"),
    Index("ix_urls_status", "crawl_id", "status", "id"),
    Index("ix_urls_host", "crawl_id", "host", "id"),
)
# Leasing (migration 0021): a host's pending rows in the lease's own order, so a lease reads
# its k rows and stops instead of sorting the host's top priority group.
Index(
    "ix_urls_ready",
    urls.c.crawl_id,
    urls.c.host,
    urls.c.priority.desc(),
    urls.c.next_crawl_at,
    urls.c.id,
    sqlite_where=urls.c.status == "pending",
    postgresql_where=urls.c.status == "pending",
)

crawled_pages = Table(
    "crawled_pages",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("crawl_id", Id, ForeignKey("crawls.id", ondelete="CASCADE"), nullable=False),
    Column("url_hash", String(64), nullable=False),
    Column("url", Text, nullable=False),
    Column("final_url", Text, nullable=False),
    Column("host", String(300), nullable=False),
    Column("status_code", SmallInteger),
    Column("content_type", String(200)),
    Column("content_length", BigInteger),
    Column("charset", String(64)),
    Column("content_hash", String(64)),
    Column("title", Text),
    Column("description", Text),
    Column("canonical", Text),
    Column("lang", String(35)),
    Column("links_count", Integer, nullable=False, default=0),
    Column("redirects", Text),  # JSON list of the hops before final_url
    Column("crawl_duration_ms", Integer),
    Column("fetched_at", Float, nullable=False),
    Column("error_class", String(64)),
    Column("error", Text),
    Column("validation_status", String(8)),  # ok | soft | hard
    Column("rejection_reason", String(64)),
    Column("simhash", BigInteger),  # signed 64-bit SimHash of the text
    Column("near_duplicate_of", String(64)),  # url_hash of the earlier page it repeats
    Column("proxy", Text),  # the proxy the fetch went through (credentials redacted)
    Column("archive_path", String(200)),  # the body in the raw archive (content-addressed)
    Column("text", Text),  # the visible text, when stored (store_text): full-text search reads it
    Column("main_text", Text),  # the article without boilerplate (extract_main_text, opt-in)
    UniqueConstraint("crawl_id", "url_hash"),
    # The API's keyset-paged page list (newest id first), unfiltered and per filter; the host
    # one also serves replay's scan of a host.
    Index("ix_crawled_pages_crawl_id", "crawl_id", "id"),
    Index("ix_crawled_pages_host", "crawl_id", "host", "id"),
    Index("ix_crawled_pages_status_code", "crawl_id", "status_code", "id"),
    Index("ix_crawled_pages_validation_status", "crawl_id", "validation_status", "id"),
    Index("ix_crawled_pages_fetched_at", "crawl_id", "fetched_at"),
)

domains = Table(
    "domains",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("host", String(300), nullable=False, unique=True),
    Column("robots_txt", Text),
    Column("robots_status", SmallInteger),
    Column("robots_fetched_at", Float),
    Column("crawl_delay", Float),
    Column("allowed", Boolean, nullable=False, default=True),
    Column("page_count", BigInteger, nullable=False, default=0),
    Column("updated_at", Float, nullable=False),
    # The politeness gate's fallback when Redis is away: busy while a request is in flight,
    # then closed until next_allowed_at.
    Column("busy_until", Float),
    Column("next_allowed_at", Float),
    Column("pagination_rules", Text),  # JSON: learnt ?page=N and /page/N patterns
    Column("archives_run_at", Float),
)

proxies = Table(
    "proxies",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("url", Text, nullable=False, unique=True),
    Column("successes", BigInteger, nullable=False, default=0),
    Column("failures", BigInteger, nullable=False, default=0),
    Column("consecutive_failures", Integer, nullable=False, default=0),
    Column("avg_response_ms", Float),
    Column("last_used_at", Float),
    Column("last_success_at", Float),
    Column("last_failure_at", Float),
    Column("active", Boolean, nullable=False, default=True),
    Column("retired_until", Float),
    Column("updated_at", Float, nullable=False),
)

cookies = Table(
    "cookies",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("crawl_id", Id, ForeignKey("crawls.id", ondelete="CASCADE"), nullable=False),
    Column("domain", String(300), nullable=False),
    Column("path", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("data", Text, nullable=False),  # JSON row of cookies.dump_cookies
    UniqueConstraint("crawl_id", "domain", "path", "name"),
)

workers = Table(
    "workers",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("hostname", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("heartbeat_at", Float, nullable=False),
    Column("info", Text),  # JSON: crawl, current host, pages fetched, pages/s
)


products = Table(
    "products",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("crawl_id", Id, ForeignKey("crawls.id", ondelete="CASCADE"), nullable=False),
    Column("url_hash", String(64), nullable=False),  # the page it was found on
    Column("position", Integer, nullable=False),  # its place among the page's products
    Column("page_url", Text, nullable=False),
    Column("product_url", Text),
    Column("name", Text),
    Column("description", Text),
    Column("price", Numeric(18, 4)),
    Column("currency", String(3)),
    Column("availability", String(16)),
    Column("rating", Numeric(6, 2)),
    Column("review_count", Integer),
    Column("brand", Text),
    Column("category", Text),
    Column("sku", Text),
    Column("gtin", String(14)),
    Column("source", String(16), nullable=False),  # json-ld | microdata | opengraph | a parser
    Column("parser", String(100), nullable=False),  # name@version of what extracted it
    Column("errors", Text),  # JSON list of skipped parts
    Column("mpn", Text),
    Column("condition", String(16)),  # new | used | refurbished | damaged
    Column("low_price", Numeric(18, 4)),  # of its AggregateOffer
    Column("high_price", Numeric(18, 4)),
    Column("offer_count", Integer),
    Column("best_rating", Numeric(6, 2)),  # of its AggregateRating, as the page gives them
    Column("worst_rating", Numeric(6, 2)),
    Column("rating_count", Integer),
    Column("sources", Text),  # JSON list of the forms that agree on it
    Column("confidence", Float),  # 0..1: how far those forms agree (extract/agreement.py)
    Column("content_hash", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),  # moves only when content_hash changes
    UniqueConstraint("crawl_id", "url_hash", "position"),
)

images = Table(
    "images",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("product_id", Id, ForeignKey("products.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("url", Text, nullable=False),
    Column("alt", Text),
    Column("width", Integer),
    Column("height", Integer),
    UniqueConstraint("product_id", "position"),
)

error_logs = Table(
    "error_logs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("crawl_id", Id, ForeignKey("crawls.id", ondelete="CASCADE")),
    Column("category", String(16), nullable=False),  # network | http | parse | validation | storage
    Column("error_class", String(64), nullable=False),
    Column("message", Text, nullable=False),
    Column("task", Text),  # the URL or job the error belongs to
    Column("stack_trace", Text),
    Column("created_at", Float, nullable=False),
    Index("ix_error_logs_crawl", "crawl_id", "created_at"),
    Index("ix_error_logs_category", "category", "created_at"),
)

# Crawl counters per (crawl, resolution, bucket): the engine adds its deltas once a minute with an
# additive upsert (stats.StatsHistory, store/history.py); maintenance rolls minute rows older than
# a week into day rows. Feeds /api/stats/timeseries without scanning pages.
stats_history = Table(
    "stats_history",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("crawl_id", Id, ForeignKey("crawls.id", ondelete="CASCADE"), nullable=False),
    Column("resolution", String(8), nullable=False),  # minute | day
    Column("bucket_start", Float, nullable=False),  # epoch seconds, a multiple of the resolution
    Column("pages", BigInteger, nullable=False, default=0),  # fetches that stored a page row
    Column("failed", BigInteger, nullable=False, default=0),  # URLs that failed for good
    Column("errors", BigInteger, nullable=False, default=0),  # rows written to error_logs
    Column("bytes", BigInteger, nullable=False, default=0),  # body bytes of the stored pages
    Column("status_2xx", BigInteger, nullable=False, default=0),
    Column("status_3xx", BigInteger, nullable=False, default=0),
    Column("status_4xx", BigInteger, nullable=False, default=0),
    Column("status_5xx", BigInteger, nullable=False, default=0),
    Column("robots_denied", BigInteger, nullable=False, default=0),
    Column("new_urls", BigInteger, nullable=False, default=0),
    UniqueConstraint("crawl_id", "resolution", "bucket_start"),
    # Reads over all crawls ("the last hour of the whole service").
    Index("ix_stats_history_time", "resolution", "bucket_start"),
)

# What site parsers (extract/plugins.py) found: one row per record a parser returned for a page,
# keyed by the parser's record key (its position on the page when the parser gives none).
parsed_records = Table(
    "parsed_records",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("crawl_id", Id, ForeignKey("crawls.id", ondelete="CASCADE"), nullable=False),
    Column("url_hash", String(64), nullable=False),  # the page it was found on
    Column("page_url", Text, nullable=False),
    Column("host", String(300), nullable=False),
    Column("parser", String(100), nullable=False),
    Column("parser_version", String(50), nullable=False),  # of the last write
    Column("record_key", String(200), nullable=False),
    Column("kind", String(50), nullable=False),  # article | listing | price | ...
    Column("data", Text, nullable=False),  # JSON object, sorted keys
    Column("content_hash", String(64), nullable=False),
    Column("first_seen_at", Float, nullable=False),
    Column("last_seen_at", Float, nullable=False),  # moves on every parse that returns it
    Column("updated_at", Float, nullable=False),  # moves only when content_hash changes
    UniqueConstraint("crawl_id", "url_hash", "parser", "record_key"),
    Index("ix_parsed_records_parser", "crawl_id", "parser", "kind"),
)

# Parse outcomes per day, so a site whose layout changed shows as a drop in its success rate.
parser_stats = Table(
    "parser_stats",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("crawl_id", Id, ForeignKey("crawls.id", ondelete="CASCADE"), nullable=False),
    Column("day", Float, nullable=False),  # UTC midnight, epoch seconds
    Column("host", String(300), nullable=False),
    Column("parser", String(100), nullable=False),
    Column("parser_version", String(50), nullable=False),
    Column("attempts", BigInteger, nullable=False, default=0),  # = successes + empty + errors
    Column("successes", BigInteger, nullable=False, default=0),  # pages with records
    Column("empty", BigInteger, nullable=False, default=0),  # handled pages without any
    Column("errors", BigInteger, nullable=False, default=0),  # the parser raised / bad records
    Column("records", BigInteger, nullable=False, default=0),
    Column("seconds", Float, nullable=False, default=0.0),  # time spent parsing
    Column("updated_at", Float, nullable=False),
    UniqueConstraint("crawl_id", "host", "parser", "parser_version", "day"),
)

# People who sign in to the API and dashboard (``store.users``; machines use tokens). A token
# issued before ``tokens_after`` is refused: disabling a user or changing their password ends
# every session they had. Added by migration 0013.
users = Table(
    "users",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("password_hash", String(200), nullable=False),  # argon2id, PHC string
    Column("role", String(16), nullable=False),  # user | admin
    Column("enabled", Boolean, nullable=False, default=True),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("tokens_after", Float, nullable=False, default=0.0),
)
