"""indexes for the API's keyset-paged lists (issue 4)

Revision ID: 0009
Revises: 0008

Reserved in the chain so work in parallel does not fork it; filled by its change.
"""

from __future__ import annotations

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
