"""Run the demo's example programs (demo/programs/) in this process, each under capture().

Needs torch. Each example starts from a reset Dynamo (so its compile ids start at
[0/0]) and an empty Inductor cache (so every graph and kernel is in its trace).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import time
import warnings
from dataclasses import dataclass
from typing import Iterator

from ..capture import capture


@dataclass
class LiveRun:
    name: str
    log: str | None  # the trace it wrote (None: it compiled nothing)
    error: str | None  # what the program raised, in one line (its report is still written)
    seconds: float


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The examples' prints and torch's warnings (graph breaks, the compile error) are in the reports; keep the terminal short."""
    torch_log = logging.getLogger("torch")
    level = torch_log.level
    torch_log.setLevel(logging.ERROR)  # the trace logger sets its own level: unaffected
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        torch_log.setLevel(level)


def run_example(name: str, trace_dir: str) -> LiveRun:
    import torch._dynamo

    module = importlib.import_module(f"{__package__}.programs.{name}")
    torch._dynamo.reset()
    start = time.monotonic()
    error = None
    with _quiet(), capture(trace_dir=trace_dir, fresh_cache=True) as cap:
        try:
            module.main()
        except Exception as exc:  # noqa: BLE001 - a failing example still gets its report
            first = str(exc).strip().splitlines()
            error = f"{type(exc).__name__}: {first[0] if first else ''}".rstrip(": ")
    torch._dynamo.reset()
    return LiveRun(name, cap.log, error, time.monotonic() - start)
