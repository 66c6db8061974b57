"""A program that compiles `scale` (inductor, [0/0]) and then dies of an uncaught Python exception raised while torch
compiles `shift` with a backend that asserts, as torch.compile(DDP(model))'s DDPOptimizer did in a 2-rank job: torch
wraps it (BackendCompilerFailed, raised in torch/_dynamo), Python prints the traceback and exits with status 1, and
torch logs nothing after `shift`'s failed compile. Run under `compilescope run`, the excepthook compilescope chains
writes the exception to the trace directory and run appends it to the log (artifact compilescope_crash).
Run: compilescope run uncaught_exception.py
"""
import torch


def strict_backend(gm, example_inputs):
    assert len(example_inputs) == 2, f"expected 2 inputs, got {len(example_inputs)}"
    return gm.forward


@torch.compile
def scale(x):
    return x.sin() * 2


@torch.compile(backend=strict_backend)
def shift(x):
    return x.cos() + 1


def main():
    print("scale", float(scale(torch.randn(8)).sum()), flush=True)
    print("shift", float(shift(torch.randn(8)).sum()), flush=True)


main()
