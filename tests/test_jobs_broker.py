"""Job executions over RabbitMQ: ``serve`` publishes them, ``harvestman worker``s run them.

Everything is real: PostgreSQL, Redis and RabbitMQ on 127.0.0.1, ``serve`` and the workers as
subprocesses (``support.fleet``), a farm of websites on 127.0.0.1 that logs every request
(``hostfarm``), and the fault: a worker SIGKILLed in the middle of an execution.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

import test_distributed as distributed
from conftest import require_service
from hostfarm import HostFarm
from support.fleet import Fleet, fleet, fleet_env

HOSTS = 8
PAGES = 5
DELAY = 0.25

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def broker() -> None:
    require_service("RabbitMQ", "127.0.0.1", 5672)


async def add_jobs(running: Fleet, farm: HostFarm) -> dict[int, int]:
    """One source and job per host of ``farm``: job id -> the host's port."""
    jobs = {}
    for port, root in zip(farm.ports, farm.roots(), strict=True):
        jobs[await running.add_job(f"site-{port}", root, crawl_delay=DELAY)] = port
    return jobs


def holder_pid(job: dict[str, object]) -> int | None:
    """The pid in the job's lock holder (``host:pid:suffix``); None while it is queued."""
    holder = job.get("locked_by")
    if not isinstance(holder, str) or holder.startswith(("queued:", "publishing:")):
        return None
    return int(holder.split(":")[-2])


async def running_mid_way(
    running: Fleet, jobs: dict[int, int], farm: HostFarm
) -> tuple[int, asyncio.subprocess.Process]:
    """A job a worker runs that has fetched some of its host's pages and not all."""
    workers = {worker.pid: worker for worker in running.workers}
    while True:
        for job_id, port in jobs.items():
            job = await running.call("GET", f"/api/v1/jobs/{job_id}")
            fetched = sum(farm.hits[page] for page in farm.expected_pages() if page[0] == port)
            if holder_pid(job) in workers and 2 <= fetched < PAGES:
                return job_id, workers[holder_pid(job)]  # type: ignore[index]
        await asyncio.sleep(0.05)


async def test_executions_run_on_workers_once_each_through_a_killed_worker(
    broker: None, pg_schema_url: str, redis_url: str, tmp_path: Path
) -> None:
    in_flight: set[tuple[int, str]] = set()
    env = fleet_env(pg_schema_url, redis_url)
    async with HostFarm(HOSTS, pages=PAGES, crawl_delay=DELAY) as farm:
        async with fleet(env, tmp_path, workers=2) as running:
            jobs = await add_jobs(running, farm)
            for job_id in jobs:
                await running.call("POST", f"/api/v2/jobs/{job_id}/force-run")

            killed_job, victim = await running_mid_way(running, jobs, farm)
            victim.send_signal(signal.SIGSTOP)  # frozen: what it holds can be read exactly
            await asyncio.sleep(0.2)  # requests already sent reach the farm
            held = distributed.leased_by_pid(pg_schema_url, victim.pid)
            in_flight.update(page for page in held if farm.hits[page])
            victim.send_signal(signal.SIGKILL)

            runs = await running.wait_final(list(jobs))
            logs = {
                job_id: await running.log_lines(job_id, executions[0]["id"])
                for job_id, executions in runs.items()
            }
            fleet_logs = running.logs()

        # One execution per force-run, each completed.
        assert {job_id: [r["status"] for r in rs] for job_id, rs in runs.items()} == {
            job_id: ["completed"] for job_id in jobs
        }, fleet_logs
        # What the killed worker ran (it runs many at once) was taken over once each, by
        # the other worker; nothing else changed hands. The stored lock history says who.
        holders = {job_id: [holder_pid({"locked_by": h}) for h in rs[0]["metadata"]["holders"]]
                   for job_id, rs in runs.items()}  # fmt: skip
        survivor = next(w.pid for w in running.workers if w is not victim)
        assert holders[killed_job] == [victim.pid, survivor]
        assert all(
            hs in ([survivor], [victim.pid], [victim.pid, survivor]) for hs in holders.values()
        ), holders
        takeovers = {
            job_id: sum("taken over from" in line for line in logs[job_id]) for job_id in jobs
        }
        assert takeovers == {job_id: int(len(holders[job_id]) == 2) for job_id in jobs}, fleet_logs
        started = {
            job_id: sum(" started (attempt 0)" in line for line in logs[job_id]) for job_id in jobs
        }
        assert all(started[job_id] == 1 for job_id in jobs if len(holders[job_id]) == 1), started
        # No page lost, none fetched twice but those the killed worker had in flight.
        states = distributed.crawled(pg_schema_url)
        assert states.get("completed") == farm.expected_pages(), fleet_logs
        assert states.get("blocked") == farm.denied()
        again = {page for page in farm.expected_pages() if farm.hits[page] > 1}
        assert again <= in_flight, sorted(again - in_flight)
        assert all(farm.hits[page] <= 2 for page in farm.expected_pages())
        # No host was hit faster than its delay, across the takeover too.
        gaps = [gap for _, gap in farm.spacing()]
        assert min(gaps) >= DELAY - 0.05, sorted(gaps)[:5]


async def test_a_cancel_stops_the_execution_on_the_worker(
    broker: None, pg_schema_url: str, redis_url: str, tmp_path: Path
) -> None:
    # 202 requests 0.25 s apart: 50 s of work, stopped after the third. The margin is for a busy
    # machine, where the cancel took more than the ten seconds a 40-page host gave it.
    pages = 200
    env = fleet_env(pg_schema_url, redis_url)
    async with (
        HostFarm(1, pages=pages, crawl_delay=DELAY) as farm,
        fleet(env, tmp_path, workers=1) as running,
    ):
        (job_id,) = await add_jobs(running, farm)
        await running.call("POST", f"/api/v2/jobs/{job_id}/force-run")
        worker = running.workers[0]
        while True:
            job = await running.call("GET", f"/api/v1/jobs/{job_id}")
            if holder_pid(job) == worker.pid and len(farm.log) >= 3:
                break
            await asyncio.sleep(0.05)

        cancelled = await running.call("POST", f"/api/v1/jobs/{job_id}/cancel")
        runs = await running.wait_final([job_id])
        job = await running.call("GET", f"/api/v1/jobs/{job_id}")
        alive = worker.returncode is None
        fleet_logs = running.logs()

    assert cancelled["status"] == "cancelled"
    assert [r["status"] for r in runs[job_id]] == ["cancelled"], fleet_logs
    assert (job["status"], job["locked_by"]) == ("cancelled", None)
    assert len(farm.log) < pages + 2  # it stopped before the host's last page
    assert alive  # the worker goes on consuming


async def test_a_stopped_worker_hands_its_execution_to_another(
    broker: None, pg_schema_url: str, redis_url: str, tmp_path: Path
) -> None:
    pages = 12
    env = fleet_env(pg_schema_url, redis_url)
    async with (
        HostFarm(1, pages=pages, crawl_delay=DELAY) as farm,
        fleet(env, tmp_path, workers=2) as running,
    ):
        (job_id,) = await add_jobs(running, farm)
        await running.call("POST", f"/api/v2/jobs/{job_id}/force-run")
        workers = {worker.pid: worker for worker in running.workers}
        while True:
            job = await running.call("GET", f"/api/v1/jobs/{job_id}")
            if holder_pid(job) in workers and len(farm.log) >= 4:
                break
            await asyncio.sleep(0.05)
        stopped = workers[holder_pid(job)]  # type: ignore[index]
        stopped.send_signal(signal.SIGTERM)
        code = await stopped.wait()
        runs = await running.wait_final([job_id])
        [execution] = runs[job_id]
        lines = await running.log_lines(job_id, execution["id"])
        fleet_logs = running.logs()

    survivor = next(pid for pid in workers if pid != stopped.pid)
    assert code == 0, fleet_logs
    assert execution["status"] == "completed", fleet_logs
    holders = [holder_pid({"locked_by": h}) for h in execution["metadata"]["holders"]]
    assert holders == [stopped.pid, survivor]
    assert sum("handed back" in line for line in lines) == 1, lines
    # Its counts are summed over both holders: every page fetched counts, not the last half.
    assert execution["items_crawled"] >= len(farm.expected_pages()), execution
    assert not any("Interrupted" in line for line in lines)
    # Every page once, but the one request the stopped worker may have had in flight.
    assert all(farm.hits[page] >= 1 for page in farm.expected_pages())
    assert sum(farm.hits[page] - 1 for page in farm.expected_pages()) <= 1
    assert min(gap for _, gap in farm.spacing()) >= DELAY - 0.05


async def test_a_worker_runs_many_executions_at_once_each_host_at_its_delay(
    broker: None, pg_schema_url: str, redis_url: str, tmp_path: Path
) -> None:
    # Three hosts and four sources (two on the first host); one worker with the defaults.
    pages = 6
    env = fleet_env(pg_schema_url, redis_url)
    async with (
        HostFarm(3, pages=pages, crawl_delay=DELAY) as farm,
        fleet(env, tmp_path, workers=1) as running,
    ):
        jobs = await add_jobs(running, farm)
        jobs[await running.add_job("twin", farm.roots()[0], crawl_delay=DELAY)] = farm.ports[0]
        for job_id in jobs:
            await running.call("POST", f"/api/v2/jobs/{job_id}/force-run")
        runs = await running.wait_final(list(jobs))
        fleet_logs = running.logs()

    spans = sorted((r[0]["started_at"], r[0]["completed_at"]) for r in runs.values())
    assert {r[0]["status"] for r in runs.values()} == {"completed"}, fleet_logs
    # All four at once: each started before the first one ended.
    assert all(start < spans[0][1] for start, _ in spans), spans
    # The two sources on one host shared its gate: no two requests closer than its delay.
    assert min(gap for _, gap in farm.spacing()) >= DELAY - 0.05
