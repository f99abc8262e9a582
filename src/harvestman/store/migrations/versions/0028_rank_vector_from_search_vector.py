"""search, PostgreSQL: a page's rank vector is set by the search trigger, from the search vector

Revision ID: 0028
Revises: 0027

``rank_vector`` (migration 0008: title, description and the first 1,000 characters of the text,
kept in the row for ts_rank_cd) was a generated column: every page row written tokenized its
fields a second time, right after the trigger of migration 0011 had tokenized them for
``search_vector``, and every UPDATE of a page did so again, even one that left them as they were
(a re-crawl of an unchanged page). When no field is longer than 1,000 characters (a crawl that
stores no text: title and description) the two vectors are the same, so the trigger now sets
``rank_vector`` to ``search_vector``, and tokenizes the fields' first 1,000 characters only
for a longer one; an UPDATE that leaves the fields as they were keeps it as it is, with the
other two. The values are those the generated column computed. Measured on a crawl of 20,000
pages: the server's CPU a page -6 % (bench/pg_cost.py, six runs each way; docs/SCALING.md §1.1).

SQLite: nothing changes (FTS5 ranks from its own index).
"""

from __future__ import annotations

from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

MAX_INDEXED_CHARS = 100_000  # as migration 0006
RANK_TEXT_CHARS = 1000  # as migration 0008
_FIELDS = (("title", "A"), ("description", "B"), ("text", "D"))


def _vector(chars: int, row: str = "") -> str:
    return " || ".join(
        f"setweight(to_tsvector('simple'::regconfig, left(coalesce({row}{name}, ''), {chars})), "
        f"'{weight}')"
        for name, weight in _FIELDS
    )


def _all_short(row: str) -> str:
    return " AND ".join(
        f"length(coalesce({row}{name}, '')) <= {RANK_TEXT_CHARS}" for name, _ in _FIELDS
    )


# Migration 0028's addition to the trigger of migration 0011: rank_vector at its end.
_RANK = f"""    IF {_all_short("NEW.")} THEN
        NEW.rank_vector := NEW.search_vector;
    ELSE
        NEW.rank_vector := {_vector(RANK_TEXT_CHARS, "NEW.")};
    END IF;
"""


def _trigger_function(rank: str) -> str:
    """The trigger function as migration 0011 wrote it, with ``rank`` before its end."""
    return f"""
CREATE OR REPLACE FUNCTION crawled_pages_search_vectors() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    at text[] := '{{}}';
    pairs text[] := '{{}}';
    word text;
    positions smallint[];
    p int;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.pair_vector IS NOT NULL
            AND NEW.title IS NOT DISTINCT FROM OLD.title
            AND NEW.description IS NOT DISTINCT FROM OLD.description
            AND NEW.text IS NOT DISTINCT FROM OLD.text THEN
        RETURN NEW;
    END IF;
    NEW.search_vector := {_vector(MAX_INDEXED_CHARS, "NEW.")};
    FOR word, positions IN SELECT u.lexeme, u.positions FROM unnest(NEW.search_vector) AS u LOOP
        FOREACH p IN ARRAY positions LOOP
            at[p] := word;
        END LOOP;
    END LOOP;
    FOR p IN coalesce(array_lower(at, 1), 1) .. coalesce(array_upper(at, 1), 0) - 1 LOOP
        IF at[p] IS NOT NULL AND at[p + 1] IS NOT NULL THEN
            pairs := pairs || (at[p] || ' ' || at[p + 1]);
        END IF;
    END LOOP;
    NEW.pair_vector := array_to_tsvector(pairs);
{rank}    RETURN NEW;
END $$
"""


def _has_lz4() -> bool:
    found = op.get_bind().exec_driver_sql(
        "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
    )
    return bool(found.scalar())


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # The values stay: the column only stops being computed by the table (no rewrite).
    op.execute("ALTER TABLE crawled_pages ALTER COLUMN rank_vector DROP EXPRESSION")
    op.execute(_trigger_function(_RANK))


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(_trigger_function(""))
    # PostgreSQL 15 cannot make a column generated again: it is added anew, as 0008 had it.
    op.execute("ALTER TABLE crawled_pages DROP COLUMN rank_vector")
    op.execute(
        "ALTER TABLE crawled_pages ADD COLUMN rank_vector tsvector "
        f"GENERATED ALWAYS AS ({_vector(RANK_TEXT_CHARS)}) STORED, "
        "ALTER COLUMN rank_vector SET STORAGE MAIN"
        + (", ALTER COLUMN rank_vector SET COMPRESSION lz4" if _has_lz4() else "")
    )
