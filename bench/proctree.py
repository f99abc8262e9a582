"""What a crawler's whole process tree uses, sampled from /proc while it runs (Linux).

``os.wait4`` gives the crawler's CPU including the children it waited for, but its
``ru_maxrss`` is the largest single process's peak, not the tree's: a crawler with page
processes would look smaller than it is. :class:`TreeSampler` sums the resident memory of the
crawler and all its descendants every ``interval`` seconds and keeps the peak, and keeps the
last CPU seen of each descendant and of each of the crawler's threads (by thread name), so a
report can say where the CPU went. A peak between two samples can be missed; the sum counts
pages shared between processes (the interpreter's libraries) once per process, an overstatement.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

_PAGE = os.sysconf("SC_PAGE_SIZE")
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class TreeUsage:
    """The peak of the tree's summed RSS, and CPU seconds by thread and by descendant."""

    peak_rss_mb: float = 0.0
    max_processes: int = 0
    threads: dict[str, float] = field(default_factory=dict)  # the crawler's, by name
    descendants: dict[int, tuple[str, float]] = field(default_factory=dict)  # pid: (name, CPU)

    @property
    def descendants_cpu(self) -> float:
        return sum(cpu for _, cpu in self.descendants.values())


def _stat(path: Path) -> tuple[str, int, float] | None:
    """(name, parent pid, user + system CPU seconds) from a /proc stat file."""
    try:
        text = path.read_text()
    except OSError:
        return None
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    return name, int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


class TreeSampler:
    """Samples ``pid``'s process tree in a daemon thread until :meth:`stop`."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.pid = pid
        self.interval = interval
        self.usage = TreeUsage()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="tree-sampler")

    def start(self) -> TreeSampler:
        self._thread.start()
        return self

    def stop(self) -> TreeUsage:
        self._stop.set()
        self._thread.join()
        return self.usage

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        usage = self.usage
        tree = _tree(self.pid)
        if not tree:
            return  # gone (or not yet there)
        usage.peak_rss_mb = max(usage.peak_rss_mb, sum(_rss(pid) for pid in tree) / 2**20)
        usage.max_processes = max(usage.max_processes, len(tree))
        for pid in tree[1:]:
            found = _stat(Path(f"/proc/{pid}/stat"))
            if found is not None:
                usage.descendants[pid] = (found[0], found[2])
        try:
            tasks = list(Path(f"/proc/{self.pid}/task").iterdir())
        except OSError:
            return
        seen: dict[str, float] = {}
        for task in tasks:
            found = _stat(task / "stat")
            if found is not None:
                name = "main" if task.name == str(self.pid) else found[0]
                seen[name] = seen.get(name, 0.0) + found[2]
        for name, cpu in seen.items():  # threads come and go: keep each name's largest sum
            usage.threads[name] = max(usage.threads.get(name, 0.0), cpu)


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from each thread's ``children``), ``pid`` first; empty when
    ``pid`` is gone."""
    if not Path(f"/proc/{pid}").exists():
        return []
    tree, index = [pid], 0
    while index < len(tree):
        for task in Path(f"/proc/{tree[index]}/task").glob("*/children"):
            try:
                tree += [int(child) for child in task.read_text().split()]
            except (OSError, ValueError):
                continue
        index += 1
    return tree
