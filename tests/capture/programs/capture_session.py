"""capture() called again and again in one long-lived process, as a notebook (IPython kernel) or a test session does
(tests/capture/test_session.py). Like IPython, an exception that escapes a cell is printed by the shell and never
reaches sys.excepthook; the session goes on.

1. a block compiles `first` and ends;
2. a block compiles `second`, and `train` raises out of it and out of the cell (its frame holds a large tensor);
3. after the blocks: a thread dies of an exception, and `third` is compiled;
4. a block that does nothing;
5. the user installs their own sys.excepthook (as rich.traceback.install() does), and a block ends the process with
   an uncaught RuntimeError, after a last block in the program's `finally:`.

It prints, as JSON lines, which hooks are installed after each step, whether the tensor was freed, and the files of
each trace directory.
Run: python capture_session.py BASE_DIR
"""
import gc
import json
import os
import sys
import threading
import traceback
import weakref

import torch

import compilescope

base = sys.argv[1]
original_hooks = (sys.excepthook, threading.excepthook)


def users_hook(exc_type, exc, tb):
    print(f"user's hook: {exc_type.__name__}: {exc}", file=sys.stderr, flush=True)


def hooks() -> dict:
    def name(hook, original):
        return "original" if hook is original else "user's" if hook is users_hook else "another"

    return {"sys": name(sys.excepthook, original_hooks[0]), "threading": name(threading.excepthook, original_hooks[1])}


def say(**facts) -> None:
    print(json.dumps(facts), flush=True)


def files() -> dict:
    return {d: sorted(os.listdir(os.path.join(base, d))) for d in sorted(os.listdir(base))}


def first(x):
    return x.sin() + 1


def second(x):
    return x.cos() * 2


def third(x):
    return x.tan() - 1


held = []


def train():
    activations = torch.ones(1000, 1000)
    held.append(weakref.ref(activations))
    torch.compile(second, backend="eager")(torch.ones(3))
    raise ValueError("loss diverged")


def lost():
    raise LookupError("lost in a thread")


say(pid=os.getpid())
with compilescope.capture(trace_dir=os.path.join(base, "run1")):
    torch.compile(first, backend="eager")(torch.ones(3))
say(step=1, hooks=hooks())

try:
    with compilescope.capture(trace_dir=os.path.join(base, "run2")):
        train()
except ValueError:
    traceback.print_exc()  # (the shell prints it)
gc.collect()
say(step=2, hooks=hooks(), activations_freed=held[0]() is None)

thread = threading.Thread(target=lost, name="loader")
thread.start()
thread.join()
torch.compile(third, backend="eager")(torch.ones(3))
say(step=3, hooks=hooks(), files=files())

with compilescope.capture(trace_dir=os.path.join(base, "run3")):
    pass
say(step=4, hooks=hooks())

sys.excepthook = users_hook
try:
    with compilescope.capture(trace_dir=os.path.join(base, "run4")):
        raise RuntimeError("out of memory at step 7")
finally:
    with compilescope.capture(trace_dir=os.path.join(base, "run5")):  # the program's clean-up, traced too
        pass
