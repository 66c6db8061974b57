"""Module state changed after compiling (module_swap.py): a forward hook registered on a submodule of the program's own
class after the first compiled call, the submodule replaced by a fresh one of the same type, and (_fixed) the hook
registered first and the weights loaded in place; each then validates once under eval() and no_grad(). What torch
guards of each, checked against the raw log and the program."""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.analyze import analyze
from compilescope.analyses.check import Rules, evaluate
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.installed_guards import pinned_state, read_tree
from compilescope.ingest.reader import read_trace

from ..conftest import line_holding, report, run_cli, torch213, torch213_moved


def _trees(log: str) -> dict[str, str]:
    """compile id ("[0/1]") -> its dynamo_cpp_guards_str payload, tabs stripped."""
    text = gzip.open(torch213(log), "rt").read()
    return {f"[{m[1]}/{m[2]}]": re.sub(r"(?m)^\t", "", m[3]) for m in re.finditer(
        r'^V[^\n]*\] \{"dynamo_cpp_guards_str": [^\n]*"frame_id": (\d+), "frame_compile_id": (\d+)[^\n]*\n'
        r'((?:\t[^\n]*\n)*)', text, re.M)}


def _stacks(log: str) -> dict[str, list[tuple[str, int]]]:
    """compile id ("[0/1]") -> its dynamo_start stack as the raw log writes it, outermost first: (function, line)."""
    records = [json.loads(line.split("] ", 1)[1]) for line in gzip.open(torch213(log), "rt")
               if '] {"dynamo_start": ' in line]
    return {f"[{r['frame_id']}/{r['frame_compile_id']}]": [(f["name"], f["line"]) for f in r["dynamo_start"]["stack"]]
            for r in records if r["attempt"] == 0}


def _frame(log: str):
    with read_trace(str(torch213(log))) as trace:
        [frame] = insights(trace).recompiles.frames
        return frame


BLOCK = "L['self']._modules['block']"
BLOCK_HOOK = re.escape(f"ValueManager: GuardManager: source={BLOCK}._forward_hooks[")


def test_hook_on_a_submodule_of_the_users_own_class_registered_after_compiling_is_named():
    # module_swap.py line 53: model.block.register_forward_hook(...) after the first compiled call (line 51); Block is
    # the program's own class, not one of torch.nn's. [0/0] guards the block but none of its hooks, [0/1] one hook.
    trees = _trees("module_swap_hook.log.gz")
    assert f"source={BLOCK}, accessed_by=DictGetItemGuardAccessor('block'), type=<class '__main__.Block'>" in trees[
        "[0/0]"]
    assert f"{BLOCK}._forward_hooks" not in trees["[0/0]"]
    assert len(re.findall(BLOCK_HOOK, trees["[0/1]"])) == 1
    assert pinned_state(read_tree(trees["[0/0]"]))[f"{BLOCK}._forward_hooks"] == "0"
    assert pinned_state(read_tree(trees["[0/1]"]))[f"{BLOCK}._forward_hooks"] == "1"
    # [0/1]'s reason is grad mode (validation under no_grad after eval()): the hook is in no reason, only the trees
    [step] = _frame("module_swap_hook.log.gz").steps
    assert step.guard.guard.startswith("GLOBAL_STATE changed: grad_mode")
    assert [(c.name, c.before, c.after, c.kind) for c in step.also_changed] == [
        ("self.block.norm.training", "True", "False", "training"), ("self.block", "0", "1", "hook")]
    [hooked] = [a for a in _frame("module_swap_hook.log.gz").advice if a.startswith("A hook was registered")]
    assert hooked.startswith("A hook was registered on self.block after the function was compiled") and "[0/1]" in hooked


def test_a_hook_registered_before_compiling_and_a_swapped_block_say_nothing_of_hooks():
    # _fixed: the hook registered before torch.compile (line 48): [0/0] already guards it, and so does [0/1]
    trees = _trees("module_swap_fixed.log.gz")
    assert [len(re.findall(BLOCK_HOOK, trees[c])) for c in ("[0/0]", "[0/1]")] == [1, 1]
    # _swap: model.block = Block() (line 55) had no hook before or after
    assert not any(f"{BLOCK}._forward_hooks" in tree for tree in _trees("module_swap.log.gz").values())
    for log in ("module_swap_fixed.log.gz", "module_swap.log.gz"):
        frame = _frame(log)
        assert not any(a.startswith("A hook was registered") for a in frame.advice)
        assert [(c.name, c.kind) for st in frame.steps for c in st.also_changed] == [
            ("self.block.norm.training", "training")]


def test_a_block_swapped_for_one_of_the_same_type_is_no_recompile():
    # model.block = Block() after the first compiled call: [0/0] checks the block's type, not its identity, and its
    # parameters as inputs (TENSOR_MATCH), so the fresh block runs in the same graph (the program prints that the
    # compiled result matches eager's); the one recompile is the eval() under no_grad
    tree = _trees("module_swap.log.gz")["[0/0]"]
    assert re.search(re.escape(f"TYPE_MATCH: ___check_type_id({BLOCK}, ") + r"\d+\), type=<class '__main__.Block'>",
                     tree)
    assert f"ID_MATCH: ___check_obj_id({BLOCK}, " not in tree
    assert f"TENSOR_MATCH: check_tensor({BLOCK}._modules['linear']._parameters['weight'], Parameter" in tree
    [step] = _frame("module_swap.log.gz").steps
    assert step.compile_id == "[0/1]" and step.guard.guard.startswith("GLOBAL_STATE changed: grad_mode")
    assert step.expected == "training"


def _hook_findings(log: str) -> list:
    with read_trace(str(torch213(log))) as trace:
        return [f for f in insights(trace).findings if "registered after" in f.title]


def test_a_hook_registered_after_compiling_is_a_warning_though_the_recompile_was_expected():
    # _hook: the one recompile is the eval() under no_grad (expected, an INFO), but the program's two compiled calls
    # after line 53 ran without the hook (it prints "hook ran 2 times (eager: 4)"): [0/0] guards no hooks of the block
    [finding] = _hook_findings("module_swap_hook.log.gz")
    assert finding.severity == "warning" and finding.section == "recompiles"
    assert finding.title == ("self.block: 1 forward hook registered after forward was compiled; calls served by [0/0] "
                             "run without it")
    assert finding.detail.startswith("[0/0] guards no hooks of self.block, [0/1] 1 ([0/1] compiled for another change)")
    # module_state: the hook on model.head after step 0, found by [0/1] (compiled for self.scale)
    [finding] = _hook_findings("module_state.log.gz")
    assert finding.title.startswith("self.head: 1 forward hook registered after forward was compiled; calls served by "
                                    "[0/0]")
    # the hook registered first, or no hook at all: nothing
    assert _hook_findings("module_swap_fixed.log.gz") == _hook_findings("module_swap.log.gz") == []


def _facts(log: str):
    with read_trace(str(torch213(log))) as trace:
        return run_facts(analyze(trace))


def test_check_no_late_hooks_fails_the_hook_registered_after_compiling(capsys):
    # _hook: [0/0]'s tree guards no hooks of the block, [0/1]'s one (read above); the one recompile is the eval()
    # under no_grad, expected, so max-avoidable-recompiles 0 passes: only the new rule fails it
    assert run_cli("check", torch213("module_swap_hook.log.gz"), "--max-avoidable-recompiles", "0") == 0
    capsys.readouterr()
    assert run_cli("check", torch213("module_swap_hook.log.gz"), "--no-late-hooks") == 1
    assert capsys.readouterr().out.strip() == (
        "no-late-hooks: 1 hook registered after compiling, none allowed (register hooks before the first compiled "
        "call): self.block: 1 forward hook registered after forward was compiled; calls [0/0] served after it ran "
        "without it (found by [0/1]'s guards)")
    # the hook registered before torch.compile (module_swap _fixed, module_state _fixed: every tree guards it): a pass,
    # which says what the log cannot show
    for log in ("module_swap_fixed.log.gz", "module_state_fixed.log.gz"):
        assert run_cli("check", torch213(log), "--no-late-hooks") == 0
        assert ("no-late-hooks passed: 0 hooks registered after compiling (as far as the log shows: only a recompile "
                "for something else reveals one") in capsys.readouterr().out
    # facts saved before they were kept: asked for and not checkable, a failure
    old = _facts("module_swap_fixed.log.gz")
    old.late_hooks = None
    [result] = evaluate({None: old}, Rules(no_late_hooks=True))
    assert not result.passed and "did not keep them" in result.message


def test_each_rule_whose_facts_were_not_kept_fails_and_one_whose_facts_were_kept_is_checked():
    """Facts saved by a compilescope before a rule's facts were kept (None, or aoti_deploy_static's real package with
    its one_shape key removed): asked for and not checkable, each fails naming the rule; the same facts kept are
    checked by the rule itself (module_swap_fixed draws no random numbers and writes through no custom op: a pass)."""
    import dataclasses

    fixed = _facts("module_swap_fixed.log.gz")
    with read_trace(str(torch213("aoti_deploy_static.log.gz"))) as trace:
        static = run_facts(analyze(trace))
    old_package = dataclasses.replace(static, aoti_packages=[
        {k: v for k, v in p.items() if k != "one_shape"} for p in static.aoti_packages])
    assert static.aoti_packages and all(p["one_shape"] for p in static.aoti_packages)
    cases = [(Rules(no_inductor_random=True), fixed, dataclasses.replace(fixed, numerics=None), "no-inductor-random"),
             (Rules(no_custom_op_mutations=True), fixed, dataclasses.replace(fixed, numerics=None),
              "no-custom-op-mutations"),
             (Rules(no_static_aoti_packages=True), static, old_package, "no-static-aoti-packages")]
    for rules, kept, old, name in cases:
        [result] = evaluate({None: old}, rules)
        assert (result.name, result.passed) == (name, False)
        assert result.message == (f"{name}: the facts were saved by a compilescope that did not keep them: "
                                  "check the log itself")
        [result] = evaluate({None: kept}, rules)
        assert result.name == name and "did not keep" not in result.message
    # the static package, kept, is checked: one shape only, a failure of the rule's own
    [result] = evaluate({None: static}, Rules(no_static_aoti_packages=True))
    assert result.message.startswith("no-static-aoti-packages: 1 AOTInductor package accepting one shape only")
    [result] = evaluate({None: dataclasses.replace(fixed, user_kernels=None)}, Rules(user_kernels=["scaled_add_kernel"]))
    assert (result.name, result.description, result.passed) == ("user-kernel", "scaled_add_kernel in the compiled code",
                                                                False)
    assert result.message == ("user-kernel: the facts were saved by a compilescope that did not keep the user's "
                              "kernels: check the log itself")
    [result] = evaluate({None: fixed}, Rules(user_kernels=["scaled_add_kernel"]))
    assert "no compiled code in the log holds your Triton kernel scaled_add_kernel" in result.message


def test_diff_says_the_late_hook_of_one_run():
    hook, fixed = _facts("module_swap_hook.log.gz"), _facts("module_swap_fixed.log.gz")
    assert hook.late_hooks == [{"frame": next(iter(hook.frames)), "function": "forward", "module": "self.block",
                                "hooks": "1 forward hook", "served_by": "[0/0]", "found_by": "[0/1]"}]
    assert fixed.late_hooks == []
    [gone] = [c for c in diff_runs(hook, fixed).changes if c.detail.get("late_hook")]
    assert (gone.section, gone.kind, gone.direction) == ("recompiles", "removed", "better")
    assert gone.title == ("self.block: 1 forward hook registered after forward was compiled in A only: calls A's [0/0] "
                          "served after it ran without it (found by [0/1]'s guards)")
    [new] = [c for c in diff_runs(fixed, hook).changes if c.detail.get("late_hook")]
    assert (new.kind, new.direction) == ("added", "worse") and "in B only: calls B's [0/0]" in new.title


def test_the_grad_mode_recompile_of_a_validation_call_is_not_advised_away():
    # [0/1] "GLOBAL_STATE changed: grad_mode", expected (eval(): norm.training True -> False in the trees)
    [state] = [a for a in _frame("module_swap_fixed.log.gz").advice if a.startswith("Calls run under a different")]
    assert "Expected here, as the same calls switched a module's mode (.eval() or .train())" in state
    assert "one setting everywhere" not in state and "costs one compile" in state
    # module_state: [0/4] is grad mode too, back to train() after validation, avoidable (its setting [0/2] had):
    # each said as what it is, the validation's still not advised away
    [state] = [a for a in _frame("module_state.log.gz").advice if a.startswith("Calls run under a different")]
    assert "[0/3] is expected" in state and "[0/4] is avoidable" in state and "one setting everywhere" not in state


def _sizes(log: str) -> list:
    with read_trace(str(torch213(log))) as trace:
        return insights(trace).dynamic_shapes.sizes


def test_an_int_read_with_item_is_a_value_not_a_size():
    # module_swap_hook's create_symbol events: s11 of "..._buffers['num_batches_tracked'].item()" and s68 of
    # "G['hook_calls'].item()", both backed, range [-int_oo, int_oo]: ints read from 0-dim tensors, no size
    text = gzip.open(torch213("module_swap_hook.log.gz"), "rt").read()
    sources = re.findall(r'"create_symbol": \{"symbol": "(s\d+)", [^\n]*?"source": "([^"]*)"', text)
    assert sorted(sources) == [("s11", "L['self']._modules['block']._modules['norm']._buffers['num_batches_tracked']"
                                       ".item()"), ("s68", "G['hook_calls'].item()")]
    sizes = _sizes("module_swap_hook.log.gz")
    assert [(z.symbol_names, z.kind, z.from_item, z.unbacked) for z in sizes] == [
        (["s11"], "value", True, False), (["s68"], "value", True, False)]
    with read_trace(str(torch213("module_swap_hook.log.gz"))) as trace:
        ds = insights(trace).dynamic_shapes
        assert (ds.kind, ds.counts, ds.overview) == ("value", "2 values", "2 values compiled as dynamic")
    # data_dependent: s2 is the value of `(x.abs() > 1).sum().item()` passed on past the break at line 32 (source
    # L['___stack0']), s38 the size of `h[h > 0]` (L['___stack0'].size()[0]): one value, one size
    assert [(z.symbol_names, z.kind) for z in _sizes("data_dependent.log.gz")] == [(["s2"], "value"), (["s38"], "size")]
    # item_break: zf2, the float loss.item() passed on: a value, as before
    assert [(z.symbol_names, z.kind, z.from_item) for z in _sizes("item_break.log.gz")] == [(["zf2"], "value", True)]


def test_check_baseline_fails_a_late_hook_the_baseline_does_not_have(capsys):
    # _hook against _fixed: the same one grad-mode recompile in each (no more recompiles, no new break), but _hook's
    # block hook is registered after compiling ([0/0]'s tree guards no hooks of it, [0/1]'s one: read above), _fixed's
    # before: only the late hook is new, which `diff` reports; the gate failed nothing for it
    fixed, hook = torch213("module_swap_fixed.log.gz"), torch213("module_swap_hook.log.gz")
    assert run_cli("check", hook, "--baseline", fixed) == 1
    out = capsys.readouterr().out
    assert ("baseline-late-hooks: self.block: 1 forward hook registered after forward was compiled; calls [0/0] served "
            "after it ran without it (found by [0/1]'s guards)") in out
    assert "baseline-recompiles" not in out  # (a pass: the run recompiled as often)
    # the fix against the hook: nothing new, a pass; the hook against itself: the baseline has it, a pass
    for run, base in ((fixed, hook), (hook, hook)):
        assert run_cli("check", run, "--baseline", base, "--json") == 0
        [rule] = [r for r in json.loads(capsys.readouterr().out)["rules"] if r["rule"] == "baseline-late-hooks"]
        assert rule["passed"] and rule["message"] == "no regression"
    # neither has one: the rule is not listed (as baseline-custom-op-mutations)
    assert run_cli("check", fixed, "--baseline", fixed, "--json") == 0
    assert "baseline-late-hooks" not in capsys.readouterr().out
    # facts saved before they were kept: not checkable, a failure
    old, run = _facts("module_swap_fixed.log.gz"), _facts("module_swap_hook.log.gz")
    old.late_hooks = None
    [result] = [r for r in evaluate({None: run}, Rules(), baseline={None: old}) if r.name == "baseline-late-hooks"]
    assert not result.passed and "did not keep them" in result.message


def _lines_holding(program, text: str) -> list[int]:
    return [n for n, src in enumerate(program.read_text().splitlines(), 1) if text in src]


def test_the_source_page_marks_the_lines_that_registered_the_late_hook_and_switched_the_mode(tmp_path):
    """torch logs no line for either change: [0/1]'s failed guard is grad mode at `compiled(x)` (line 62), and the
    trees tell the rest (test above): block.norm's training True → False, block's forward hooks 0 → 1. The program
    calls model.eval() once, so that line is the one; it registers the hook on model.block on two lines: the _fixed
    variant's, in main() before `torch.compile(model)` with no loop around them, ran before [0/0] (whose guards would
    count it) and is not marked; the _hook variant's, after, is the one."""
    program = torch213("module_swap_hook.log.gz").parents[1] / "programs" / "module_swap.py"
    registers = _lines_holding(program, "model.block.register_forward_hook(count_calls)")
    assert len(registers) == 2
    evaluates = line_holding(program, "model.eval()  # validation")
    results = analyze(read_trace(torch213_moved("module_swap_hook.log.gz", tmp_path)))
    (page,) = [f for f in results.sources.files if f.path.endswith("module_swap.py")]
    marked = {line: [(c["recompile"], c["kind"]) for c in n.state_changes] for line, n in page.notes.items()
              if n.state_changes}
    assert registers[0] < line_holding(program, "compiled = torch.compile(model") < registers[1]
    assert marked == {registers[1]: [("[0/1]", "hook")], evaluates: [("[0/1]", "training")]}
    assert page.notes[registers[1]].state_changes[0]["text"].startswith(
        "registers a hook on self.block after forward was compiled ([0/0]'s guards count none of its hooks, [0/1]'s 1 "
        "forward hook)")
    assert page.notes[evaluates].state_changes[0]["text"].startswith(
        "switches self.block.norm to eval mode (self.block.norm.training True → False)")
    # The page says it on those lines
    out = tmp_path / "report"
    report(torch213_moved("module_swap_hook.log.gz", tmp_path), out)
    html = (out / "sources" / next(p.name for p in (out / "sources").iterdir() if "module_swap" in p.name)).read_text()
    assert html.count("hook registered late ([0/1])") == 1 and html.count("mode switched ([0/1])") == 1
    # _swap registers no hook: only the eval() line; a file that changed since the run (its quoted lines moved) is
    # not marked at all
    swap = tmp_path / "swap"
    swap.mkdir()
    results = analyze(read_trace(torch213_moved("module_swap.log.gz", swap)))
    (page,) = [f for f in results.sources.files if f.path.endswith("module_swap.py")]
    assert [line for line, n in page.notes.items() if n.state_changes] == [evaluates]
    moved = tmp_path / "moved_programs"
    moved.mkdir()
    (moved / "module_swap.py").write_text("\n" + program.read_text())
    changed = tmp_path / "changed"
    changed.mkdir()
    results = analyze(read_trace(torch213_moved("module_swap_hook.log.gz", changed, moved)))
    assert not any(n.state_changes for f in results.sources.files for n in f.notes.values())


def test_which_calls_can_have_made_the_change():
    """The receivers and calls change_lines takes, for the changes module_swap_hook.log's trees show (sources as
    torch wrote them): a mode set on the module or one holding it, a hook registered on that module; not a sibling,
    not the parent's own hook, not a comment or a string, not a hook removed."""
    import ast

    from compilescope.analyses.recompiles import StateChange
    from compilescope.analyses.state_lines import change_lines

    norm = StateChange(f"{BLOCK}._modules['norm'].training", "True", "False")
    hook = StateChange(f"{BLOCK}._forward_hooks", "0", "1")
    source = "\n".join([
        "model.eval()", "model.block.train(False)", "model.block.norm.train(mode=False)", "model.head.eval()",
        "model.train()", "model.block.eval(True)", "# model.eval()", "print('model.eval()')",
        "model.block.register_forward_hook(f)", "trainer.model.block.register_forward_hook(f)",
        "model.register_forward_hook(f)", "model.head.register_forward_hook(f)",
        "model.block.register_forward_pre_hook(f)"])
    tree = ast.parse(source)
    assert change_lines(tree, norm) == [1, 2, 3]
    assert change_lines(tree, hook) == [9, 10]
    assert change_lines(tree, StateChange(f"{BLOCK}._forward_hooks", "1", "0")) == []  # (removed: no registration)
    assert change_lines(tree, StateChange(f"{BLOCK}._modules['norm'].training", "False", "True")) == [5]
    # A line that runs once before its module is compiled, in the same function, is not one: every compile's guards
    # start from it. In a loop around the compile it may run after one; another module's compile does not count.
    ordered = ast.parse("\n".join([
        "def main():", "    model.block.register_forward_hook(f)", "    model.eval()", "    compiled = torch.compile(model)",
        "    model.block.register_forward_hook(f)", "    for step in range(3):",
        "        model.block.register_forward_hook(f)", "        model.compile()", "    other.block.eval()",
        "    compiled2 = torch.compile(model.head)"]))
    assert change_lines(ordered, hook) == [5, 7]
    assert change_lines(ordered, norm) == [9]


def test_the_source_page_marks_assignments_requires_grad_and_a_trainers_switches(tmp_path):
    """module_mode_set.py: a Trainer switches with self.model.eval() / .train(), the program assigns
    `p.requires_grad = False` over model.backbone.parameters(), `model.dropout.training = False`, then calls
    model.head.weight.requires_grad_(False). The raw log's guard trees pin dropout.training True, False, True, False,
    False for [0/0]..[0/4], backbone's weight and bias requires_grad True in [0/0], [0/1] and False from [0/2], head's
    weight False only in [0/4], head's bias True in all five. The failed guards: [0/1] and [0/2] grad_mode (0/1, 0/0),
    [0/3] "0/2: self._modules['dropout'].training == True", [0/4] "0/3: tensor
    'self._modules['head']._parameters['weight']' requires_grad mismatch. expected requires_grad=1". Dropout to False
    ([0/1], [0/3]) may be eval() or the assignment: text cannot tell, so each is one of two; head's bias (set to the
    True it was) is not marked, nor train() for a change to False. Dropout to False ([0/1], [0/3]) may be eval() or
    the assignment by text alone; the dynamo_start stacks tell which: [0/1]'s passes through validate at line 40
    (`self.compiled(x)`, two lines after its eval()), [0/3]'s through main at line 55, the line after the assignment:
    each is marked for its own recompile only."""
    program = torch213("module_mode_set.log.gz").parents[1] / "programs" / "module_mode_set.py"
    evaluates = line_holding(program, "self.model.eval()  # validation")
    trains = line_holding(program, "        self.model.train()")
    assigns = line_holding(program, "model.dropout.training = False")
    freezes = line_holding(program, "p.requires_grad = False")
    head = line_holding(program, "model.head.weight.requires_grad_(False)")
    results = analyze(read_trace(torch213_moved("module_mode_set.log.gz", tmp_path)))
    (page,) = [f for f in results.sources.files if f.path.endswith("module_mode_set.py")]
    marked = {line: [(c["recompile"], c["kind"]) for c in n.state_changes] for line, n in page.notes.items()
              if n.state_changes}
    stacks = _stacks("module_mode_set.log.gz")
    assert stacks["[0/1]"][1:3] == [("main", line_holding(program, "trainer.validate(x)")),
                                      ("validate", line_holding(program, "            self.compiled(x)"))]
    assert stacks["[0/3]"][1] == ("main", assigns + 1)
    assert marked == {evaluates: [("[0/1]", "training")], assigns: [("[0/3]", "training")],
                      trains: [("[0/2]", "training")], freezes: [("[0/2]", "requires_grad")],
                      head: [("[0/4]", "requires_grad")]}
    assert page.notes[assigns].state_changes[0]["text"].startswith(
        "switches self.dropout to eval mode (self.dropout.training True → False): forward was compiled again as [0/3]")
    assert page.notes[head].state_changes[0]["text"].startswith(
        "sets self.head.weight's requires_grad (self.head.weight.requires_grad True → False: a layer frozen)")
    out = tmp_path / "report"
    report(torch213_moved("module_mode_set.log.gz", tmp_path), out)
    html = next(p for p in (out / "sources").iterdir() if "module_mode_set" in p.name).read_text()
    assert html.count("requires_grad set ([0/") == 2 and html.count("mode switched ([0/") == 3


def test_which_assignments_loops_and_chains_can_have_made_the_change():
    """change_lines beyond calls on a name: an assignment sets only its own module's flag; a parameter's requires_grad
    by requires_grad_() on it or a holder, by assignment on it, or on a loop's variable over a holder's parameters; a
    chain at the root only where its last name is one the file compiles (`self.model`, not `self.head`), and
    `x.requires_grad_()` at the root only on a name the file compiles (inputs are tensors too)."""
    import ast

    from compilescope.analyses.recompiles import StateChange
    from compilescope.analyses.state_lines import change_lines

    dropout = StateChange("L['self']._modules['dropout'].training", "True", "False")
    weight = StateChange("L['self']._modules['fc']._parameters['weight'].requires_grad", "True", "False")
    source = "\n".join([
        "self.compiled = torch.compile(model)", "model.dropout.training = False", "model.training = False",
        "self.model.eval()", "self.head.eval()", "self.compiled.eval()", "model.fc.weight.requires_grad = False",
        "model.fc.requires_grad = False", "model.fc.requires_grad_(False)", "model.requires_grad_(False)",
        "x.requires_grad_(False)", "for n, p in model.fc.named_parameters():", "    p.requires_grad_(False)",
        "for p in model.head.parameters():", "    p.requires_grad = False", "model.fc.weight.requires_grad = flag",
        "model.fc.weight.requires_grad_()", "model.dropout.training = True"])
    tree = ast.parse(source)
    assert change_lines(tree, dropout) == [2, 4, 6]
    assert change_lines(tree, weight) == [7, 9, 10, 13]
    assert change_lines(tree, StateChange(weight.source, "False", "True")) == [17]
    assert change_lines(ast.parse(source.replace("torch.compile(model)", "make(model)")), dropout) == [2]
