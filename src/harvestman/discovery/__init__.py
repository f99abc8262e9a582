"""Discovery: finding URLs beyond a page's links (sitemaps, feeds, archives, pagination)."""
