"""politeness gate in the store and worker status

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("domains") as batch_op:
        batch_op.add_column(sa.Column("busy_until", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("next_allowed_at", sa.Float(), nullable=True))
    with op.batch_alter_table("workers") as batch_op:
        batch_op.add_column(sa.Column("info", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workers") as batch_op:
        batch_op.drop_column("info")
    with op.batch_alter_table("domains") as batch_op:
        batch_op.drop_column("next_allowed_at")
        batch_op.drop_column("busy_until")
