"""The names of Dynamo's resume functions, the code after a graph break (torch_dynamo_resume_in_f_at_22), as every part
of compilescope reads them (resume_of) and shows them (function_label, function_title, resume_title).
"""

from __future__ import annotations

from ...lazy_regex import lazy_compile

# The name Dynamo gives the code after a graph break (torch/_dynamo/resume_execution.py, since torch 2.1):
# torch_dynamo_resume_in_<co_name>_at_<line>. The co_name is any function's, <lambda> and <genexpr> too; the line is
# the last `_at_<digits>` (a function may be named f_at_3). Bounded: the name comes from an untrusted log. (Older
# torch's `__resume_at_<offset>_<n>` is the global a compiled frame calls the resume function by, not its name.)
_RESUME_NAME = lazy_compile(r"torch_dynamo_resume_in_(.{1,1000}?)_at_(\d{1,9})")


def resume_of(code_name: str | None) -> tuple[str, int] | None:
    """(f, 22) for Dynamo's resume function torch_dynamo_resume_in_f_at_22: the rest of f after its graph break at
    line 22; None for any other code. Every part of compilescope reads a resume function's name through this."""
    m = _RESUME_NAME.fullmatch(code_name or "")
    return (m[1], int(m[2])) if m else None


def function_label(code_name: str | None) -> str:
    """A compiled function's name as the report shows it: Dynamo's resume function torch_dynamo_resume_in_f_at_22 is
    "f (after its graph break at line 22)", any other its own name ("" for none)."""
    resumed = resume_of(code_name)
    return f"{resumed[0]} (after its graph break at line {resumed[1]})" if resumed else code_name or ""


def function_title(code_name: str | None) -> str | None:
    """What stands behind a function_label that is not the function's own name: "Dynamo's resume function
    torch_dynamo_resume_in_f_at_22" (a page's title, where the label is shown); None for any other function."""
    return f"Dynamo's resume function {code_name}" if resume_of(code_name) else None


def resume_title(code_name: str | None) -> str | None:
    """What a resume function is, where its own name is shown (a stack frame): "Dynamo's resume function: the rest of
    f after its graph break at line 22"; None for any other function."""
    resumed = resume_of(code_name)
    return f"Dynamo's resume function: the rest of {resumed[0]} after its graph break at line {resumed[1]}" if resumed else None
