"""Where the per-rank map of a multi-rank report runs: this machine's process pool, or a dask.distributed cluster.

Both take the same module-level function and the same jobs, and yield the function's small, picklable
results as they complete; the caller merges them. A job whose worker dies (killed for memory, a crash in
native code) is run once more; if its worker dies again, `failed(job, why)` stands in for its result, so
one bad rank is one row of the report, never a failed job.
"""

from __future__ import annotations

import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable, Iterator, Protocol, TypeVar

from ..errors import CompilescopeError
from .workers import start_method

Job = TypeVar("Job")

EXECUTORS = ("local", "dask")
WORKER_DIED = "its worker process died twice while reading it (out of memory, or a crash)"


class RankExecutor(Protocol):
    name: str
    workers: int

    def map_ranks(self, fn: Callable[[Job], Any], jobs: Iterable[Job], size: Callable[[Job], int],
                  failed: Callable[[Job, str], Any]) -> Iterator[Any]:
        """fn(job) for every job, biggest first; results in completion order."""
        ...


def make_executor(name: str, workers: int, scheduler: str | None = None) -> RankExecutor:
    if name == "local":  # (a --scheduler with it is refused with the other flags: report_args.check_report_arguments)
        return LocalExecutor(workers)
    if name == "dask":
        return DaskExecutor(scheduler, workers)
    raise CompilescopeError(f"unknown executor {name!r} (choose from {', '.join(EXECUTORS)})")


class LocalExecutor:
    """A process pool on this machine (one process when workers is 1)."""

    name = "local"

    def __init__(self, workers: int):
        self.workers = max(1, workers)

    def map_ranks(self, fn, jobs, size, failed) -> Iterator[Any]:
        ordered = sorted(jobs, key=lambda j: -size(j))
        if self.workers == 1 or len(ordered) <= 1:
            for job in ordered:
                yield fn(job)
            return
        context = multiprocessing.get_context(start_method())
        lost = []
        with ProcessPoolExecutor(max_workers=min(self.workers, len(ordered)), mp_context=context) as pool:
            futures = {pool.submit(fn, job): job for job in ordered}
            for future in as_completed(futures):
                try:
                    yield future.result()
                except BrokenProcessPool:
                    # A dead worker breaks the whole pool: every unfinished job lands here, the culprit among them.
                    lost.append(futures[future])
        yield from self._retry_isolated(fn, lost, failed)

    def _retry_isolated(self, fn, jobs, failed) -> Iterator[Any]:
        """Each lost job once more, in a process of its own, so the one that kills its worker takes no other with it."""
        if not jobs:
            return
        # Threads run here now: fork is unsafe, a fresh interpreter is not.
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")

        def alone(job):
            with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
                return pool.submit(fn, job).result()

        with ThreadPoolExecutor(max_workers=min(self.workers, len(jobs))) as threads:
            futures = {threads.submit(alone, job): job for job in jobs}
            for future in as_completed(futures):
                try:
                    yield future.result()
                except BrokenProcessPool:
                    yield failed(futures[future], WORKER_DIED)


class DaskExecutor:
    """Ranks as tasks of a dask.distributed cluster: the one at `scheduler`, or a LocalCluster of `workers` processes."""

    name = "dask"

    def __init__(self, scheduler: str | None, workers: int):
        self.scheduler = scheduler
        self.workers = max(1, workers)
        try:  # here, so that a missing extra is said before any output directory is made
            import distributed  # noqa: F401
        except ImportError:
            raise CompilescopeError("--executor dask needs dask.distributed: pip install 'compilescope[dask]'") from None

    def map_ranks(self, fn, jobs, size, failed) -> Iterator[Any]:
        import dask
        from distributed import Client, LocalCluster, as_completed as completed

        jobs = list(jobs)
        # allowed-failures: the scheduler gives a task whose worker died to another worker, once; at the second
        # death it gives up (KilledWorker) and the rank becomes a row saying so. worker-saturation 1.0: a worker
        # holds only the task it runs, so a dying worker takes no queued bystander with it. Both are read when a
        # scheduler starts: they hold for our LocalCluster; a running cluster keeps its own settings.
        with dask.config.set({"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.worker-saturation": 1.0}):
            cluster = None
            try:
                if self.scheduler is None:
                    # The scheduler's HTTP server (dashboard, health) on a free loopback port, not on 8787 for all.
                    cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                           dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
                try:
                    client = Client(cluster if cluster is not None else self.scheduler, timeout="15s")
                except (OSError, ValueError) as exc:  # refused, timed out, or not an address
                    raise CompilescopeError(f"cannot reach the dask scheduler at {self.scheduler}: {exc}") from None
                with client:
                    # priority: biggest rank first, so one big log does not start last and keep the others waiting.
                    futures = {client.submit(fn, job, pure=False, retries=1, priority=size(job)): job for job in jobs}
                    for future in completed(futures):
                        job = futures.pop(future)
                        try:
                            # Waits when the result was lost with its worker and is being computed again.
                            result = future.result()
                        except Exception as exc:  # noqa: BLE001 - KilledWorker, or what the function raised twice
                            result = failed(job, _dask_failure(exc))
                        future.release()  # the scheduler and the workers forget it: memory stays per-rank
                        yield result
            finally:
                if cluster is not None:
                    cluster.close()


def _dask_failure(exc: BaseException) -> str:
    if type(exc).__name__ == "KilledWorker":
        return WORKER_DIED
    return f"its worker failed: {type(exc).__name__}: {exc}"
