"""The round trip, as depyf's author validated his decompiler: Dynamo's transformed code objects, taken with
the bytecode hook, are decompiled, the source compiled, and the result runs in place of Dynamo's code object.
The outputs must equal those of the plain (eager) function.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch


@pytest.fixture
def swapped():
    """Every code object Dynamo makes, replaced by the decompiled one; yields the list of (decompiled, recompiled)."""
    import torch
    from torch._dynamo.convert_frame import register_bytecode_hook

    from compilescope.decompile import decompile
    from compilescope.decompile.recompile import recompile_like

    torch._dynamo.reset()
    done = []

    def hook(original, transformed):
        result = decompile(transformed)
        assert result.ok, result.source
        code = recompile_like(result.source, transformed)
        done.append((transformed.co_name, result, code))
        return code

    handle = register_bytecode_hook(hook)
    try:
        yield done
    finally:
        handle.remove()
        torch._dynamo.reset()


def _same(a, b):
    import torch

    if isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    else:
        assert a == b


def _ran_ours(fn_code, done):
    """Dynamo's cache for the function holds the recompiled code, not its own."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    ours = {id(code) for _, _, code in done}
    entries = _debug_get_cache_entry_list(fn_code)
    assert entries and all(id(e.code) in ours for e in entries)


def run_both(fn, calls, done, capsys=None):
    import torch

    compiled = torch.compile(fn, backend="eager")
    for args, kwargs in calls:
        expected = fn(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args], **kwargs)
        got = compiled(*args, **kwargs)
        _same(got, expected)
    assert done, "Dynamo compiled nothing"


def test_branch_break_both_arms(swapped):
    import torch

    from . import programs

    run_both(programs.branch_break, [((torch.ones(4),), {}), ((-torch.ones(4),), {})], swapped)
    names = [n for n, _, _ in swapped]
    assert names[0] == "branch_break" and any(n.startswith("torch_dynamo_resume_in_branch_break") for n in names)
    source = swapped[0][1].source
    assert "if " in source and "else:" in source or source.count("return") >= 2
    _ran_ours(programs.branch_break.__code__, swapped)


def test_loop_with_graph_break(swapped, capsys):
    import torch

    from . import programs

    run_both(programs.loops_around_break, [((torch.ones(3),), {})], swapped)
    import inspect

    lines, first = inspect.getsourcelines(programs.loops_around_break)
    at = first + next(i for i, line in enumerate(lines) if "between loops" in line)
    assert [n for n, _, _ in swapped] == ["loops_around_break", f"torch_dynamo_resume_in_loops_around_break_at_{at}"]
    # A break inside the loop body: torch 2.13 skips the whole frame ("graph breaks in loops are not supported"),
    # so there is no transformed code, and the function runs as written.
    swapped.clear()
    compiled = torch.compile(programs.loop_break, backend="eager")
    _same(compiled(torch.ones(3)), programs.loop_break(torch.ones(3)))
    assert swapped == []
    assert capsys.readouterr().out.count("step") == 6


def test_print_and_item(swapped, capsys):
    import torch

    from . import programs

    run_both(programs.with_print, [((torch.arange(4.0),), {})], swapped)
    run_both(programs.with_item, [((torch.arange(4.0),), {})], swapped)
    assert capsys.readouterr().out.count("between graphs") == 2
    assert any("'print'" in r.source or "print" in r.source for _, r, _ in swapped)


def test_keyword_arguments(swapped):
    import torch

    from . import programs

    x = torch.randn(2, 3)
    run_both(programs.keywords, [((x,), {"scale": 0.5}), ((x,), {"scale": 0.5, "shift": torch.ones(3)})], swapped)
    run_both(programs.nested_and_kwargs, [((torch.arange(4.0),), {"n": 3})], swapped)
    assert swapped[0][1].source.startswith("def keywords(x, *, scale, shift):")


def test_module_method_with_side_effect(swapped):
    import torch

    from . import programs

    torch.manual_seed(0)
    eager, compiled_module = programs.Block(), programs.Block()
    compiled_module.load_state_dict(eager.state_dict())
    compiled = torch.compile(compiled_module, backend="eager")
    for x in (torch.randn(2, 4), torch.randn(2, 4) + 3):
        _same(compiled(x), eager(x))
    assert compiled_module.calls == eager.calls == 2  # the replayed side effect ran, once per call
    assert any(n == "forward" for n, _, _ in swapped)


def test_function_that_recompiles(swapped):
    import torch

    from . import programs

    fn = torch.compile(programs.recompiles, backend="eager", dynamic=False)
    for x, n in ((torch.ones(2), 1), (torch.ones(3), 2), (torch.ones(3, dtype=torch.float64), 2)):
        _same(fn(x, n), programs.recompiles(x, n))
    assert sum(1 for n, _, _ in swapped if n == "recompiles") >= 3
    _ran_ours(programs.recompiles.__code__, swapped)


def test_closure_resume_is_an_annotated_disassembly_not_code():
    """A break in a closure: Dynamo builds the resume function with MAKE_FUNCTION over the closure cells, which
    is outside the subset. The result is the disassembly, every line a comment, marked where it stopped."""
    import ast

    import torch

    from compilescope.decompile import decompile
    from torch._dynamo.convert_frame import register_bytecode_hook

    from . import programs

    torch._dynamo.reset()
    results = []
    handle = register_bytecode_hook(lambda original, transformed: results.append(decompile(transformed)))
    try:
        fn = programs.closure_factory()
        _same(torch.compile(fn, backend="eager")(torch.arange(3.0)), fn(torch.arange(3.0)))
    finally:
        handle.remove()
        torch._dynamo.reset()
    first = results[0]
    assert not first.ok and "LOAD_CLOSURE" in first.problem
    assert all(line.startswith("#") for line in first.source.splitlines())
    assert ast.parse(first.source).body == []  # nothing runnable
    assert "# >>   126 LOAD_CLOSURE" in first.source or any(
        line.startswith("# >>") and "LOAD_CLOSURE" in line for line in first.source.splitlines())
