"""Run independent jobs (one log each) in worker processes, largest first."""

from __future__ import annotations

import multiprocessing
import sys
import threading
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable, TypeVar

from ..cores import default_jobs
from ..log_job import file_size, peak_rss_mb

__all__ = ["default_jobs", "file_size", "peak_rss_mb", "run_jobs"]

Job = TypeVar("Job")



def run_jobs(work: Callable[[Job], Any], jobs: Iterable[Job], workers: int, size: Callable[[Job], int],
             on_done: Callable[[Any], None] | None = None) -> list[Any]:
    """work(job) for every job, `workers` at a time (1: in this process); results in completion order.

    Largest jobs first, so one big log does not start last and leave the other workers idle.
    `work` must be a module-level function and its result picklable.
    """
    ordered = sorted(jobs, key=lambda j: -size(j))
    results: list[Any] = []
    if workers <= 1 or len(ordered) <= 1:
        for job in ordered:
            results.append(work(job))
            if on_done:
                on_done(results[-1])
        return results
    context = multiprocessing.get_context(start_method())
    with ProcessPoolExecutor(max_workers=min(workers, len(ordered)), mp_context=context) as pool:
        futures: list[Future] = [pool.submit(work, job) for job in ordered]
        for future in as_completed(futures):
            results.append(future.result())
            if on_done:
                on_done(results[-1])
    return results


def start_method() -> str:
    """(Public: executors' local pool of rank workers starts the same way.) fork when it is safe (Linux, no other thread in this process): workers start at once with every module
    already imported. Otherwise forkserver/spawn, since forking a process with threads can deadlock."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"
