"""The data lifecycle: retention, compaction, backup and restore, replay.

Retention, compaction, replay and the PostgreSQL backups speak SQL, so they live in the store
(``store/lifecycle/``: ``retention``, ``compaction``, ``replay``, ``unarchive``, ``pgdump``,
``pgrestore``, ``pgtools``); callers holding a ``SqlStore`` call its methods
(``store.apply_retention``, ``store.replay``). Here: the SQLite file backups (``backup``), the
``--since`` parser (``since``) and the storage report (``storage``). Every entry point is
synchronous: run them from the CLI directly, or in a thread from the service. This module
imports nothing: import each name from its module.
"""
