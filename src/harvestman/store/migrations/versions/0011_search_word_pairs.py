"""search: an index of neighbouring word pairs for phrases on PostgreSQL (issue 7)

Revision ID: 0011
Revises: 0010

A phrase's GIN lookup on ``search_vector`` lists every page holding its words, and each must then
be checked for them as neighbours, reading its vector out of TOAST (~40 µs): "the" next to a
word in one page in ten means 50,000 checks in 500,000 pages. Pages gain ``pair_vector``: one
lexeme per pair of neighbouring positions of ``search_vector`` ("heat pump"), with a GIN index of
its own, so a two-word phrase is one index lookup and needs no check, and a longer one is checked
only on the pages holding all its pairs.

A generated column cannot read another, and computing the pairs from the text again would
tokenize it twice, so ``search_vector`` stops being generated (its values stay) and one trigger
computes both: the vector, then the pairs from its positions (so a pair is exactly what
``phraseto_tsquery`` matches). An update that leaves title, description and text as they were
(a re-crawl of an unchanged page) keeps both vectors without tokenizing. Upgrading an existing
store computes every page's pairs once (minutes for a million pages).

SQLite: nothing changes (FTS5 keeps positions in its index; phrases are cheap there).
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

MAX_INDEXED_CHARS = 100_000  # as migration 0006
PENDING_LIST_KB = 1024  # as migration 0008
_FIELDS = (("title", "A"), ("description", "B"), ("text", "D"))


def _vector(row: str = "") -> str:
    return " || ".join(
        f"setweight(to_tsvector('simple'::regconfig, left(coalesce({row}{name}, ''), "
        f"{MAX_INDEXED_CHARS})), '{weight}')"
        for name, weight in _FIELDS
    )


# Lexemes are words of the 'simple' parser, which never holds a space: "a b" cannot be a word.
_TRIGGER_FUNCTION = f"""
CREATE FUNCTION crawled_pages_search_vectors() RETURNS trigger LANGUAGE plpgsql AS $$
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
    NEW.search_vector := {_vector("NEW.")};
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
    RETURN NEW;
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
    op.execute("ALTER TABLE crawled_pages ALTER COLUMN search_vector DROP EXPRESSION")
    op.execute("ALTER TABLE crawled_pages ADD COLUMN pair_vector tsvector")
    if _has_lz4():
        op.execute("ALTER TABLE crawled_pages ALTER COLUMN pair_vector SET COMPRESSION lz4")
    op.execute(_TRIGGER_FUNCTION)
    op.execute(
        "CREATE TRIGGER crawled_pages_search_vectors BEFORE INSERT OR UPDATE ON crawled_pages "
        "FOR EACH ROW EXECUTE FUNCTION crawled_pages_search_vectors()"
    )
    # A row without pairs is (re)computed by the trigger.
    op.execute("UPDATE crawled_pages SET pair_vector = NULL")
    op.execute(
        "CREATE INDEX ix_crawled_pages_pair_vector ON crawled_pages USING gin (pair_vector) "
        f"WITH (gin_pending_list_limit = {PENDING_LIST_KB})"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER crawled_pages_search_vectors ON crawled_pages")
    op.execute("DROP FUNCTION crawled_pages_search_vectors()")
    op.execute("ALTER TABLE crawled_pages DROP COLUMN pair_vector")
    # PostgreSQL 15 cannot make a column generated again: it is added anew, as 0006 and 0008 had it.
    op.execute("ALTER TABLE crawled_pages DROP COLUMN search_vector")
    op.execute(
        "ALTER TABLE crawled_pages ADD COLUMN search_vector tsvector "
        f"GENERATED ALWAYS AS ({_vector()}) STORED"
    )
    if _has_lz4():
        op.execute("ALTER TABLE crawled_pages ALTER COLUMN search_vector SET COMPRESSION lz4")
    op.execute(
        "CREATE INDEX ix_crawled_pages_search_vector ON crawled_pages USING gin (search_vector) "
        f"WITH (gin_pending_list_limit = {PENDING_LIST_KB})"
    )
