"""Scenario: a graph break inside a compiled lambda.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/lambda_break.py

Dynamo names the code after a break after the function it resumes, whatever its co_name:
here `torch_dynamo_resume_in_<lambda>_at_17` (torch/_dynamo/resume_execution.py), a name
that is no identifier. `torch._dynamo.graph_break()` breaks the graph at line 17; the
lambda's `x.sin() + 1` is then compiled as the resume function.
"""
import torch


def main():
    x = torch.ones(3)
    # graph break: torch._dynamo.graph_break(); the tuple's second item is what the lambda returns
    scaled = torch.compile(
        lambda t: (torch._dynamo.graph_break(), t.sin() + 1)[1], backend="eager")
    torch.testing.assert_close(scaled(x), x.sin() + 1)


if __name__ == "__main__":
    main()
