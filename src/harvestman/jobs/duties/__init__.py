"""The scheduler's periodic tasks (``PeriodicTask``): what ``jobs.wiring`` lists and
``Scheduler.run`` keeps going, one task each; the leader-only ones while this instance leads."""
