"""products images error logs archive path

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 23:16:56.904944
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "error_logs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("crawl_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("category", sa.String(length=16), nullable=False),
        sa.Column("error_class", sa.String(length=64), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("task", sa.Text(), nullable=True),
        sa.Column("stack_trace", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["crawl_id"],
            ["crawls.id"],
            name=op.f("fk_error_logs_crawl_id_crawls"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_error_logs")),
    )
    with op.batch_alter_table("error_logs", schema=None) as batch_op:
        batch_op.create_index("ix_error_logs_category", ["category", "created_at"], unique=False)
        batch_op.create_index("ix_error_logs_crawl", ["crawl_id", "created_at"], unique=False)

    op.create_table(
        "products",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("crawl_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("url_hash", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("page_url", sa.Text(), nullable=False),
        sa.Column("product_url", sa.Text(), nullable=True),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("price", sa.Numeric(precision=18, scale=4), nullable=True),
        sa.Column("currency", sa.String(length=3), nullable=True),
        sa.Column("availability", sa.String(length=16), nullable=True),
        sa.Column("rating", sa.Numeric(precision=6, scale=2), nullable=True),
        sa.Column("review_count", sa.Integer(), nullable=True),
        sa.Column("brand", sa.Text(), nullable=True),
        sa.Column("category", sa.Text(), nullable=True),
        sa.Column("sku", sa.Text(), nullable=True),
        sa.Column("gtin", sa.String(length=14), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("parser", sa.String(length=100), nullable=False),
        sa.Column("errors", sa.Text(), nullable=True),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["crawl_id"],
            ["crawls.id"],
            name=op.f("fk_products_crawl_id_crawls"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_products")),
        sa.UniqueConstraint(
            "crawl_id", "url_hash", "position", name=op.f("uq_products_crawl_id_url_hash_position")
        ),
    )
    op.create_table(
        "images",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column(
            "product_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("alt", sa.Text(), nullable=True),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["product_id"],
            ["products.id"],
            name=op.f("fk_images_product_id_products"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_images")),
        sa.UniqueConstraint("product_id", "position", name=op.f("uq_images_product_id_position")),
    )
    with op.batch_alter_table("crawled_pages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("archive_path", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("crawled_pages", schema=None) as batch_op:
        batch_op.drop_column("archive_path")

    op.drop_table("images")
    op.drop_table("products")
    with op.batch_alter_table("error_logs", schema=None) as batch_op:
        batch_op.drop_index("ix_error_logs_crawl")
        batch_op.drop_index("ix_error_logs_category")

    op.drop_table("error_logs")
