"""SQLite: the crawl's batch writer indexes its new pages in one statement, not row by row

Revision ID: 0026
Revises: 0025

FTS5 writes its pending terms out as a new segment whenever a statement opens a savepoint (its
``xSavepoint``), and every row of the page upsert does (it has triggers and constraints that can
abort): with the insert trigger indexing each row, each page became a segment of its own, merged
again and again. The 20,000 page rows of a benchmark crawl, upserted in batches of 200 by
sqlite3 alone: 54 µs a row (upsert and commit) with the trigger, 29 with one INSERT ... SELECT
of the batch's rows after the upsert, 20 with no search index at all. The insert trigger now stands
aside while the one-row table ``crawled_pages_fts_deferred`` holds a row, which only the batch
writer puts there, inside its own transaction, and removes before it indexes the rows it
inserted (``store.crawl.outcomes``). Every other writer still has its rows indexed by the
trigger; PostgreSQL is unchanged.
"""

from __future__ import annotations

from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

# As migration 0006 wrote it: the FTS5 row comes from the view, as every delete's does.
_ADD = (
    "INSERT INTO crawled_pages_fts(rowid, title, description, text, scope) "
    "SELECT id, title, description, text, scope FROM crawled_pages_search WHERE id = new.id;"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("CREATE TABLE crawled_pages_fts_deferred (deferred INTEGER PRIMARY KEY)")
    op.execute("DROP TRIGGER crawled_pages_fts_insert")
    op.execute(
        "CREATE TRIGGER crawled_pages_fts_insert AFTER INSERT ON crawled_pages "
        f"WHEN NOT EXISTS (SELECT 1 FROM crawled_pages_fts_deferred) BEGIN {_ADD} END"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP TRIGGER crawled_pages_fts_insert")
    op.execute(
        f"CREATE TRIGGER crawled_pages_fts_insert AFTER INSERT ON crawled_pages BEGIN {_ADD} END"
    )
    op.execute("DROP TABLE crawled_pages_fts_deferred")
