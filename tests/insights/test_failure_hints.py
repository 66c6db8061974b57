"""A failed compile says what torch said of it: the Explanation and Hint lines of a Dynamo failure that names an
unsupported construct, as a graph break's are shown.

../shared gpu-torch211/flex_sdpa_model: `bad` (`@torch.compile(fullgraph=True)`, script.py line 22) calls
`random.choice` at line 25; [2/0]'s compilation_metrics `fail_reason` reads "Attempted to call function marked as
skipped", then "Explanation: Dynamo developers have intentionally marked that the function `Random.choice` in file
`/usr/lib/python3.12/random.py` should not be traced.", three "Hint:" lines ("Avoid calling the function
`Random.choice`.", "Apply `@torch._dynamo.dont_skip_tracing` ...", "Please file an issue to PyTorch.") and "please
visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0007.html". The next step "fix the break (see its
hints)" points at those hints, which the summary and the pages showed nowhere before (only in the collapsed message).
"""

from __future__ import annotations

import json

from ..conftest import run_cli, shared

LOG = "gpu-torch211/flex_sdpa_model/dedicated_log_torch_trace_wx__i5xe.log"
HINTS = ["Avoid calling the function `Random.choice`.",
         "Apply `@torch._dynamo.dont_skip_tracing` to the function `Random.choice` to force tracing into the function. "
         "More graph breaks may occur as a result of attempting to trace into the function.",
         "Please file an issue to PyTorch."]
DOCS = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0007.html"


def test_json_and_summary_give_torchs_explanation_and_hints(capsys):
    assert run_cli("summary", "--json", shared(LOG)) == 0
    [error] = json.loads(capsys.readouterr().out)["errors"]["errors"]
    assert (error["compile_id"], error["stage"], error["message"]) == (
        "[2/0]", "dynamo", "Attempted to call function marked as skipped")
    assert error["explanation"] == ("Dynamo developers have intentionally marked that the function `Random.choice` "
                                    "in file `/usr/lib/python3.12/random.py` should not be traced.")
    assert error["hints"] == HINTS
    assert error["docs_url"] == DOCS
    assert run_cli("summary", shared(LOG)) == 0
    out = " ".join(capsys.readouterr().out.split())  # (the terminal wraps long lines)
    assert "├── hint: Avoid calling the function `Random.choice`. ├── hint: Apply" in out
    assert "├── why: Dynamo developers have intentionally marked that the function" in out


def test_the_index_and_the_compile_page_show_them(tmp_path):
    out = tmp_path / "out"
    assert run_cli(shared(LOG), "-o", out, "--no-browser") == 0
    # (their `code` spans shown as code)
    hints = ('<ul class="hints"><li>Avoid calling the function <code>Random.choice</code>.</li><li>Apply '
             "<code>@torch._dynamo.dont_skip_tracing</code> to the function <code>Random.choice</code> to force tracing "
             "into the function. More graph breaks may occur as a result of attempting to trace into the function.</li>"
             "<li>Please file an issue to PyTorch.</li></ul>")
    link = f'<a href="{DOCS}" rel="noopener noreferrer">about this error</a>'
    for page in (out / "index.html", out / "-_2_0_0" / "index.html"):
        html = page.read_text()
        assert hints in html and link in html, page
        assert ("the function <code>Random.choice</code> in file <code>/usr/lib/python3.12/random.py</code> should not "
                "be traced.</div>") in html


def test_a_failure_without_torchs_account_has_none(capsys):
    # comp_failure.log: a custom backend raised RuntimeError("broken backend"); no Explanation, no Hint.
    assert run_cli("summary", "--json", shared("peer-tlparse/inputs/comp_failure.log")) == 0
    [error] = json.loads(capsys.readouterr().out)["errors"]["errors"]
    assert (error["exception"], error["explanation"], error["hints"], error["docs_url"]) == (
        "BackendCompilerFailed", None, [], None)


def test_a_failed_lowering_of_a_custom_op_is_not_reported_to_pytorch():
    # compile_error_lowering.py registers an Inductor lowering for its own custom op compilescope_test::boom that
    # raises; torch's LoweringException names the node's target, compilescope_test.boom.default. The lowering is the
    # program's own code: the next step is to fix or drop it, not to report it to PyTorch.
    from compilescope.analyses.compile_errors import compile_errors
    from compilescope.ingest.reader import read_trace

    from ..conftest import torch213

    log = torch213("compile_error_lowering.log")
    assert "target: compilescope_test.boom.default" in log.read_text(encoding="utf-8")
    with read_trace(str(log)) as trace:
        (error,) = compile_errors(trace).errors
    assert error.stage == "inductor_lowering" and not any("Report it to PyTorch" in step for step in error.next_steps)
    # The lowering that raised is the program's own (register_lowering, compile_error_lowering.py:29): named, the
    # frame Inductor's lowering called in the traceback, not told by the op's namespace.
    assert any(step.startswith("The lowering that failed for compilescope_test.boom.default is not torch's: "
                               "compile_error_lowering.py:29 in _boom_lowering, registered with") for step in error.next_steps)
