"""The Celery side of ``jobs_broker_bench.py --transport``: a task that reports when it ran.

Started by the bench as ``celery -A celery_ping worker``; the broker and the Redis list come
from the environment (``PING_BROKER``, ``PING_REDIS``, ``PING_KEY``). Celery is not a
dependency of Harvestman: install it to run this part (``pip install celery``).
"""

from __future__ import annotations

import os
import time

import redis
from celery import Celery

app = Celery("celery_ping", broker=os.environ.get("PING_BROKER", "amqp://guest@127.0.0.1//"))
app.conf.task_acks_late = True
app.conf.worker_prefetch_multiplier = 1
_redis = redis.Redis.from_url(os.environ.get("PING_REDIS", "redis://127.0.0.1:6379/0"))


@app.task(name="ping")
def ping(sent: float) -> None:
    _redis.rpush(os.environ.get("PING_KEY", "celery-ping"), time.time() - sent)
