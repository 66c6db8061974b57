"""Scenario family for `compilescope diff`: one program, one change at a time.

DIFF_VARIANT (environment) picks the change; the source lines are the same in
every variant, so frames match by (file, function, first line) across runs:

  base     the program as is (run twice: diff_base, diff_base_again -> no change)
  break    a graph break added inside f (torch._dynamo.graph_break())
  dynamic  torch._dynamo.mark_dynamic on the batch dimension: no recompile for
           the second batch size, one dynamic symbol instead
  config   an Inductor config flag flipped (fallback_random), as an upgrade
           that changes a default would
  fail     Inductor emits broken C++ for relu (a testing-only config flag) and
           Dynamo falls back to eager (suppress_errors): a compile that fails

f is called with batch 4 and then batch 6: without mark_dynamic the second
call recompiles (automatic dynamic shapes).
"""
import os

import torch

VARIANT = os.environ.get("DIFF_VARIANT", "base")
if VARIANT == "config":
    torch._inductor.config.fallback_random = True
if VARIANT == "fail":
    torch._dynamo.config.suppress_errors = True
    torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


def f(x, w):
    y = torch.sin(x) @ w
    if VARIANT == "break":
        torch._dynamo.graph_break()
    return torch.relu(y) + 1


def main():
    cf = torch.compile(f)
    w = torch.randn(8, 8)
    for batch in (4, 6):
        x = torch.randn(batch, 8)
        if VARIANT == "dynamic":
            torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(cf(x, w), f(x, w))


if __name__ == "__main__":
    main()
