"""stats history: per-minute crawl counters rolled up to daily (issue 7)

Revision ID: 0010
Revises: 0009

Reserved in the chain so work in parallel does not fork it; filled by its change.
"""

from __future__ import annotations

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
