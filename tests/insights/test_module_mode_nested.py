"""State changed through nested loops (module_mode_nested.py), the inner loop over the outer loop's variable: `for
layer in model.backbone.children(): for p in layer.parameters(): p.requires_grad = False`, `for m in
model.head.modules(): for c in m.children(): c.eval()`; the lines the source page marks, checked against the raw log's
guard trees and the program."""

from __future__ import annotations

import ast
import re

from compilescope.analyses.analyze import analyze
from compilescope.analyses.recompiles import StateChange
from compilescope.analyses.state_lines import change_lines
from compilescope.ingest.reader import read_trace

from ..conftest import line_holding, payloads_by_compile, torch213, torch213_moved

LOG = "module_mode_nested.log.gz"
PROGRAM = torch213(LOG).parents[1] / "programs" / "module_mode_nested.py"



def _marked(tmp_path) -> dict[int, list[tuple[str, str, str]]]:
    """line -> (recompile, kind, text) of each state change the program's source page marks there."""
    results = analyze(read_trace(torch213_moved(LOG, tmp_path)))
    return {line: [(c["recompile"], c["kind"], c["text"]) for c in n.state_changes]
            for f in results.sources.files if f.path.endswith("module_mode_nested.py")
            for line, n in f.notes.items() if n.state_changes}


def test_a_parameter_frozen_in_a_loop_over_an_outer_loops_modules_is_marked(tmp_path):
    """The trees pin backbone[0]'s weight and bias requires_grad True in [0/0], False from [0/1]: the loop over each
    parameter of each child of model.backbone froze them (torch's reason names the bias). The inner loop's module is
    the outer loop's variable, a child of model.backbone: the line is marked for both (it was not: `layer` was taken
    for any name, and a bare name's parameters() for those of the compiled model only)."""
    trees, reasons = payloads_by_compile(torch213(LOG), "dynamo_cpp_guards_str"), payloads_by_compile(torch213(LOG), "recompile_reasons")

    def requires_grad(compile_id: str) -> set[tuple[str, str]]:
        return set(re.findall(r"check_tensor\(L\['self'\]._modules\['backbone'\]._modules\['0'\]._parameters"
                              r"\['(\w+)'\][^\n]*requires_grad=(\w+)", trees[compile_id]))

    assert requires_grad("[0/0]") == {("weight", "True"), ("bias", "True")}
    assert requires_grad("[0/1]") == requires_grad("[0/2]") == {("weight", "False"), ("bias", "False")}
    assert "0/0: tensor 'self._modules['backbone']._modules['0']._parameters['bias']' requires_grad mismatch" in (
        reasons["[0/1]"])
    frozen = line_holding(PROGRAM, "p.requires_grad = False  # freeze the backbone")
    ((recompile, kind, text),) = _marked(tmp_path)[frozen]
    assert (recompile, kind) == ("[0/1]", "requires_grad")
    assert text.startswith("sets the requires_grad of self.backbone[0].bias and self.backbone[0].weight "
                           "(True → False each"), text


def test_a_mode_set_in_a_loop_over_an_outer_loops_modules_marks_only_the_modules_it_reaches(tmp_path):
    """[0/2]'s tree pins head[1]'s and backbone[1]'s training False where [0/1]'s pins True: the nested loop over the
    children of each module of model.head switched head[1] (torch's reason names it), the assignment on the next line
    backbone[1]. The nested loop's `m` is a module of model.head, so its line is the one for head[1] alone, and the
    assignment's the one for backbone[1] (both were said to be one of 2 lines that may switch backbone[1]: `m` was
    taken for any name, so for the model)."""
    trees, reasons = payloads_by_compile(torch213(LOG), "dynamo_cpp_guards_str"), payloads_by_compile(torch213(LOG), "recompile_reasons")
    for module in ("head", "backbone"):
        modes = [re.findall(re.escape(f"L['self']._modules['{module}']._modules['1'].training == ") + r"(\w+)",
                            trees[c]) for c in ("[0/1]", "[0/2]")]
        assert modes == [["True"], ["False"]], module
    assert "0/1: self._modules['head']._modules['1'].training == True" in reasons["[0/2]"]
    nested = line_holding(PROGRAM, "c.eval()  # the head's dropout off")
    assigned = line_holding(PROGRAM, "model.backbone[1].training = False")
    marked = _marked(tmp_path)
    assert [(recompile, kind) for recompile, kind, _ in marked[nested]] == [("[0/2]", "training")]
    assert marked[nested][0][2].startswith("switches self.head[1] to eval mode "), marked[nested]
    assert marked[assigned][0][2].startswith("switches self.backbone[1] to eval mode "), marked[assigned]


def test_which_nested_loops_can_have_made_the_change():
    """An inner loop over the outer loop's variable reaches what a module the outer loop yields reaches."""
    weight = StateChange("L['self']._modules['block']._modules['fc']._parameters['weight'].requires_grad", "True",
                         "False")
    norm = StateChange("L['self']._modules['block']._modules['norm'].training", "True", "False")
    source = "\n".join([
        "compiled = torch.compile(model)",
        "for m in model.modules():", "    for p in m.parameters():", "        p.requires_grad = False",  # 4
        "for m in model.head.modules():", "    for p in m.parameters():", "        p.requires_grad = False",  # 7: head
        "for m in model.children():", "    for c in m.children():", "        c.training = False",  # 10: block.norm
        "for m in model.head.modules():", "    for c in m.children():", "        c.eval()",  # 13: head's
        "for m in model.block.children():", "    for c in m.children():", "        c.eval()",  # 16: block's grandchildren
        "for m in (model.block,):", "    for c in m.modules():", "        c.training = False",  # 19
        "for m in model.modules():", "    for p in m.parameters():", "        p.requires_grad = True",  # 22: other value
        "for m in model.modules():", "    for c in m.modules():", "        c.requires_grad = False"])  # 25: no parameter
    tree = ast.parse(source)
    assert change_lines(tree, weight) == [4]
    assert change_lines(tree, norm) == [10, 19]


def test_the_mode_advice_names_the_module_the_guard_does_not_and_the_lines(tmp_path):
    """torch's reason for [0/2] names head[1]'s flag only; backbone[1]'s changed too, on the assignment's line. The mode
    advice names both modules and both lines (it named head[1] alone)."""
    reasons = payloads_by_compile(torch213(LOG), "recompile_reasons")
    assert "._modules['backbone']._modules['1'].training" not in reasons["[0/2]"]
    results = analyze(read_trace(torch213_moved(LOG, tmp_path)))
    (frame,) = results.insights.recompiles.frames
    (advice,) = [a for a in frame.advice if "mode (.train() or .eval()" in a]
    assert advice.startswith("self.head[1].training and self.backbone[1].training are modules' mode"), advice
    nested = line_holding(PROGRAM, "c.eval()  # the head's dropout off")
    assigned = line_holding(PROGRAM, "model.backbone[1].training = False")
    assert f"switched at module_mode_nested.py:{nested} (`c.eval()  # the head's dropout off`), " \
           f"module_mode_nested.py:{assigned} (`model.backbone[1].training = False" in advice, advice


def test_the_requires_grad_advice_names_the_parameter_the_guard_does_not_and_the_line(tmp_path):
    """torch's reason for [0/1] names backbone[0]'s bias; its weight was frozen too (the trees pin both
    requires_grad=False from [0/1]), by the same nested loop, the only line for either. The requires_grad advice names
    both and that line (it named the bias alone)."""
    trees, reasons = payloads_by_compile(torch213(LOG), "dynamo_cpp_guards_str"), payloads_by_compile(torch213(LOG), "recompile_reasons")
    weight = "L['self']._modules['backbone']._modules['0']._parameters['weight']"
    assert re.search(re.escape(weight) + r"[^\n]*requires_grad=True", trees["[0/0]"])
    assert re.search(re.escape(weight) + r"[^\n]*requires_grad=False", trees["[0/1]"])
    assert "['weight']" not in reasons["[0/1]"]
    results = analyze(read_trace(torch213_moved(LOG, tmp_path)))
    (frame,) = results.insights.recompiles.frames
    (advice,) = [a for a in frame.advice if "changed requires_grad" in a]
    frozen = line_holding(PROGRAM, "p.requires_grad = False  # freeze the backbone")
    assert advice.startswith("`self.backbone[0].bias` and `self.backbone[0].weight` changed requires_grad (a layer "
                             f"frozen or unfrozen, requires_grad_(); set at module_mode_nested.py:{frozen} "
                             "(`p.requires_grad = False  # freeze the backbone`)): "), advice


def test_the_advice_counts_and_says_apart_the_changes_matched_to_no_line(tmp_path):
    """left_out (the step's changes beyond state_lines' MAX_UNSEARCHED, never compared with a line) with few names:
    the count was len(names) - 4 + left_out, "and -1 more" here, and the advice said all of them were switched at the
    lines; it says those were not matched to a line (not that the lines did not make them: nobody looked)."""
    from compilescope.analyses.recompiles.advice import mode_advice, requires_grad_advice

    results = analyze(read_trace(torch213_moved(LOG, tmp_path)))
    (frame,) = results.insights.recompiles.frames
    modes = [s.guard for s in frame.steps if s.guard is not None and s.guard.change == "flag"]
    assert modes
    at = "module_mode_nested.py:9 (`c.eval()`)"
    advice = mode_advice(modes, [], 2, [at])
    assert advice.startswith("self.head[1].training and 2 more are modules' mode"), advice
    assert f"; switched at {at}, and 2 more not matched to a line)" in advice, advice
    advice = requires_grad_advice(["L['self']._modules['fc']._parameters['bias']"], [], 1, [at])
    assert advice.startswith("`self.fc.bias` and 1 more changed requires_grad"), advice
    assert f"; set at {at}, and 1 more not matched to a line)" in advice, advice
