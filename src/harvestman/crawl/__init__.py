"""The crawl core: the crawler (:mod:`harvestman.crawl.crawler`), the pipeline each request runs
through (:mod:`harvestman.crawl.wiring` lists its gates and steps, in order), the frontier, the
fetcher and the page process.

Kept empty so that importing one module of the core (the page process imports only the analyzer)
does not load the rest.
"""
