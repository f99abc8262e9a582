"""extraction records, main text and parser statistics (issue 7)

Revision ID: 0007
Revises: 0006

Reserved in the chain so work in parallel does not fork it; filled by its change.
"""

from __future__ import annotations

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
