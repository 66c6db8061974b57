"""Dynamo compiling frames of Python's own library, on a real torch 2.14 log (tests/data/torch214/README.md, differs/).

Under torch 2.14, compiled autograd's end of capture calls inspect.getattr_static with Dynamo's frame hook on, so
Dynamo compiles inspect's functions: three fail and run eagerly, two recompile, three graph breaks. None of it is the
user's code: it is one INFO finding, the user's own findings stay as they are, and the errors' next steps say so.
"""

from __future__ import annotations

from compilescope.analyses.compile_errors import LIBRARY_STEP
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.user_locations import is_python_library_file
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, run_cli, torch213

LOG = REPO / "tests" / "data" / "torch214" / "differs" / "compiled_autograd.log.gz"


def _insights(log):
    with read_trace(str(log)) as trace:
        return insights(trace)


def test_what_dynamo_did_in_pythons_library_is_one_finding():
    ins = _insights(LOG)
    # The detailed sections keep everything (they are what happened).
    assert [e.compile_id for e in ins.errors.errors] == ["[1/0]", "[3/0]", "[5/0]"]
    assert {f.name for f in ins.recompiles.frames} == {"train_step", "_check_class", "_shadowed_dict"}
    # Fix first: the user's findings as under torch 2.13, and the library's in one line, ranked as every finding is:
    # by severity, then in the summary's order of sections (it is explained under Errors, before Recompiles).
    titles = [(f.severity, f.title) for f in ins.findings if f.section != "compile_time"]
    assert titles == [
        ("warning", "compiled autograd captured 2 backward graphs"),
        ("warning", "graph break at compiled_autograd.py:27 in train_step (2 compilations)"),
        ("info", "Dynamo compiled code of Python's own library (inspect.py)"),
        # one recompile for x's batch size, which that compile made dynamic (torch's automatic dynamic)
        ("info", "train_step recompiled once, then ran with x's dimension 0 dynamic"),
    ]
    [library] = [f for f in ins.findings if "Python's own library" in f.title]
    assert library.detail == ("[1/0], [3/0], [5/0] failed and run eagerly; 4 recompiles (_check_class, _shadowed_dict); "
                              "3 graph breaks. torch called it from compiled code; nothing in your code to change.")
    before = [(f.severity, f.title) for f in _insights(torch213("compiled_autograd.log.gz")).findings
              if f.section != "compile_time"]
    assert [t for t in titles if "own library" not in t[1]] == before


def test_errors_in_the_library_say_there_is_nothing_to_rewrite(capsys):
    ins = _insights(LOG)
    for err in ins.errors.errors:
        assert is_python_library_file(err.location.filename) and err.location.short.startswith("inspect.py:")
        assert err.next_steps[0] == LIBRARY_STEP
        assert not any("fullgraph" in s or "rewrite it" in s for s in err.next_steps)
    assert run_cli("summary", LOG) == 0
    out = capsys.readouterr().out
    assert "ERROR" not in out[:out.index("Errors (3)")]  # nothing the user can fix is an error at the top


def test_only_pythons_own_library_counts():
    assert is_python_library_file("/usr/lib/python3.11/inspect.py")
    assert is_python_library_file("/root/.pyenv/versions/3.11.7/lib/python3.11/functools.py")
    assert is_python_library_file("<frozen importlib._bootstrap>")
    # Installed packages are not: a model library's or torch's own frames can be the user's to fix (an optimizer's
    # step recompiling on a Python float learning rate, say).
    assert not is_python_library_file("/usr/local/lib/python3.12/site-packages/transformers/modeling_utils.py")
    assert not is_python_library_file("/venv/lib/python3.11/site-packages/torch/optim/adam.py")
    assert not is_python_library_file("/usr/lib/python3/dist-packages/numpy/core/numeric.py")
    assert not is_python_library_file("/home/me/train.py")


def test_a_failed_guard_names_the_attempt_its_chain_shows():
    # train_step restarted ([0/0] then [0/0_1]); torch's reason says "0/0: tensor 'x' size mismatch", meaning the
    # cached compilation, which the chain shows as [0/0_1].
    (frame,) = [f for f in _insights(LOG).recompiles.frames if f.name == "train_step"]
    assert frame.chain == ["[0/0_1]", "[0/1_1]"]
    assert [g.compile_id for s in frame.steps for g in s.failed_guards] == ["[0/0_1]"]
    assert all(g.compile_id in f.chain for f in _insights(LOG).recompiles.frames for s in f.steps for g in s.failed_guards)
