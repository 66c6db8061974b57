"""State changed through loops over a list or tuple the program binds to a name (module_mode_named.py): `frozen =
[model.backbone, model.neck]; for m in frozen: for p in m.parameters(): p.requires_grad = False`, `quiet =
model.neck[1], model.head[1]; for m in quiet: m.eval()`; the lines the source page marks and the advice, checked
against the raw log's guard trees and the program."""

from __future__ import annotations

import ast
import re

from compilescope.analyses.analyze import analyze
from compilescope.analyses.recompiles import StateChange
from compilescope.analyses.state_lines import change_lines
from compilescope.ingest.reader import read_trace

from ..conftest import line_holding, payloads_by_compile, torch213, torch213_moved

LOG = "module_mode_named.log.gz"
PROGRAM = torch213(LOG).parents[1] / "programs" / "module_mode_named.py"



def _analyzed(tmp_path):
    return analyze(read_trace(torch213_moved(LOG, tmp_path)))


def _marked(results) -> dict[int, list[tuple[str, str, str]]]:
    """line -> (recompile, kind, text) of each state change the program's source page marks there."""
    return {line: [(c["recompile"], c["kind"], c["text"]) for c in n.state_changes]
            for f in results.sources.files if f.path.endswith("module_mode_named.py")
            for line, n in f.notes.items() if n.state_changes}


def _requires_grad(tree: str, module: str) -> set[tuple[str, str]]:
    return set(re.findall(re.escape(f"check_tensor(L['self']._modules['{module}']._modules['0']._parameters[")
                          + r"'(\w+)'\][^\n]*requires_grad=(\w+)", tree))


def test_parameters_frozen_in_a_loop_over_a_named_lists_modules_are_marked_and_advised(tmp_path):
    """The trees pin backbone[0]'s and neck[0]'s weight and bias requires_grad True in [0/0], False from [0/1]; head[0]'s
    stay True. The loop over the parameters of each module of `frozen` (bound once to [model.backbone, model.neck])
    froze them; torch's reason names neck[0]'s bias. The line is marked for the four, and the requires_grad advice
    names them and the line (`m` was taken for any name, and a bare name's parameters() for the compiled model's only:
    the line was not marked, and the advice named neck[0]'s bias alone)."""
    trees, reasons = payloads_by_compile(torch213(LOG), "dynamo_cpp_guards_str"), payloads_by_compile(torch213(LOG), "recompile_reasons")
    for module in ("backbone", "neck"):
        assert _requires_grad(trees["[0/0]"], module) == {("weight", "True"), ("bias", "True")}, module
        assert _requires_grad(trees["[0/1]"], module) == {("weight", "False"), ("bias", "False")}, module
    assert _requires_grad(trees["[0/1]"], "head") == {("weight", "True"), ("bias", "True")}
    assert "0/0: tensor 'self._modules['neck']._modules['0']._parameters['bias']' requires_grad mismatch" in (
        reasons["[0/1]"])
    results = _analyzed(tmp_path)
    frozen = line_holding(PROGRAM, "p.requires_grad = False  # freeze the backbone and the neck")
    ((recompile, kind, text),) = _marked(results)[frozen]
    assert (recompile, kind) == ("[0/1]", "requires_grad")
    assert text.startswith("sets the requires_grad of self.neck[0].bias, self.neck[0].weight, self.backbone[0].bias "
                           "and self.backbone[0].weight (True → False each: a layer frozen)"), text
    (frame,) = results.insights.recompiles.frames
    (advice,) = [a for a in frame.advice if "changed requires_grad" in a]
    assert advice.startswith("`self.neck[0].bias`, `self.neck[0].weight`, `self.backbone[0].bias` and "
                             "`self.backbone[0].weight` changed requires_grad (a layer frozen or unfrozen, "
                             f"requires_grad_(); set at module_mode_named.py:{frozen} "), advice


def test_a_mode_set_in_a_loop_over_a_named_tuple_marks_only_its_modules(tmp_path):
    """[0/2]'s tree pins head[1]'s, neck[1]'s and backbone[1]'s training False where [0/1]'s pins True: the loop over
    `quiet` (bound once to the tuple model.neck[1], model.head[1]) switched the first two, the assignment on the next
    line backbone[1]. The loop's line is the one for neck[1] and head[1] alone, the assignment's the one for
    backbone[1] (both were said to be one of 2 lines that may switch backbone[1]: `m` was taken for any name, so for
    the model)."""
    trees = payloads_by_compile(torch213(LOG), "dynamo_cpp_guards_str")
    for module in ("head", "neck", "backbone"):
        modes = [re.findall(re.escape(f"L['self']._modules['{module}']._modules['1'].training == ") + r"(\w+)",
                            trees[c]) for c in ("[0/1]", "[0/2]")]
        assert modes == [["True"], ["False"]], module
    looped = line_holding(PROGRAM, "m.eval()  # the neck's and the head's dropout off")
    assigned = line_holding(PROGRAM, "model.backbone[1].training = False")
    marked = _marked(_analyzed(tmp_path))
    assert [(recompile, kind) for recompile, kind, _ in marked[looped]] == [("[0/2]", "training")]
    assert marked[looped][0][2].startswith("switches self.head[1] and self.neck[1] to eval mode "), marked[looped]
    assert marked[assigned][0][2].startswith("switches self.backbone[1] to eval mode "), marked[assigned]


def test_which_loops_over_a_name_are_read_through_its_literal():
    """A loop over a name the file binds once to a list or tuple literal, in the loop's function or at its top level,
    is over that literal's elements; a name bound again, changed in place or bound to anything else is any module."""
    weight = StateChange("L['self']._modules['block']._modules['fc']._parameters['weight'].requires_grad", "True",
                         "False")
    norm = StateChange("L['self']._modules['block']._modules['norm'].training", "True", "False")
    head = StateChange("L['self']._modules['head'].training", "True", "False")
    source = "\n".join([
        "compiled = torch.compile(model)",
        "mods = [model.block, model.other]",
        "def freeze():",
        "    for m in mods:", "        for p in m.parameters():", "            p.requires_grad = False",  # 6: block's
        "def head_off():",
        "    heads = (model.head,)",
        "    for m in heads:", "        m.eval()",  # 10: head only
        "def twice():",
        "    again = [model.head]", "    again = [model.block]",
        "    for m in again:", "        m.eval()",  # 15: bound twice, any module
        "def grown():",
        "    grows = [model.head]", "    grows.append(model.block)",
        "    for m in grows:", "        m.eval()",  # 20: changed in place, any module
        "def elsewhere():",
        "    local = [model.head]",
        "def reader():",
        "    for m in local:", "        m.eval()",  # 25: another function's local, any module
        "def made():",
        "    for m in list(model.children()):", "        m.eval()"])  # 28: not a literal, any module
    tree = ast.parse(source)
    assert change_lines(tree, weight) == [6]
    assert change_lines(tree, norm) == [15, 20, 25, 28]
    assert change_lines(tree, head) == [10, 15, 20, 25, 28]
