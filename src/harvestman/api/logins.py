"""Sign-in attempts, limited per user name and per client, so passwords cannot be guessed
faster than ``limit`` tries per ``window`` seconds on either.

The attempt is counted before anything is awaited or checked (``reserve``: one store
transaction, ``store.signins``), and given back when the password was right (``release``).
The count lived in each process's memory and was read before the argon2 check and added to
after it: concurrent guesses all passed the read (9 from each of 8 addresses: 72 checked
against a limit of 5), and each ``serve`` instance counted its own. In the store, every
instance sharing it counts together, and concurrent attempts are admitted one at a time.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harvestman.store import ServiceStore


class SignInLimit:
    def __init__(
        self,
        store: ServiceStore,
        limit: int,
        window: float,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.limit = limit
        self.window = window
        self.clock = clock

    async def reserve(self, keys: Sequence[str]) -> float | None:
        """Count an attempt against every key; None when it may go on, else the seconds until
        it may (nothing counted)."""
        reserve = functools.partial(
            self.store.accounts.reserve_sign_in,
            limit=self.limit,
            window=self.window,
            now=self.clock(),
        )
        return await self.store.in_thread(reserve, list(keys))

    async def release(self, keys: Sequence[str]) -> None:
        """The attempt succeeded: it no longer counts."""
        await self.store.in_thread(self.store.accounts.release_sign_in, list(keys))
