"""A TCP gate in front of a real server (PostgreSQL): ``cut`` drops every connection through
it and refuses new ones, as a server that went away does; ``restore`` opens it again on the
same port. The outage is real to the client (its driver's own errors), and the server itself
stays up for everything else on this machine.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class TcpGate:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def restore(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(_pipe(source, sink))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        sink.transport.abort()


@contextlib.asynccontextmanager
async def tcp_gate(host: str, port: int) -> AsyncIterator[TcpGate]:
    gate = TcpGate(host, port)
    await gate.restore()
    try:
        yield gate
    finally:
        await gate.cut()
        for task in list(gate._tasks):
            task.cancel()
