"""Executions as messages on RabbitMQ: one durable priority queue, one message per execution.

The message names the execution (job id, execution id); everything else — the job, its
source, the URL frontier, the lock — stays in the store, so a message is small, and a stale
message is harmless (``ExecutionHandover.take`` decides from the store what it still means).

- **Queue**: ``<broker_queue_prefix>.executions``, durable, ``x-max-priority`` 1: runs asked
  for by hand (force-run, retry) pass the scheduled ones; in each priority, first in first
  out. Messages are persistent and published with confirms: a publish that returns was
  written by the broker.
- **Consuming**: prefetch = the worker's execution slots (``broker_prefetch``), late ack (after
  the execution is final in the store): a worker that dies gives its unacked messages back
  (the connection drops), and another worker resumes them.
- aio-pika, not Celery: the worker is one asyncio process (the crawler), and aio-pika's
  consumer is a coroutine on that loop. Celery's worker owns the process (prefork or threads)
  and runs synchronous task functions; see docs/SCALING.md for the measurement.

Connection errors become ``BrokerUnavailable``. While a connection is lost, aio-pika and
aiormq say so on every reconnect attempt (three lines and a traceback every 5 s):
``ReconnectLog`` lets one line through when it is lost and says one when it is back.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvestman.jobs.errors import BrokerUnavailable

if TYPE_CHECKING:
    from aio_pika.abc import (
        AbstractChannel,
        AbstractIncomingMessage,
        AbstractQueue,
        AbstractRobustConnection,
    )

log = logging.getLogger(__name__)

PRIORITY_SCHEDULED = 0
PRIORITY_MANUAL = 1  # force-run, retry: someone is waiting for it
MAX_MESSAGE_BYTES = 1024  # a message is two ids; anything larger is not ours


@dataclass(slots=True, frozen=True)
class ExecutionMessage:
    """One execution to run.

    >>> ExecutionMessage.decode(ExecutionMessage(3, 17).encode())
    ExecutionMessage(job_id=3, execution_id=17)
    """

    job_id: int
    execution_id: int

    def encode(self) -> bytes:
        return json.dumps({"job_id": self.job_id, "execution_id": self.execution_id}).encode()

    @classmethod
    def decode(cls, body: bytes) -> ExecutionMessage:
        """The message in ``body``; ValueError for anything else."""
        if len(body) > MAX_MESSAGE_BYTES:
            raise ValueError(f"message of {len(body)} bytes")
        data = json.loads(body)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        job_id, execution_id = data.get("job_id"), data.get("execution_id")
        for value in (job_id, execution_id):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError("job_id and execution_id must be integers")
        assert isinstance(job_id, int) and isinstance(execution_id, int)
        return cls(job_id, execution_id)


class ReconnectLog(logging.Filter):
    """One line when a broker connection is lost, one when it is back, in place of the
    libraries' lines on every reconnect attempt. Installed on their connection loggers."""

    LOGGERS = ("aio_pika.robust_connection", "aio_pika.tools", "aiormq.connection")
    # What they say of a lost connection (the close callbacks fail with its error, too).
    NOISE = (
        "econnect",
        "error when creating transport",
        "connection close",
        "reader exited",
        "Callback %r error",
    )

    def __init__(self) -> None:
        super().__init__()
        self.down_since: float | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        if record.levelno < logging.INFO or not any(n in text for n in self.NOISE):
            return True
        if self.down_since is None:
            self.down_since = time.monotonic()
            try:
                said = record.getMessage()
            except Exception:  # a library's repr that fails (aio-pika's OneShotCallback)
                said = text
            log.warning("broker: connection lost, reconnecting: %s", said)
        return False

    def reconnected(self) -> None:
        if self.down_since is not None:
            log.warning("broker: reconnected after %.1f s", time.monotonic() - self.down_since)
            self.down_since = None

    def install(self) -> None:
        for name in self.LOGGERS:
            logger = logging.getLogger(name)
            if self not in logger.filters:
                logger.addFilter(self)


RECONNECT_LOG = ReconnectLog()


class Delivery:
    """A message handed to this consumer: ack it when its execution is final."""

    def __init__(self, message: ExecutionMessage, incoming: AbstractIncomingMessage) -> None:
        self.message = message
        self._incoming = incoming

    @property
    def redelivered(self) -> bool:
        return bool(self._incoming.redelivered)

    async def ack(self) -> None:
        await self._settle(self._incoming.ack())

    async def requeue(self) -> None:
        await self._settle(self._incoming.nack(requeue=True))

    async def _settle(self, step: Any) -> None:
        try:
            await step
        except Exception as exc:  # the channel closed: the broker redelivers the message
            log.warning("could not settle execution %d: %s", self.message.execution_id, exc)


class ExecutionQueue:
    """The executions queue on one RabbitMQ; ``async with`` connects and declares it."""

    def __init__(
        self, url: str, prefix: str, *, prefetch: int = 1, publish_timeout: float = 10.0
    ) -> None:
        self.url = url
        self.name = f"{prefix}.executions"
        self.prefetch = prefetch
        # A publish waits for the broker's confirm; a broker away (or reconnecting) must not
        # hold a poll or an API request longer than this.
        self.publish_timeout = publish_timeout
        self._connection: AbstractRobustConnection | None = None
        self._channel: AbstractChannel | None = None
        self._queue: AbstractQueue | None = None

    async def __aenter__(self) -> ExecutionQueue:
        import aio_pika

        RECONNECT_LOG.install()
        try:
            self._connection = await aio_pika.connect_robust(self.url)
            self._connection.reconnect_callbacks.add(lambda _: RECONNECT_LOG.reconnected())
            self._channel = await self._connection.channel(publisher_confirms=True)
            await self._channel.set_qos(prefetch_count=self.prefetch)
            self._queue = await self._channel.declare_queue(
                self.name, durable=True, arguments={"x-max-priority": PRIORITY_MANUAL}
            )
        except Exception as exc:
            await self.__aexit__()
            raise BrokerUnavailable(f"{type(exc).__name__}: {exc}") from exc
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._connection is not None:
            try:
                await self._connection.close()
            except Exception as exc:  # closing a broken connection: nothing left to do
                log.debug("closing the broker connection: %s", exc)
        self._connection = self._channel = self._queue = None

    async def publish(self, message: ExecutionMessage, priority: int = PRIORITY_SCHEDULED) -> None:
        """Publish ``message`` durably; returns once the broker confirmed it."""
        import aio_pika

        if self._channel is None:
            raise BrokerUnavailable("the executions queue is not open")
        try:
            await self._channel.default_exchange.publish(
                aio_pika.Message(
                    message.encode(),
                    content_type="application/json",
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                    priority=priority,
                ),
                routing_key=self.name,
                timeout=self.publish_timeout,
            )
        except Exception as exc:
            raise BrokerUnavailable(f"{type(exc).__name__}: {exc}") from exc

    async def depth(self) -> int:
        """Messages waiting in the queue (not those handed to consumers)."""
        if self._queue is None:
            raise BrokerUnavailable("the executions queue is not open")
        try:
            # Declared again (the same arguments: a no-op) for a fresh count; a robust
            # channel's declare_queue answers the queue it declared first, count and all.
            declared = await self._queue.declare()
        except Exception as exc:
            raise BrokerUnavailable(f"{type(exc).__name__}: {exc}") from exc
        return int(declared.message_count or 0)

    async def consume(self, on_delivery: Callable[[Delivery], Awaitable[None]]) -> str:
        """Hand each message to ``on_delivery``, at most ``prefetch`` unacked at a time, until
        ``cancel`` with the tag returned (a robust connection consumes again after a
        reconnect). A message that is not an execution is dropped (rejected, not requeued)."""
        if self._queue is None:
            raise BrokerUnavailable("the executions queue is not open")

        async def on_message(raw: AbstractIncomingMessage) -> None:
            try:
                message = ExecutionMessage.decode(raw.body)
            except ValueError as exc:
                log.error("dropped a message that is not an execution: %s", exc)
                await raw.reject(requeue=False)
                return
            await on_delivery(Delivery(message, raw))

        try:
            return str(await self._queue.consume(on_message))
        except Exception as exc:
            raise BrokerUnavailable(f"{type(exc).__name__}: {exc}") from exc

    async def cancel(self, tag: str) -> None:
        """Stop consuming: messages not yet handed over go back to the queue; those handed
        over stay with this consumer until settled (or its connection closes)."""
        if self._queue is None:
            return
        try:
            await self._queue.cancel(tag)
        except Exception as exc:  # the channel is gone: the broker cancelled it already
            log.debug("cancelling the consumer: %s", exc)
