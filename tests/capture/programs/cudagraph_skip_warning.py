"""Inductor's own CUDA graph skip warning, without a GPU: the function torch calls when it skips a graph at its first
run (torch/_inductor/cudagraph_utils.py), called as it would be, outside any compile."""
import torch
from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter

f = torch.compile(lambda x: x.sin() + 1, backend="eager")
f(torch.randn(3))
log_cudagraph_skip_and_bump_counter(
    "skipping cudagraphs due to mutated inputs (1 instances). Found from : \n"
    f'   File "{__file__}", line 7, in <module>\n    f(torch.randn(3))\n')
print("warned")
