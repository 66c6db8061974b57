"""State changed through a loop's variable (module_mode_loops.py): `for m in model.modules(): m.training = False`, a
loop over self.drops.children(), a loop over a tuple of parameters; the lines the source page marks for each
recompile, checked against the raw log's guard trees and the program."""

from __future__ import annotations

import ast
import html
import io
import json
import re

from rich.console import Console

from compilescope.analyses.analyze import analyze
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.recompiles import StateChange
from compilescope.analyses.state_lines import change_lines
from compilescope.ingest.reader import read_trace
from compilescope.render.terminal import print_summary

from ..conftest import line_holding, payloads_by_compile, report, run_cli, torch213, torch213_moved

LOG = "module_mode_loops.log.gz"
PROGRAM = torch213(LOG).parents[1] / "programs" / "module_mode_loops.py"



def _marked(tmp_path, programs=None) -> dict[int, list[tuple[str, str, str]]]:
    """line -> (recompile, kind, text) of each state change the program's source page marks there."""
    tmp_path.mkdir(exist_ok=True)
    results = analyze(read_trace(torch213_moved(LOG, tmp_path, programs)))
    return {line: [(c["recompile"], c["kind"], c["text"]) for c in n.state_changes]
            for f in results.sources.files if f.path.endswith("module_mode_loops.py")
            for line, n in f.notes.items() if n.state_changes}


def _mode(tree: str, drop: int) -> str:
    (mode,) = re.findall(re.escape(f"L['self']._modules['drops']._modules['{drop}'].training == ") + r"(\w+)", tree)
    return mode


def test_a_mode_set_through_a_loop_over_modules_or_children_is_marked(tmp_path):
    """The guard trees pin each of the 70 Dropouts' training True in [0/0], False in [0/1] (the loop over
    model.modules() assigning m.training = False), True again in [0/2] (Net.dropout_on: a loop over
    self.drops.children() assigning m.training = True); torch's reasons name drops[0]'s flag for both."""
    trees, reasons = payloads_by_compile(torch213(LOG), "dynamo_cpp_guards_str"), payloads_by_compile(torch213(LOG), "recompile_reasons")
    assert [{_mode(trees[c], d) for d in range(70)} for c in ("[0/0]", "[0/1]", "[0/2]")] == [
        {"True"}, {"False"}, {"True"}]
    assert "0/0: self._modules['drops']._modules['0'].training == True" in reasons["[0/1]"]
    assert "0/1: self._modules['drops']._modules['0'].training == False" in reasons["[0/2]"]
    off = line_holding(PROGRAM, "m.training = False  # dropout off")
    on = line_holding(PROGRAM, "            m.training = True")
    marked = _marked(tmp_path)
    assert [(recompile, kind) for recompile, kind, _ in marked[off]] == [("[0/1]", "training")]
    assert [(recompile, kind) for recompile, kind, _ in marked[on]] == [("[0/2]", "training")]
    assert marked[off][0][2].startswith("switches self.drops[")


def test_which_loops_over_modules_can_have_made_the_change():
    """modules() yields its module and every one under it; children() only those right under it, so an assignment
    (the variable's own flag) needs the loop's module to be the parent, a call (`m.eval()`, `m.requires_grad_()`)
    any module above; `m.requires_grad = False` on a module sets no parameter's."""
    norm = StateChange("L['self']._modules['block']._modules['norm'].training", "True", "False")
    weight = StateChange("L['self']._modules['block']._modules['fc']._parameters['weight'].requires_grad", "True",
                         "False")
    source = "\n".join([
        "for m in model.modules():", "    m.training = False",  # 2
        "for m in model.children():", "    m.training = False",  # 4: children of model: not block.norm
        "for m in model.block.children():", "    if isinstance(m, nn.BatchNorm1d):", "        m.training = False",  # 7
        "for name, m in model.named_children():", "    m.eval()",  # 9: eval() of block sets norm's
        "for name, m in model.named_modules():", "    m.train(False)",  # 11
        "for m in model.head.modules():", "    m.training = False",  # 13: another module's
        "for m in model.block.norm.children():", "    m.eval()",  # 15: norm's children, not norm
        "for m in model.modules():", "    m.training = True",  # 17: the other value
        "for m in self.children():", "    m.requires_grad_(False)",  # 19: block's parameters, via block
        "for m in model.modules():", "    m.requires_grad = False",  # 21: a module's attribute, no parameter's
        "for m in model.block.fc.children():", "    m.requires_grad_(False)",  # 23: fc's children, not fc
        "for m in model.modules():", "    other.training = False"])  # 25: not the variable
    tree = ast.parse(source)
    assert change_lines(tree, norm) == [2, 7, 9, 11]
    assert change_lines(tree, weight) == [19]


def test_a_parameter_frozen_beside_more_mode_changes_than_are_looked_for_is_marked(tmp_path):
    """[0/1]'s tree differs from [0/0]'s in the 70 Dropouts' flags and head's weight and bias requires_grad (line 55,
    the same step as the loop over modules()): 72 changes, more than one step's changes looked for; torch's reason
    names drops[0]'s flag. The cap keeps the named change first and each kind's first changes, so line 55 is marked
    too (keeping the first 64 in tree order kept 64 mode changes and lost it)."""
    from compilescope.analyses.insights.analysis import insights
    from compilescope.analyses.state_lines import MAX_STEP_CHANGES, _changes, _looked_for

    trees = payloads_by_compile(torch213(LOG), "dynamo_cpp_guards_str")
    frozen = [(p, rg) for tree in (trees["[0/0]"], trees["[0/1]"]) for p, rg in re.findall(
        r"check_tensor\(L\['self'\]._modules\['head'\]._parameters\['(\w+)'\][^\n]*requires_grad=(\w+)", tree)]
    assert sorted(frozen) == [("bias", "False"), ("bias", "True"), ("weight", "False"), ("weight", "True")]
    assert 70 + 2 > MAX_STEP_CHANGES
    with read_trace(str(torch213(LOG))) as trace:
        step = next(s for f in insights(trace).recompiles.frames for s in f.steps if s.compile_id == "[0/1]")
    looked_for = _looked_for(_changes(step))
    assert len(looked_for) == MAX_STEP_CHANGES and looked_for[0].name == "self.drops[0].training"
    assert {c.name for c in looked_for if c.kind == "requires_grad"} == {"self.head.weight.requires_grad",
                                                                         "self.head.bias.requires_grad"}
    frozen_line = line_holding(PROGRAM, "model.head.weight.requires_grad_(False); model.head.bias")
    assert [(recompile, kind) for recompile, kind, _ in _marked(tmp_path)[frozen_line]] == [("[0/1]", "requires_grad")]


def test_a_requires_grad_mark_names_every_parameter_its_line_sets(tmp_path):
    """Line 55 freezes head's weight and bias (two calls on one line), lines 59-60 backbone's (a loop over a tuple of
    them): the trees pin head's requires_grad True in [0/0] and False from [0/1], backbone's True until [0/2] and
    False in [0/3]. Each mark names both parameters of its line, not the first change found."""
    trees = payloads_by_compile(torch213(LOG), "dynamo_cpp_guards_str")

    def requires_grad(compile_id: str, module: str) -> set[tuple[str, str]]:
        return set(re.findall(r"check_tensor\(L\['self'\]._modules\['" + module + r"'\]._parameters\['(\w+)'\]"
                              r"[^\n]*requires_grad=(\w+)", trees[compile_id]))

    assert requires_grad("[0/0]", "head") == {("weight", "True"), ("bias", "True")}
    assert requires_grad("[0/1]", "head") == {("weight", "False"), ("bias", "False")}
    assert requires_grad("[0/2]", "backbone") == {("weight", "True"), ("bias", "True")}
    assert requires_grad("[0/3]", "backbone") == {("weight", "False"), ("bias", "False")}
    marked = _marked(tmp_path)
    for line, recompile, module in ((line_holding(PROGRAM, "model.head.weight.requires_grad_(False);"), "[0/1]", "head"),
                                    (line_holding(PROGRAM, "p.requires_grad_(False)  # freeze"), "[0/3]", "backbone")):
        ((at, kind, text),) = marked[line]
        assert (at, kind) == (recompile, "requires_grad")
        named = text.split(" (", 1)[0]
        assert f"self.{module}.weight" in named and f"self.{module}.bias" in named, text
        assert "True → False each" in text


def test_which_loops_over_a_tuple_can_have_made_the_change():
    """A loop over a tuple or list: its variable is each element, matched as that receiver would be."""
    weight = StateChange("L['self']._modules['fc']._parameters['weight'].requires_grad", "True", "False")
    dropout = StateChange("L['self']._modules['dropout'].training", "True", "False")
    source = "\n".join([
        "compiled = torch.compile(model)",
        "for p in (model.fc.weight, model.fc.bias):", "    p.requires_grad_(False)",  # 3
        "for p in [model.head.weight]:", "    p.requires_grad = False",  # 5: another parameter
        "for m in [model.fc]:", "    m.requires_grad_(False)",  # 7: its module
        "for m in (model.dropout, model.head):", "    m.training = False",  # 9
        "for m in (model.head,):", "    m.eval()",  # 11: another module
        "for p in (w, model.fc.weight):", "    p.requires_grad_(True)"])  # 13: the other value
    tree = ast.parse(source)
    assert change_lines(tree, weight) == [3, 7]
    assert change_lines(tree, dropout) == [9]


def test_a_file_a_later_frame_quotes_differently_is_not_marked(tmp_path):
    """The file is checked against every frame's quoted lines of it, not the first frame's: frame 0's reasons quote
    lines of forward only (24: `x = drop(x)`), frame 1's (rescale, recompiled for factor 3) line 34. A copy of the
    program whose line 34 was edited since the run agrees with every line frame 0 quotes, but not with frame 1's: its
    lines may have moved, so none is marked (the unedited copy's are)."""
    reasons = payloads_by_compile(torch213(LOG), "recompile_reasons")
    rescale = line_holding(PROGRAM, "return x * factor")
    assert f'module_mode_loops.py", line {rescale}, in rescale' in reasons["[1/1]"]
    assert "1/0: factor == 2" in reasons["[1/1]"]
    forward_quotes = {int(n) for c in ("[0/1]", "[0/2]", "[0/3]")
                      for n in re.findall(r'module_mode_loops.py\\?", line (\d+)', reasons[c])}
    forward = line_holding(PROGRAM, "def forward(self, x):")
    assert forward_quotes and all(forward < n <= line_holding(PROGRAM, "return self.head(x)") for n in forward_quotes)
    assert _marked(tmp_path / "as_run")  # (the program as it ran: marked)
    edited = tmp_path / "edited_programs"
    edited.mkdir()
    lines = PROGRAM.read_text().splitlines(keepends=True)
    lines[rescale - 1] = lines[rescale - 1].replace("x * factor", "factor * x")
    (edited / PROGRAM.name).write_text("".join(lines))
    assert _marked(tmp_path / "edited", edited) == {}


def test_a_mode_mark_names_every_module_its_line_switches(tmp_path):
    """The guard trees pin the 70 Dropouts' training True in [0/0], False in [0/1], True in [0/2]: line 54 (the loop
    over model.modules()) switched all 70 off and Net.dropout_on's loop (line 29) all 70 back on. Each mark names the
    first four and counts the rest, all 70, though [0/1]'s 72 changes are more than one step's looked for (the
    head's weight and bias beside them), not the first module found."""
    trees = payloads_by_compile(torch213(LOG), "dynamo_cpp_guards_str")
    modes = {c: [_mode(trees[c], d) for d in range(70)] for c in ("[0/0]", "[0/1]", "[0/2]")}
    marked = _marked(tmp_path)
    for line, recompile, before, mode in ((line_holding(PROGRAM, "m.training = False  # dropout off"), "[0/1]", "[0/0]",
                                           "eval"),
                                          (line_holding(PROGRAM, "            m.training = True"), "[0/2]", "[0/1]",
                                           "training")):
        switched = [d for d in range(70) if modes[before][d] != modes[recompile][d]]
        assert len(switched) == 70
        ((at, kind, text),) = marked[line]
        assert (at, kind) == (recompile, "training")
        named = text.split(" to ", 1)[0]
        assert named.startswith("switches self.drops[") and named.count("self.drops[") == 4, text
        assert named.endswith(f" and {len(switched) - 4} more modules"), text
        assert (f" to {mode} mode (training {modes[before][0]} → {modes[recompile][0]} each)") in text


def test_the_changes_beyond_those_looked_for_are_matched_up_to_a_bound_and_the_rest_counted(tmp_path, monkeypatch):
    """[0/1]'s 72 changes (70 Dropouts to eval, head's weight and bias frozen) and [0/2]'s 70 (the Dropouts back to
    training) are more than one step's looked for: the changes beyond are matched against the marked lines, at most
    MAX_UNSEARCHED a step, the rest counted, not matched (each was one more change_lines: a step of a model of
    thousands of modules switched matched thousands). With a bound of 3, each step matches 3 of the rest, and the
    mark counts the ones left out."""
    from compilescope.analyses import state_lines as state_lines_module
    from compilescope.analyses.insights.analysis import insights
    from compilescope.analyses.state_lines import MAX_STEP_CHANGES, _changes, _looked_for

    with read_trace(str(torch213(LOG))) as trace:
        steps = {s.compile_id: s for f in insights(trace).recompiles.frames for s in f.steps}
    changes = {c: _changes(steps[c]) for c in ("[0/1]", "[0/2]")}
    assert [len(changes[c]) for c in ("[0/1]", "[0/2]")] == [72, 70]
    looked_for = {c: {x.source for x in _looked_for(changes[c])} for c in changes}
    beyond = {c: len(changes[c]) - MAX_STEP_CHANGES for c in changes}
    assert beyond == {"[0/1]": 8, "[0/2]": 6}
    monkeypatch.setattr(state_lines_module, "MAX_UNSEARCHED", 3, raising=False)
    asked: list[tuple[str, str]] = []  # (source, value after) of each change change_lines is asked of
    change_lines_as_is = state_lines_module.change_lines

    def counted(tree, change, index=None):
        asked.append((change.source, change.after))
        return change_lines_as_is(tree, change, index)

    monkeypatch.setattr(state_lines_module, "change_lines", counted)
    marked = _marked(tmp_path)
    # (the Dropouts go to eval in [0/1], back to training in [0/2]: the value after tells the step)
    matched_beyond = {c: [s for s, after in asked if after == ("False" if c == "[0/1]" else "True")
                          and s not in looked_for[c] and ".training" in s] for c in changes}
    assert {c: len(set(m)) for c, m in matched_beyond.items()} == {"[0/1]": 3, "[0/2]": 3}
    for line, recompile in ((line_holding(PROGRAM, "m.training = False  # dropout off"), "[0/1]"),
                            (line_holding(PROGRAM, "            m.training = True"), "[0/2]")):
        ((at, _, text),) = marked[line]
        assert at == recompile
        searched_drops = sum(".training" in s for s in looked_for[recompile]) + 3
        assert f" and {searched_drops - 4} more modules " in text, text
        assert text.endswith(f"; {beyond[recompile] - 3} more modules' modes changed in that step were not matched "
                             "to a line"), text


def test_the_mode_advice_names_every_module_the_lines_found_switched(tmp_path):
    """torch's reasons name only drops[0]'s flag ([0/1], [0/2]), but the trees pin all 70 Dropouts' flags False in
    [0/1] and True in [0/2], switched by the loop over model.modules() (line 54) and dropout_on's loop (line 29): the
    frame's mode advice names the first modules those lines switched and counts the rest, and says the lines, not
    drops[0] alone."""
    trees, reasons = payloads_by_compile(torch213(LOG), "dynamo_cpp_guards_str"), payloads_by_compile(torch213(LOG), "recompile_reasons")
    switched = [d for d in range(70) if _mode(trees["[0/0]"], d) != _mode(trees["[0/1]"], d)]
    assert len(switched) == 70
    assert [c for c in ("[0/1]", "[0/2]", "[0/3]") if "._modules['drops']._modules['1'].training" in reasons[c]] == []
    tmp_path.mkdir(exist_ok=True)
    results = analyze(read_trace(torch213_moved(LOG, tmp_path)))
    (frame,) = [f for f in results.insights.recompiles.frames if f.name == "forward"]
    (advice,) = [a for a in frame.advice if "mode (.train() or .eval()" in a]
    listed = ", ".join(f"self.drops[{d}].training" for d in switched[:4])
    assert advice.startswith(f"{listed} and {len(switched) - 4} more are modules' mode"), advice
    off, on = line_holding(PROGRAM, "m.training = False  # dropout off"), line_holding(PROGRAM, "            m.training = True")
    assert (f"switched at module_mode_loops.py:{off} (`m.training = False  # dropout off`), "
            f"module_mode_loops.py:{on} (`m.training = True`)") in advice, advice


def test_the_lines_found_are_gone_through_once_for_all_frames(monkeypatch, tmp_path):
    """link_switch_lines went through every line found for each frame and each kind (training, requires_grad) to
    pick the frame's: twice the frames times the lines. The lines are grouped once, then looked up by the frame's
    recompiles; the advice is the same (test_the_mode_advice_names_every_module_the_lines_found_switched)."""
    from compilescope.analyses.recompiles import links

    passes: list[int] = []
    frames: list[int] = []

    class CountedLines(list):
        def __iter__(self):
            passes.append(1)
            return super().__iter__()

    real = links.link_switch_lines

    def counted(found, changed_state):
        frames.append(len(found.frames))
        return real(found, CountedLines(changed_state))

    monkeypatch.setattr(links, "link_switch_lines", counted)
    results = analyze(read_trace(torch213_moved(LOG, tmp_path)))
    assert frames[0] > 1 and any("switched at module_mode_loops.py:" in a
                                 for f in results.insights.recompiles.frames for a in f.advice)
    assert len(passes) == 1


def test_the_other_changes_of_a_recompile_are_cut_to_the_first_eight_where_people_read_them(tmp_path, capsys):
    """[0/1]: the loop over model.modules() turned 70 Dropouts' training False at once (and the model's own flag):
    torch names drops[0]'s guard, and the 71 other values the guard trees fix differently are also_changed. The
    terminal and each compile's page name the first 8 and "and 63 more"; the report's recompile table the first 8, the
    rest folded in a <details>; --json keeps all 71 (every line said once per value, 2,400 lines for 1,200 modules)."""
    with read_trace(str(torch213(LOG))) as trace:
        found = insights(trace)
        console = Console(width=200, color_system=None, record=True, file=io.StringIO())
        print_summary(found, console)
        out = console.export_text()
    step = next(st for fr in found.recompiles.frames for st in fr.steps if st.compile_id == "[0/1]")
    assert len(step.also_changed) == 71
    first = [f"also changed since [0/0]: {c.text}" for c in step.also_changed[:8]]
    said = [line.strip("│├└─ ") for line in out.splitlines() if "also changed since [0/0]" in line]
    assert said == [*first, "and 63 more also changed since [0/0]"]

    assert run_cli("summary", "--json", torch213(LOG)) == 0
    saved = json.loads(capsys.readouterr().out)
    [saved_step] = [st for fr in saved["recompiles"]["frames"] for st in fr["steps"]
                    if st["compile_id"] == "[0/1]"]
    assert len(saved_step["also_changed"]) == 71

    report(torch213(LOG), tmp_path)
    page = (tmp_path / "index.html").read_text()
    shown, _, folded = page.partition('<details class="also-changed-rest"><summary>and 63 more also changed since '
                                      "[0/0]</summary>")
    assert folded, "the rest is not folded under its count"
    assert shown.count("also changed since [0/0]: <code>") == 8
    assert folded.partition("</details>")[0].count("also changed since [0/0]: <code>") == 63
    # [0/1]'s page folds the same 63 (it said their count, and none of them)
    compile_page = (tmp_path / "-_0_1_0" / "index.html").read_text()
    shown, _, folded = compile_page.partition('<details class="also-changed-rest"><summary>and 63 more also changed '
                                              "since [0/0]</summary>")
    assert folded, "the compile page does not fold the rest under its count"
    assert shown.count("also changed since [0/0]: ") == 8
    rest = folded.partition("</details>")[0]
    assert rest.count('<div class="recompile-note">also changed since [0/0]: ') == 63
    assert [f"also changed since [0/0]: {c.text}" for c in step.also_changed[8:]] == [
        html.unescape(re.sub(r"<[^>]+>", "", note)) for note in rest.split('<div class="recompile-note">')[1:]]
