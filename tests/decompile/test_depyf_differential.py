"""Against depyf 0.20.0 where it succeeds: the same function, arguments and outside names (after `ast`
normalisation), and the same behaviour when each decompiled function runs in place of Dynamo's code."""

from __future__ import annotations

import ast
import builtins

import pytest

from ..conftest import skip_or_fail

pytestmark = pytest.mark.torch


def _depyf():
    try:
        import depyf
    except ImportError:
        skip_or_fail("depyf==0.20.0 not installed (pip install depyf==0.20.0)")
    return depyf


def normalised(source: str, name: str) -> tuple:
    """(name, arguments, the names it reads from outside the function: graphs, resume functions, globals)."""
    fn = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name)
    args = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    assigned = set(args) | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    outside = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
               and n.id not in assigned and not hasattr(builtins, n.id)}
    return fn.name, args, sorted(outside)


def _run(fn, args, replace):
    """Compile fn with every transformed code object replaced by replace(code); return the outputs."""
    import torch
    from torch._dynamo.convert_frame import register_bytecode_hook

    torch._dynamo.reset()
    handle = register_bytecode_hook(lambda original, transformed: replace(transformed))
    try:
        return torch.compile(fn, backend="eager")(*args)
    finally:
        handle.remove()
        torch._dynamo.reset()


CASES = ["branch_break", "with_print", "with_item", "nested_and_kwargs", "loops_around_break"]


@pytest.mark.parametrize("name", CASES)
def test_same_as_depyf_where_depyf_decompiles(name):
    import torch

    from compilescope.decompile import decompile
    from compilescope.decompile.recompile import recompile_like

    from . import programs

    depyf = _depyf()
    fn = getattr(programs, name)
    args = (torch.arange(4.0) - 1,)
    compared, depyf_failed = [], []

    def ours(code):
        mine = decompile(code)
        assert mine.ok, mine.source
        try:
            theirs = depyf.decompile(code)
        except Exception as exc:  # noqa: BLE001 - depyf's failure is data here
            depyf_failed.append((code.co_name, type(exc).__name__))
            return recompile_like(mine.source, code)
        assert normalised(mine.source, code.co_name) == normalised(theirs, code.co_name)
        compared.append(code.co_name)
        return recompile_like(mine.source, code)

    def depyf_code(code):
        try:
            return recompile_like(depyf.decompile(code), code)
        except Exception:  # noqa: BLE001 - where depyf fails, Dynamo keeps its code
            return None

    eager = fn(*[a.clone() for a in args])
    with_ours = _run(fn, args, ours)
    with_depyf = _run(fn, args, depyf_code)
    torch.testing.assert_close(with_ours, eager)
    torch.testing.assert_close(with_depyf, eager)
    assert compared  # every case has frames depyf decompiles (for branch_break: its resume functions)
    if name == "branch_break":
        # The case the issue names: depyf 0.20.0 cannot decompile the data-dependent branch on torch 2.13.
        assert depyf_failed and depyf_failed[0][0] == "branch_break"
