"""The crawl service's jobs domain: sources, jobs, executions, the scheduler.

::

    async with SqlStore(url) as crawl_store, crawl_store.jobs() as store:
        source = await store.sources.create(SourceSpec(name="news", start_urls=[...]))
        job = await store.jobs.create(JobSpec(source_id=source.id, url=..., interval_minutes=30))
        scheduler = Scheduler(store, CrawlRunner(settings, crawl_store))
        await scheduler.run()  # until scheduler.stop()

The domain's plain parts (``records``, ``errors``, ``states``, ``buckets``, ``lifecycle``,
``adaptive``) import nothing above themselves, so the store's jobs queries
(``harvestman.store.jobs``: ``JobStore``, its tables, ``LeaderLease``) use them; the service's
parts (``runner``, ``scheduler``, ``consumer``, ``dispatch``) run on the store and the crawler.
This module imports nothing: import each name from its module.
"""
