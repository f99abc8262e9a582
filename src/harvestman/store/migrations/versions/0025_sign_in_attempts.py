"""sign-in attempts counted in the store: ``sign_in_attempts``

Revision ID: 0025
Revises: 0024

The API limited failed sign-ins in each process's memory, reading the count before the
password check and adding to it after: concurrent guesses all passed the read (72 checked
against a limit of 5), and every ``serve`` instance counted its own. A row per key (a user
name, a client address) and fixed window is now incremented by one upsert before the check.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sign_in_attempts",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("window_start", sa.Float, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
    )
    op.create_index("ix_sign_in_attempts_window", "sign_in_attempts", ["window_start"])


def downgrade() -> None:
    op.drop_index("ix_sign_in_attempts_window", table_name="sign_in_attempts")
    op.drop_table("sign_in_attempts")
