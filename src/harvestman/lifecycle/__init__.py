"""The data lifecycle: retention, compaction, backup and restore, replay.

Retention, compaction, replay and the backups speak SQL, so they live in the store
(``store/lifecycle/``: ``retention``, ``compaction``, ``replay``, ``unarchive``,
``sqlitebackup``, ``pgdump``, ``pgrestore``, ``pgtools``); callers holding a store go through
its maintenance door (``store.maintenance.apply_retention``, ``store.maintenance.replay``).
Here: the ``--since`` parser (``since``) and the storage report (``storage``). Every entry point
is synchronous: run them from the CLI directly, or in a thread from the service. This module
imports nothing: import each name from its module.
"""
