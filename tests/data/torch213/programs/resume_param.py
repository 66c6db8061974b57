"""A graph break in a function whose parameter is used after it: f(x) (first line 13) prints at line 15, so Dynamo
compiles f up to the break (frame 0) and the rest of it (torch_dynamo_resume_in_f_at_15, frame 1), which is passed
x, f's own parameter, as it is. Called with 4, 6 and 8 rows (line 24): both frames recompile on x's size. With
RESUME_VARIANT=marked, torch._dynamo.mark_dynamic(x, 0) before each call (line 23): each frame compiles once, the
mark reaching the resume function through the same tensor. Inductor (with backend="eager" the marked run fails:
the resume function adds x, dynamic, to y, a local of static size: ConstraintViolationError).
"""
import os

import torch


def f(x):
    y = x.sin()
    print("break")
    return x.cos() + y


cf = torch.compile(f)
for n in (4, 6, 8):
    x = torch.randn(n)
    if os.environ.get("RESUME_VARIANT") == "marked":
        torch._dynamo.mark_dynamic(x, 0)
    cf(x)
