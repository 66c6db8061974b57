"""Everyday Python inside a compiled function: what Dynamo traces, breaks on, guards on, or bakes in.

`step` (backend eager) is called four times, with configs (1.0, True), (2.0, True), (2.0, False), (2.0, False).
It uses a generator helper, try/except around an op, a @dataclass config, a NamedTuple input, functools.partial,
a closure over a mutable list (`counter`), log.info, warnings.warn, random.random() and time.perf_counter().
`timed` wraps its op in a user-defined contextmanager timer (`with timer(times):`) whose time.perf_counter()
breaks inside the `with`: Dynamo gives the whole of `timed` up and runs it eagerly.
With PYFEAT_VARIANT=fixed the timer, the random draw, the closure, logging and warnings move out of the compiled
function (`step_fixed`) and the random value is a tensor argument.
"""
import contextlib
import dataclasses
import functools
import logging
import os
import random
import time
import warnings
from typing import NamedTuple

import torch

FIXED = os.environ.get("PYFEAT_VARIANT") == "fixed"
log = logging.getLogger(__name__)
logging.basicConfig(level=logging.INFO)


@dataclasses.dataclass
class Config:
    scale: float
    use_bias: bool


class Batch(NamedTuple):
    x: torch.Tensor
    bias: torch.Tensor


@contextlib.contextmanager
def timer(times):
    start = time.perf_counter()
    yield
    times.append(time.perf_counter() - start)


def squares(t, n):
    for i in range(n):
        yield t * i


def shift(t, amount):
    return t + amount


def make_counter():
    seen = []

    def count(t):
        seen.append(t.shape[0])
        return t * len(seen)

    return count


counter = make_counter()
times = []


@torch.compile(backend="eager")
def step(batch: Batch, cfg: Config):
    y = batch.x * cfg.scale
    y = y + sum(squares(y, 3))
    try:
        y = y / batch.bias
    except ZeroDivisionError:
        y = y
    add_two = functools.partial(shift, amount=2.0)
    y = add_two(y)
    if cfg.use_bias:
        y = y + batch.bias
    y = counter(y)
    log.info("step done")
    warnings.warn("step is experimental")
    noise = random.random()
    stamp = time.perf_counter()
    return y * noise + stamp * 0


@torch.compile(backend="eager")
def timed(x):
    with timer(times):
        y = x.sin()
    return y + 1


@torch.compile(backend="eager")
def step_fixed(batch: Batch, cfg: Config, noise: torch.Tensor):
    y = batch.x * cfg.scale
    y = y + sum(squares(y, 3))
    y = y / batch.bias
    y = functools.partial(shift, amount=2.0)(y)
    if cfg.use_bias:
        y = y + batch.bias
    return y * noise


def main():
    torch.manual_seed(0)
    batch = Batch(torch.randn(4), torch.ones(4) * 2)
    for scale, use_bias in [(1.0, True), (2.0, True), (2.0, False), (2.0, False)]:
        cfg = Config(scale, use_bias)
        if FIXED:
            noise = torch.tensor(random.random())
            start = time.perf_counter()
            out = step_fixed(batch, cfg, noise)
            times.append(time.perf_counter() - start)
            log.info("step done")
        else:
            out = step(batch, cfg)
            out = timed(out)
        print(out.sum().item())


if __name__ == "__main__":
    main()
