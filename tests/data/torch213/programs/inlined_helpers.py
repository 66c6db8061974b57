"""Scenario: a compiled function whose lines call helpers that Dynamo inlines, under inductor with provenance on.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/inlined_helpers.py
(make_traces.py additionally sets INDUCTOR_PROVENANCE=1; the program sets the knob itself too.)

- `f` line 27 calls `scale_then_shift`, which multiplies and calls `shift` (line 22), which adds (line 18): no op of
  the graph is on line 27 itself, but the kernels' stack traces run through it;
- `f` line 28 has its own op (`.sin()`);
- `f` line 26 computes a Python number: no graph node, no kernel.
"""
import torch

torch._inductor.config.trace.provenance_tracking_level = 1


def shift(t):
    # A helper two calls deep: its op sits on this line, reached from f's line 27 through line 22.
    return t + 1


def scale_then_shift(t, k):
    return shift(t * k)


def f(x):
    k = 2 * 3
    y = scale_then_shift(x, k)
    return y.sin()


def main():
    cf = torch.compile(f)
    x = torch.arange(4.0)
    torch.testing.assert_close(cf(x), f(x))


if __name__ == "__main__":
    main()
