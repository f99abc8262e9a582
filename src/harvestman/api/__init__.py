"""The crawl service's HTTP API (FastAPI): routers, auth, rate limits, SSE, metrics.

::

    app = create_app(settings, sql_store=store, job_store=jobs, scheduler=scheduler)

``create_app`` is in ``app``, ``Principal``, ``Role`` and the tokens in ``auth``, ``ApiSettings``
in ``settings``. This module imports nothing: FastAPI and the jobs package cost ~0.5 s to
import, which every ``harvestman`` command would otherwise pay just because ``serve`` exists.
"""
