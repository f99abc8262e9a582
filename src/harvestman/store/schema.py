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
    func,
    text,
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
    # The row of the page, sitemap or feed that first revealed this URL, and how: link |
    # sitemap | feed | pagination | archive | seed (migration 0018; NULL before it).
    Column("parent_id", Id),
    Column("discovered_via", String(16)),
    # A product page's re-crawls in a row that found its prices and availability unchanged
    # (migration 0015): its next re-crawl is the adaptive interval of this count. NULL: not a
    # product page, or never re-crawled since.
    Column("recrawl_unchanged", SmallInteger),
    UniqueConstraint("crawl_id", "url_hash"),
    # SQLite only, so declared by its migrations and not here (store/search/index.py):
    # ix_urls_lease (crawl_id, status, host, priority, next_crawl_at), covering the counts by
    # status and host that SQLite, planning without statistics, would otherwise read the table
    # for. PostgreSQL dropped it (migration 0027): its planner serves them from the others.
    # The API's keyset-paged frontier list (id order), unfiltered and by status or host.
    Index("ix_urls_crawl_id", "crawl_id", "id"),
    Index("ix_urls_status", "crawl_id", "status", "id"),
    Index("ix_urls_host", "crawl_id", "host", "id"),
    # The links a page yielded (GET /api/v1/discovered-links?parent_id=).
    Index("ix_urls_parent", "crawl_id", "parent_id", "id"),
)
# Leasing (migration 0021): a host's pending rows in the lease's own order, so a lease reads
# its k rows and stops instead of sorting the host's top priority group; also the hosts with
# pending rows and the rows due.
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
# The rows in progress (migration 0027), by the worker leasing them: the heartbeat, the release
# of a worker's leases and the stale-lease sweep name no crawl. Partial: the leases out, not
# the frontier; lease_until stays out so the heartbeat's update of it can be HOT.
Index(
    "ix_urls_leased_by",
    urls.c.leased_by,
    sqlite_where=urls.c.status == "in_progress",
    postgresql_where=urls.c.status == "in_progress",
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

# Retention deletes an archived body once no page refers to its key (lifecycle/dependents.py):
# that lookup by key is this index. Partial: most stores archive nothing. Added by migration 0017.
_archived = crawled_pages.c.archive_path.is_not(None)
Index(
    "ix_crawled_pages_archive_path",
    crawled_pages.c.archive_path,
    sqlite_where=_archived,
    postgresql_where=_archived,
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

# What an operator set for one host (migration 0016), read by every worker on a short TTL
# (crawl/controls.py). NULL: the crawl's own setting applies.
domain_settings = Table(
    "domain_settings",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("host", String(300), nullable=False, unique=True),
    Column("paused", Boolean, nullable=False, default=False),
    Column("crawl_delay", Float),  # seconds between requests (never below robots.txt's)
    Column("concurrency", Integer),  # requests in flight to the host
    Column("recrawl_interval", Float),  # seconds before a fetched URL is due again
    Column("priority", SmallInteger, nullable=False, default=0),  # higher: leased first
    Column("updated_at", Float, nullable=False),
)

# Health of the configured proxies. ``url`` is the proxy URL with its password masked
# (``user:***@host``); the password itself is kept only as ``secret``, a Fernet token under
# ``proxy_key`` (credentials.py; migration 0016).
proxies = Table(
    "proxies",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("url", Text, nullable=False, unique=True),
    Column("secret", Text),
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
    # Its page's host without a leading "www." (store/products/query.py: domain_of), so a
    # domain's products are one index range (migration 0015 filled the rows stored before).
    Column("domain", String(300)),
    UniqueConstraint("crawl_id", "url_hash", "position"),
    # The product query's orders (store/products/query.py): each ends in id, the keyset's
    # tie-break. A filter is walked in the order it is most often read in: availability,
    # currency, brand and category by price, a domain by last change. Without that, the planner
    # walked an order's index and filtered: a host's first page read 25,000 rows of 1,000,000.
    # Price and rating carry the last change: a list filtered by it (``since``) checks it in
    # the index instead of fetching each walked row (migration 0022).
    Index("ix_products_price", "price", "id", "updated_at"),
    Index("ix_products_rating", "rating", "id", "updated_at"),
    Index("ix_products_updated_at", "updated_at", "id"),
    Index("ix_products_availability", "availability", "price", "id"),
    Index("ix_products_currency", "currency", "price", "id"),
    Index("ix_products_domain", "domain", "updated_at", "id"),
    Index("ix_products_parser", "parser", "id"),
    # Brand and category are text of any length: a PostgreSQL B-tree entry over ~2,700 bytes
    # is refused with the batch, so only their first 100 characters are indexed (lower case:
    # the filter ignores case).
    Index("ix_products_brand", func.lower(func.substr(text("brand"), 1, 100)), "price", "id"),
    Index("ix_products_category", func.lower(func.substr(text("category"), 1, 100)), "price", "id"),
    # A brand by rating too (0022): its ~1,000 rows were fetched and sorted for each page.
    Index(
        "ix_products_brand_rating", func.lower(func.substr(text("brand"), 1, 100)), "rating", "id"
    ),
)

# Each change of a product's price, currency or availability, and its first sighting, written
# in the batch that stored the product (store/products/history.py; migration 0015).
product_history = Table(
    "product_history",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("product_id", Id, ForeignKey("products.id", ondelete="CASCADE"), nullable=False),
    Column("price", Numeric(18, 4)),
    Column("currency", String(3)),
    Column("availability", String(16)),
    Column("changed_at", Float, nullable=False),
    Index("ix_product_history_product_id", "product_id", "changed_at", "id"),
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
    # The downloaded image (crawl_images, migration 0016): its key in the blob store (one blob
    # per SHA-256), size, digest and type; or why it could not be kept (error_class, error).
    Column("path", String(200)),
    Column("bytes", BigInteger),
    Column("sha256", String(64)),
    Column("content_type", String(200)),
    Column("error_class", String(64)),
    Column("error", Text),
    Column("fetched_at", Float),
    UniqueConstraint("product_id", "position"),
    # A fetched image's outcome is written to every row that shows it (by URL).
    Index("ix_images_url", "url"),
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

# Site parser rollouts (migration 0018): the candidate version of a parser on a domain ('*':
# every domain) parses ``share`` of its pages, picked by URL hash; the other version the rest.
parser_rollouts = Table(
    "parser_rollouts",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("parser", String(100), nullable=False),
    Column("domain", String(300), nullable=False),
    Column("version", String(50), nullable=False),
    Column("share", Float, nullable=False),  # 0.0 (rolled back) .. 1.0 (promoted)
    Column("updated_at", Float, nullable=False),
    Column("updated_by", String(200)),  # the admin token's subject
    UniqueConstraint("parser", "domain"),
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

# Sign-in attempts per key (``name:<user>``, ``client:<address>``) in the current window
# (``store.users``): counted in the store, so every ``serve`` sharing it counts together, and
# before the password is checked. Added by migration 0025.
sign_in_attempts = Table(
    "sign_in_attempts",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("window_start", Float, nullable=False),
    Column("attempts", Integer, nullable=False),
    Index("ix_sign_in_attempts_window", "window_start"),
)

# One row per backup the service took on its schedule (lifecycle/schedule.py), kept for good (a
# row a day): the store is what every instance reads, so whichever instance /metrics asks
# reports the same last success and failure count. Added by migration 0017.
backups = Table(
    "backups",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float, nullable=False),
    Column("status", String(8), nullable=False),  # ok | failed
    Column("path", Text, nullable=False),  # the file (gone once older than backup_keep_days)
    Column("bytes", BigInteger),
    Column("rows", BigInteger),  # rows in the copy, over all tables
    Column("verified", Boolean, nullable=False, default=False),  # restored and counted
    Column("error", Text),  # why it failed
    Index("ix_backups_status", "status", "finished_at"),
)
