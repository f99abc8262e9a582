"""The data lifecycle's SQL: retention, stats roll-up, compaction and replay, in bounded batches.

Every entry point is synchronous and takes the store's engine; ``SqlStore`` exposes them as
methods (``LifecycleRepository``), and ``harvestman.lifecycle`` re-exports them beside the
SQLite file backups.
"""
