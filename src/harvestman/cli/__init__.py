"""The ``harvestman`` command: crawl, export, stats, db, serve, ...

Every command imports what it runs on (SQLAlchemy, aiohttp, pydantic, ...) inside its body:
importing them here cost each call, `--help` included, ~0.6 s before its first line of work.
Typer reads the parameter annotations at start-up, so those stay on cheap types (Path, str).

``app.py`` registers every command and sub-app (``--help`` lists the commands in that order,
then the groups in theirs) and holds ``main``, the console script. This module imports nothing.

===============  ==================================================================
module           holds
===============  ==================================================================
app.py           the Typer app, every command registered on it, ``main``
options.py       the shared options (``--db``, ``--database-url``, ``--config``, ...)
stores.py        ``open_store``/``open_crawl``: settings, the store, always disposed
exits.py         the error printer and the exit statuses
reports.py       a lifecycle command's report as a table (or JSON with --json)
runtime.py       logging, the allocator, the event loop (uvloop when installed)
crawl.py         crawl, worker, seed, status
data.py          export, stats, errors, dead-letter, search
products.py      products (the product query, as GET /api/products)
lifecycle.py     maintenance, backup, restore, restore-archive, replay, storage
db.py            db upgrade / downgrade / current
service.py       admin (serve and token come from ``harvestman.api.commands``)
keys.py          admin new-key / rotate-key / proxies: the proxies' encrypted credentials
===============  ==================================================================
"""
