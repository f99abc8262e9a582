"""search: a short vector to rank pages by, cheaper vectors, a bounded GIN pending list (issue 7)

Revision ID: 0008
Revises: 0007

PostgreSQL reads a page's ``search_vector`` out of TOAST for every candidate row a phrase query
checks and every match it ranks (a vector is ~4.6 KB on a 3 KB page: pglz barely shrinks it,
and it is slow to compress and decompress). lz4, where the server has it, does both several
times faster; rows written from now on take it (``VACUUM FULL`` does not recompress old ones).

GIN's pending list (``fastupdate``) makes writes cheap but every search reads the whole list:
up to ``gin_pending_list_limit`` (4 MB by default, a few thousand pages of a running crawl).
1 MB bounds what a search pays for it; writers flush the list four times as often.

Ranking read the whole ``search_vector`` of each of up to 1,000 matches (55 µs a row out of
TOAST: 55 ms a query). Pages gain ``rank_vector``: title, description and the first
``RANK_TEXT_CHARS`` of the text, small enough to stay in the row (``STORAGE MAIN``), which
ts_rank_cd reads instead. Adding it rewrites ``crawled_pages`` once (an exclusive lock for the
time it takes: minutes for a million pages).

SQLite: nothing changes (FTS5 keeps positions in its index; phrases are cheap there).
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_TABLES = ("crawled_pages", "products")
PENDING_LIST_KB = 1024
RANK_TEXT_CHARS = 1000  # ~150 words: the vector stays under 2 KB, in the row
_RANK_VECTOR = " || ".join(
    f"setweight(to_tsvector('simple'::regconfig, left(coalesce({name}, ''), {chars})), '{weight}')"
    for name, chars, weight in (("title", 1000, "A"), ("description", 1000, "B"),
                                ("text", RANK_TEXT_CHARS, "D"))
)  # fmt: skip


def _has_lz4() -> bool:
    found = op.get_bind().exec_driver_sql(
        "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
    )
    return bool(found.scalar())


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    lz4 = _has_lz4()
    # One statement, so the rewrite that fills the column already keeps it in the row.
    op.execute(
        f"ALTER TABLE crawled_pages ADD COLUMN rank_vector tsvector "
        f"GENERATED ALWAYS AS ({_RANK_VECTOR}) STORED, "
        "ALTER COLUMN rank_vector SET STORAGE MAIN"
        + (", ALTER COLUMN rank_vector SET COMPRESSION lz4" if lz4 else "")
    )
    for table in _TABLES:
        if lz4:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN search_vector SET COMPRESSION lz4")
        op.execute(
            f"ALTER INDEX ix_{table}_search_vector SET (gin_pending_list_limit = {PENDING_LIST_KB})"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"ALTER INDEX ix_{table}_search_vector RESET (gin_pending_list_limit)")
        op.execute(f"ALTER TABLE {table} ALTER COLUMN search_vector SET COMPRESSION default")
    op.execute("ALTER TABLE crawled_pages DROP COLUMN rank_vector")
