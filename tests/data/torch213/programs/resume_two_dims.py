"""resume_param's break with both of the parameter's dimensions changing: f(x) (first line 9) prints at line 11, so
Dynamo compiles the rest of f (torch_dynamo_resume_in_f_at_11) apart, passed f's own x. Called with shapes (2, 3),
(3, 3), (3, 4), (4, 5) (line 16): x's dimensions 0 and 1 both change, one tensor the advice names once. Backend eager.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    y = x * 2
    print("break")
    return (x + 1).sum()


for shape in ((2, 3), (3, 3), (3, 4), (4, 5)):
    f(torch.randn(*shape))
