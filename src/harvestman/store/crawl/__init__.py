"""The crawl's repositories: one mixin per concern, each over ``StoreConnection``.

``SqlStore`` (store/sql.py) combines them; callers hold it and call ``store.lease(...)``,
``store.record(...)`` and so on. Which caller needs which methods: store/interfaces.py.
"""
