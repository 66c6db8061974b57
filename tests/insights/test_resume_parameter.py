"""resume_param (tests/data/torch213/programs/resume_param.py): f(x) breaks its graph at line 15 and uses x after the
break, so Dynamo passes the rest of f (torch_dynamo_resume_in_f_at_15, frame 1) the tensor the user passed f. Called
with 4, 6 and 8 rows, both frames recompile on x's size. The advice for frame 1 says to mark x dynamic (the
_marked recording, with torch._dynamo.mark_dynamic(x, 0) before each call, compiles each frame once): x is no local of
f that the user could not reach."""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.recompiles.advice import resumed_size_advice

from ..conftest import run_cli, torch213

LOG = torch213("resume_param.log.gz")
MARKED = torch213("resume_param_marked.log.gz")


def test_the_mark_reaches_the_resume_function():
    ids = set(re.findall(r'"frame_id": (\d+), "frame_compile_id": (\d+)', gzip.open(MARKED, "rt").read()))
    assert ids == {("0", "0"), ("1", "0")}
    ids = set(re.findall(r'"frame_id": (\d+), "frame_compile_id": (\d+)', gzip.open(LOG, "rt").read()))
    assert {("1", "0"), ("1", "1")} <= ids


def test_a_resume_functions_parameter_is_advised_to_be_marked_dynamic(capsys):
    assert run_cli("summary", "--json", LOG) == 0
    frames = json.loads(capsys.readouterr().out)["recompiles"]["frames"]
    by_id = {f["frame_id"]: f for f in frames}
    assert by_id[1]["name"] == "torch_dynamo_resume_in_f_at_15"
    advice = " ".join(by_id[1]["advice"])
    assert "torch._dynamo.mark_dynamic(x, 0)" in advice
    assert "`x` is a parameter of f, which Dynamo passes on past its graph break at line 15" in advice
    assert "cannot mark" not in advice and "local" not in advice


def test_a_parameter_whose_two_dimensions_change_is_named_once(capsys):
    # resume_two_dims.py: f(x) breaks at line 11 and x's dimensions 0 and 1 both change. The advice said "`x` and `x`
    # are parameters of f ... if f passes them on": one tensor, named once, in the singular.
    assert run_cli("summary", "--json", torch213("resume_two_dims.log.gz")) == 0
    frames = json.loads(capsys.readouterr().out)["recompiles"]["frames"]
    by_id = {f["frame_id"]: f for f in frames}
    assert by_id[1]["name"] == "torch_dynamo_resume_in_f_at_11"
    (advice,) = by_id[1]["advice"]
    assert "(x at index 0; x at index 1)" in advice and "torch._dynamo.mark_dynamic(x, [0, 1])" in advice
    assert "`x` is a parameter of f, which Dynamo passes on past its graph break at line 11" in advice
    assert "if f passes it on unchanged" in advice and "`x` and `x`" not in advice


def test_a_local_whose_two_dimensions_change_is_named_once():
    said = resumed_size_advice([("h", "0", ""), ("h", "1", "")], ("forward", 30))
    assert "(h at index 0; h at index 1). `h` is a local of forward that Dynamo passes on" in said
    assert "not a tensor you pass in, so torch._dynamo.mark_dynamic cannot mark it:" in said
    said = resumed_size_advice([("h", "0", ""), ("g", "1", ""), ("h", "1", "")], ("forward", 30))
    assert "`h` and `g` are locals of forward" in said and "cannot mark them:" in said
    # (its sizes are several: "to have it dynamic" followed "cannot mark them")
    assert "compile with dynamic=True to have them dynamic from the first compile" in said
    assert "to have it dynamic" in resumed_size_advice([("h", "0", "")], ("forward", 30))


def test_a_fifth_local_is_counted_not_dropped():
    # Four tensors are named; a fifth was dropped unsaid: "`a`, `b`, `c` and `d` are locals" for five.
    said = resumed_size_advice([(name, "0", "") for name in "abcde"], ("f", 11))
    assert "`a`, `b`, `c`, `d` and 1 more are locals of f" in said
