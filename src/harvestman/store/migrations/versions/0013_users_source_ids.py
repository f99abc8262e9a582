"""users who sign in; source ids never reused on SQLite

Revision ID: 0013
Revises: 0012

``users``: the people who sign in to the API and the dashboard (``store.users``).

``sources`` on SQLite becomes AUTOINCREMENT: a plain INTEGER PRIMARY KEY hands the id of the
last deleted source to the next one created, which then inherited its crawl namespace
(``source-<id>``: pages and frontier). The table is rebuilt (``migrate`` turns foreign keys off
for it, or dropping the old table would cascade to the jobs), and the id sequence starts above
every ``source-<id>`` namespace already in the store, so no deleted source's crawl is reused
either. PostgreSQL's sequences never reuse an id: nothing changes there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("password_hash", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("tokens_after", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("name", name=op.f("uq_users_name")),
    )
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table(
        "sources", recreate="always", table_kwargs={"sqlite_autoincrement": True}
    ):
        pass
    bind = op.get_bind()
    highest = bind.execute(
        sa.text(
            "SELECT max(CAST(substr(name, 8) AS INTEGER)) FROM crawls "
            "WHERE name LIKE 'source-%' AND substr(name, 8) GLOB '[0-9]*' "
            "AND substr(name, 8) NOT GLOB '*[^0-9]*'"
        )
    ).scalar()
    highest = max(
        int(highest or 0), int(bind.execute(sa.text("SELECT max(id) FROM sources")).scalar() or 0)
    )
    bind.execute(sa.text("DELETE FROM sqlite_sequence WHERE name = 'sources'"))
    bind.execute(
        sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES ('sources', :seq)"),
        {"seq": highest},
    )


def downgrade() -> None:
    # AUTOINCREMENT stays on SQLite: it is harmless to the older code.
    op.drop_table("users")
