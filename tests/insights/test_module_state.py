"""Module state that recompiles (module_state.py): a hook registered after the first compiled call, eval()/train()
for validation, a backbone unfrozen, a Python float attribute set per step. torch names one failing guard per cache
entry, so a mode switched or a hook registered along with another change is in no reason: what the guard trees of the
two compiles say changed too, checked against the raw log and the program."""

from __future__ import annotations

import gzip
import importlib
import io
import re
from collections import Counter

import pytest
from rich.console import Console

from compilescope.analyses.analyze import analyze
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.installed_guards import pinned_lengths
from compilescope.analyses.recompiles.advice import ADVICE
from compilescope.analyses.sources.analysis import analyze_sources
from compilescope.ingest.reader import read_trace
from compilescope.model.payloads import PayloadRef
from compilescope.model.trace import Trace
from compilescope.render.terminal import print_summary

from ..conftest import line_holding, report, run_cli, torch213, torch213_moved


def _text(log: str) -> str:
    return gzip.open(torch213(log), "rt").read()


def _artifacts(text: str, name: str) -> dict[str, str]:
    """compile id ("[0/3]") -> payload of each event named name (an envelope's first key, or an artifact's name)."""
    found: dict[str, str] = {}
    for m in re.finditer(r'^V[^\n]*\] \{"(?:artifact": \{"name": ")?' + name + r'"[^\n]*"frame_id": (\d+), '
                         r'"frame_compile_id": (\d+)[^\n]*\n((?:\t[^\n]*\n)*)', text, re.M):
        found[f"[{m[1]}/{m[2]}]"] = m[3]
    return found


def _frame(log: str):
    with read_trace(str(torch213(log))) as trace:
        [frame] = insights(trace).recompiles.frames
        return frame


def _steps(log: str):
    return {st.compile_id: st for st in _frame(log).steps}


def test_eval_behind_grad_mode_is_named_from_the_guard_trees():
    # model.eval() under torch.no_grad() (program line 66-68): torch's reason names only grad mode
    text = _text("module_state.log.gz")
    reasons, trees = _artifacts(text, "recompile_reasons"), _artifacts(text, "dynamo_cpp_guards_str")
    assert "GLOBAL_STATE changed: grad_mode" in reasons["[0/3]"] and "training" not in reasons["[0/3]"]
    assert "L['self']._modules['dropout'].training == True" in trees["[0/2]"]
    assert "L['self']._modules['dropout'].training == False" in trees["[0/3]"]
    # and the hook's list grew with the call, its length guard hidden behind grad mode too: [0/2]'s tree checks
    # `len(G['activations']) == 1`, [0/3]'s `== 2`
    assert "LENGTH_CHECK: len(G['activations']) == 1 " in trees["[0/2]"]
    assert "LENGTH_CHECK: len(G['activations']) == 2 " in trees["[0/3]"]
    steps = _steps("module_state.log.gz")
    assert [(c.name, c.before, c.after, c.kind) for c in steps["[0/3]"].also_changed] == [
        ("self.dropout.training", "True", "False", "training"), ("activations", "1", "2", "length")]
    # back to model.train(): [0/4]'s tree pins it True again
    assert "L['self']._modules['dropout'].training == True" in trees["[0/4]"]
    assert [(c.name, c.before, c.after) for c in steps["[0/4]"].also_changed] == [
        ("self.dropout.training", "False", "True")]


def test_unfreeze_behind_a_length_guard_is_named():
    # requires_grad_(True) after step 3: [0/5]'s reason is the activations list's length, not the unfreeze
    text = _text("module_state.log.gz")
    reasons, trees = _artifacts(text, "recompile_reasons"), _artifacts(text, "dynamo_cpp_guards_str")
    assert "requires_grad" not in reasons["[0/5]"] and "len(G['activations'])" in reasons["[0/5]"]
    for param in ("weight", "bias"):
        source = f"check_tensor(L['self']._modules['backbone']._parameters['{param}'], Parameter"
        assert re.search(re.escape(source) + r"[^\n]*requires_grad=False", trees["[0/4]"])
        assert re.search(re.escape(source) + r"[^\n]*requires_grad=True", trees["[0/5]"])
    changes = _steps("module_state.log.gz")["[0/5]"].also_changed
    assert sorted((c.name, c.before, c.after, c.kind) for c in changes) == [
        ("self.backbone.bias.requires_grad", "False", "True", "requires_grad"),
        ("self.backbone.weight.requires_grad", "False", "True", "requires_grad")]


def test_hook_registered_after_compiling_is_named_with_advice():
    # the hook on model.head is registered after step 0: [0/0] guarded no hooks of head, [0/1] guards one hook
    text = _text("module_state.log.gz")
    trees = _artifacts(text, "dynamo_cpp_guards_str")
    assert "source=L['self']._modules['head']," in trees["[0/0]"]
    assert "_modules['head']._forward_hooks" not in trees["[0/0]"]
    assert len(re.findall(r"ValueManager: GuardManager: source=L\['self'\]\._modules\['head'\]\._forward_hooks\[",
                          trees["[0/1]"])) == 1
    steps = _steps("module_state.log.gz")
    assert [(c.name, c.before, c.after, c.kind) for c in steps["[0/1]"].also_changed] == [
        ("self.head", "0", "1", "hook")]
    # [0/1]'s own reason is the float attribute, named as torch named it
    assert steps["[0/1]"].guard.guard == "self.scale == 0.5"
    # compiles whose trees pin nothing differently say nothing more
    assert steps["[0/2]"].also_changed == [] and steps["[0/6]"].also_changed == []
    advice = _frame("module_state.log.gz").advice
    hooked = [a for a in advice if a.startswith("A hook was registered on self.head")]
    assert len(hooked) == 1 and "[0/1]" in hooked[0] and "before the first compiled call" in hooked[0]


def test_fixed_variant_registers_the_hook_first_and_unfreezes_once():
    text = _text("module_state_fixed.log.gz")
    trees = _artifacts(text, "dynamo_cpp_guards_str")
    # hook registered before torch.compile: the first compile already guards it
    assert "_modules['head']._forward_hooks" in trees["[0/0]"]
    frame = _frame("module_state_fixed.log.gz")
    assert not any(a.startswith("A hook was registered") for a in frame.advice)
    assert all(c.kind != "hook" for st in frame.steps for c in st.also_changed)
    # the unfreeze is [0/2]'s own reason here ([0/0] failed it first): a parameter's requires_grad, not "calls pass
    # tensors that require grad"
    reasons = _artifacts(text, "recompile_reasons")
    assert "\"0/0: tensor 'self._modules['backbone']._parameters['bias']' requires_grad mismatch" in reasons["[0/2]"]
    assert ADVICE["requires_grad"] not in frame.advice
    [param] = [a for a in frame.advice if "changed requires_grad" in a]
    assert param.startswith("`self.backbone.bias`") and "force_parameter_static_shapes does not apply" in param


def test_terminal_says_what_else_changed():
    with read_trace(str(torch213("module_state.log.gz"))) as trace:
        console = Console(width=200, color_system=None, record=True, file=io.StringIO())
        print_summary(insights(trace), console)
        out = console.export_text()
    assert "also changed since [0/2]: self.dropout.training True → False" in out
    assert "also changed since [0/0]: self.head: 1 forward hook now, none before" in out


def test_what_the_failing_guard_names_is_not_said_again():
    # fixed [0/2]: torch's reason names the bias; the weight, unfrozen by the same requires_grad_(True), it does not
    reason = _artifacts(_text("module_state_fixed.log.gz"), "recompile_reasons")["[0/2]"]
    assert "_parameters['bias']" in reason and "_parameters['weight']" not in reason
    changes = _steps("module_state_fixed.log.gz")["[0/2]"].also_changed
    assert [(c.name, c.before, c.after) for c in changes] == [("self.backbone.weight.requires_grad", "False", "True")]
    # recompiles.log: h's int argument n pinned 1, then 2 ("1/0: n == 1 ..."): the failing guard itself, no more
    with read_trace(str(torch213("recompiles.log"))) as trace:
        frames = {f.name: f for f in insights(trace).recompiles.frames}
    assert frames["h"].steps[0].guard.guard.startswith("n == 1")
    assert all(st.also_changed == [] for st in frames["h"].steps)
    # g's x requires_grad: named by its own guard ("tensor 'x' requires_grad mismatch")
    assert all(st.also_changed == [] for st in frames["g"].steps)


def test_report_page_says_what_else_changed(tmp_path):
    report(torch213("module_state.log.gz"), tmp_path)
    pages = " ".join(p.read_text() for p in tmp_path.glob("*.html"))
    assert ("also changed since [0/2]: <code>self.dropout.training</code> True → False (.eval() or .train(): one "
            "compile per mode, expected)") in pages
    assert "also changed since [0/0]: <code>self.head</code>: 1 forward hook now, none before" in pages


def _pinned_lengths(tree: str) -> dict[str, int]:
    """G['x'] -> the length a guard tree's LENGTH_CHECK / DICT_LENGTH fixes (0: `not G['x']`)."""
    return {m[1] or m[3]: int(m[2] or 0) for m in re.finditer(
        r"\+- (?:LENGTH_CHECK|DICT_LENGTH): (?:len\((G\[[^)]+\])\) == (\d+)|not (G\[\S+\]))", tree)}


def test_length_advice_says_how_often_the_length_changed_and_whether_it_keeps_changing():
    # module_state: the hook appends to `activations` in every compiled call; [0/0] ran before the hook (no guard on
    # it), then each tree pins the next length
    trees = _artifacts(_text("module_state.log.gz"), "dynamo_cpp_guards_str")
    assert [_pinned_lengths(trees[f"[0/{i}]"]).get("G['activations']") for i in range(7)] == [None, 0, 1, 2, 3, 4, 5]
    [grows] = [a for a in _frame("module_state.log.gz").advice if "global list activations" in a]
    assert ("which changed at 5 of the 6 recompiles ([0/2] to [0/6]: 0 → 1 → 2 → 3 → 4 → 5), the last one too, so it "
            "keeps changing") in grows
    # _late_key: the hook writes one key of `latest`: empty when [0/0] compiled, one key from then on
    trees = _artifacts(_text("module_state_late_key.log.gz"), "dynamo_cpp_guards_str")
    assert [_pinned_lengths(trees[f"[0/{i}]"])["G['latest']"] for i in range(4)] == [0, 1, 1, 1]
    [once] = [a for a in _frame("module_state_late_key.log.gz").advice if "global dict latest" in a]
    assert "which changed once (0 → 1, at [0/1]) and then stayed 1 in the 2 compiles after" in once
    assert "give it its keys before the first compiled call" in once
    for advice in (grows, once):
        assert "every call sees a new length" not in advice
    # _fixed: the dict has its key before the first call: every tree pins 1, and no advice on it
    trees = _artifacts(_text("module_state_fixed.log.gz"), "dynamo_cpp_guards_str")
    assert [_pinned_lengths(trees[f"[0/{i}]"])["G['latest']"] for i in range(len(trees))] == [1, 1, 1]
    assert not any("global dict latest" in a for a in _frame("module_state_fixed.log.gz").advice)


def _callers(text: str) -> dict[str, int]:
    """compile id -> the line of main() whose call Dynamo compiled (dynamo_start's stack)."""
    return {f"[0/{m[2]}]": int(m[1]) for m in re.finditer(
        r'"dynamo_start": \{"stack": \[.*?\{"line": (\d+), "name": "main".*?"frame_compile_id": (\d+)', text)}


def test_grad_mode_fix_is_said_once_for_both_recompiles():
    # [0/3] (validation under no_grad) and [0/4] (back to training): both failed grad mode first
    text = _text("module_state.log.gz")
    reasons = _artifacts(text, "recompile_reasons")
    assert '"0/2: GLOBAL_STATE changed: grad_mode ' in reasons["[0/3]"]
    assert '"0/3: GLOBAL_STATE changed: grad_mode ' in reasons["[0/4]"]
    callers = _callers(text)
    assert (callers["[0/2]"], callers["[0/3]"], callers["[0/4]"]) == (60, 69, 60)
    [grad] = [a for a in _frame("module_state.log.gz").advice if "grad mode" in a]
    assert ("[0/3] was called from module_state.py:69 (compiled(x)), [0/2] and [0/4] from module_state.py:60 (loss = "
            "nn.functional.mse_loss(compiled(x), y))") in grad


def test_grad_mode_advice_says_which_recompile_is_expected_and_which_avoidable():
    # [0/3] (validation: eval() under no_grad) has a setting no compile had; [0/4] (back to train()) has [0/2]'s
    # settings and recompiled because [0/2] failed on the list's length (test_a_return_to_compiled_settings_...):
    # one setting everywhere would remove the validation and not [0/4], whose fix is the length guard's
    reasons = _artifacts(_text("module_state.log.gz"), "recompile_reasons")
    assert re.search(r'"0/3: GLOBAL_STATE changed: grad_mode ",\s+"0/2: len\(G\[\'activations\'\]\) == 1 ', reasons["[0/4]"])
    [grad] = [a for a in _frame("module_state.log.gz").advice if a.startswith("Calls run under a different grad mode")]
    assert "one setting everywhere" not in grad
    assert ("[0/3] is expected, as its call switched a module's mode (.eval() or .train()): one compile for the new "
            "setting, which later calls under it reuse") in grad
    assert ("[0/4] is avoidable: [0/2] had its settings (modules' modes, parameters' requires_grad) and failed on "
            "len(G['activations']) == 1: that guard made it recompile, not the state") in grad
    # all expected (_fixed, _late_key): the one wording for them all, as before
    for log in ("module_state_fixed.log.gz", "module_state_late_key.log.gz"):
        [grad] = [a for a in _frame(log).advice if a.startswith("Calls run under a different grad mode")]
        assert "Expected here, as the same calls switched a module's mode" in grad and " is avoidable" not in grad


def test_a_parameter_is_named_as_the_code_names_it():
    # torch's reason for fixed [0/2] names the bias as Dynamo reached it; the label says self.backbone.bias
    reason = _artifacts(_text("module_state_fixed.log.gz"), "recompile_reasons")["[0/2]"]
    assert "tensor 'self._modules['backbone']._parameters['bias']' requires_grad mismatch" in reason
    guard = _steps("module_state_fixed.log.gz")["[0/2]"].guard
    assert guard.location_label == "self.backbone.bias first used at"


def _settings(tree: str) -> tuple[str, str]:
    """What a tree pins of the settings a training loop switches: dropout's mode, the backbone weight's requires_grad."""
    training = re.search(r"L\['self'\]\._modules\['dropout'\]\.training == (True|False)", tree)
    frozen = re.search(r"check_tensor\(L\['self'\]\._modules\['backbone'\]\._parameters\['weight'\], [^\n]*"
                       r"requires_grad=(True|False)", tree)
    assert training and frozen
    return training[1], frozen[1]


@pytest.mark.parametrize("log, expected, avoidable", [
    # (eval() at [0/3], the unfreeze at [0/5]; [0/4] is back to [0/0]'s settings, failing on the list's length)
    ("module_state.log.gz", ["[0/3]", "[0/5]"], ["[0/1]", "[0/2]", "[0/4]", "[0/6]"]),
    # (eval() at [0/1], the unfreeze at [0/2]: nothing avoidable left)
    ("module_state_fixed.log.gz", ["[0/1]", "[0/2]"], []),
    # (the dict's first key at [0/1]: avoidable, by giving it the key before compiling)
    ("module_state_late_key.log.gz", ["[0/2]", "[0/3]"], ["[0/1]"]),
])
def test_recompiles_to_a_setting_no_compile_had_are_expected(log, expected, avoidable):
    # expected: a compile whose settings (from its guard tree) no compile before it had; avoidable: any other
    trees = _artifacts(_text(log), "dynamo_cpp_guards_str")
    settings = [_settings(trees[f"[0/{i}]"]) for i in range(len(trees))]
    assert [f"[0/{i}]" for i in range(1, len(settings)) if settings[i] not in settings[:i]] == expected
    frame = _frame(log)
    assert [s.compile_id for s in frame.steps if s.expected] == expected
    assert frame.avoidable == avoidable


def test_a_return_to_compiled_settings_names_what_made_it_avoidable():
    # [0/4] (back to train()): torch's reasons, newest first: [0/3] failed grad mode, then [0/2], whose settings are
    # [0/4]'s, failed the list's length
    text = _text("module_state.log.gz")
    reasons = _artifacts(text, "recompile_reasons")["[0/4]"]
    assert re.search(r'"0/3: GLOBAL_STATE changed: grad_mode ",\s+"0/2: len\(G\[\'activations\'\]\) == 1 ', reasons)
    trees = _artifacts(text, "dynamo_cpp_guards_str")
    assert _settings(trees["[0/2]"]) == _settings(trees["[0/4]"]) != _settings(trees["[0/3]"])
    step = _steps("module_state.log.gz")["[0/4]"]
    assert (step.same_settings.compile_id, step.same_settings.guard) == ("[0/2]", "len(G['activations']) == 1")
    assert step.expected_text.startswith("avoidable: [0/2] had these settings")
    # the newest compile's own failed guard already says it where it had the same settings: nothing more
    assert all(_steps("module_state.log.gz")[c].same_settings is None for c in ("[0/1]", "[0/2]", "[0/6]"))


def test_check_counts_only_avoidable_recompiles(capsys):
    # module_state: 4 avoidable, 2 expected; its fix leaves none; the fix but for the dict's key leaves 1 ([0/1])
    assert run_cli("check", torch213("module_state.log.gz"), "--max-avoidable-recompiles", "0") == 1
    assert capsys.readouterr().out.startswith(
        "max-avoidable-recompiles: 4 avoidable recompiles (2 more expected, not counted: a module's mode, a "
        "parameter's requires_grad or a tensor's requires_grad from the same calling line that no compiled version "
        "had), at most 0 allowed: forward (module_state.py:30) "
        "recompiled avoidably 4 times ([0/1], [0/2], [0/4], [0/6])")
    assert run_cli("check", torch213("module_state_fixed.log.gz"), "--max-avoidable-recompiles", "0") == 0
    assert "max-avoidable-recompiles passed: 0 avoidable recompiles (2 more expected" in capsys.readouterr().out
    assert run_cli("check", torch213("module_state_late_key.log.gz"), "--max-avoidable-recompiles", "1") == 0
    assert "max-avoidable-recompiles passed: 1 avoidable recompile (2 more expected" in capsys.readouterr().out
    assert run_cli("check", torch213("module_state_late_key.log.gz"), "--max-avoidable-recompiles", "0") == 1
    assert "recompiled avoidably once ([0/1])" in capsys.readouterr().out
    # --max-recompiles counts all of them
    assert run_cli("check", torch213("module_state_fixed.log.gz"), "--max-recompiles", "1") == 1
    assert capsys.readouterr().out.startswith("max-recompiles: 2 recompiles")


def test_without_guard_trees_a_recompile_is_neither_expected_nor_avoidable(tmp_path, capsys):
    # module_state.log less its guard trees (dynamo_cpp_guards_str, which older torch does not log): torch's reasons
    # alone name grad mode at [0/3], not the eval() that came with it, so which recompiles switched a setting the log
    # cannot tell. Counted avoidable, all six failed check --max-avoidable-recompiles 0 (the log has 2 expected).
    text = _text("module_state.log.gz")
    records = re.split(r"(?m)^(?=[VIWE]\d{4} )", text)
    trees = [r for r in records if '] {"dynamo_cpp_guards_str": ' in r.split("\n", 1)[0]]
    assert len(trees) == 7
    log = tmp_path / "module_state_no_trees.log"
    log.write_text("".join(r for r in records if r not in trees))
    reasons = _artifacts(log.read_text(), "recompile_reasons")
    assert sorted(reasons) == [f"[0/{i}]" for i in range(1, 7)] and "training" not in reasons["[0/3]"]
    with read_trace(str(log)) as trace:
        found = insights(trace)
    [frame] = found.recompiles.frames
    assert frame.avoidable == [] and frame.unknown == [f"[0/{i}]" for i in range(1, 7)]
    assert all(s.expected is None for s in frame.steps)
    # [0/1] failed [0/0]'s self.scale guard, and [0/0] has no tree to compare its settings with
    assert frame.steps[0].expected_text == (
        "expected or avoidable: the log cannot tell ([0/0] has no guard tree to compare settings with)")
    # still a warning: none is known to be expected
    [recompiled] = [f for f in found.findings if f.section == "recompiles"]
    assert recompiled.severity == "warning" and "as expected" not in recompiled.title
    assert run_cli("check", log, "--max-avoidable-recompiles", "0") == 0
    assert capsys.readouterr().out.startswith(
        "max-avoidable-recompiles passed: 0 avoidable recompiles (6 more the log cannot tell expected or avoidable "
        "(no guard tree, dynamo_cpp_guards_str, to compare settings with), not counted)")


def test_one_analysis_parses_each_guard_tree_once_and_compares_recompiles_once(monkeypatch):
    # what else changed, expected or avoidable and the list's length history all read the 7 trees of the log: each
    # is parsed once, and the source pages read the insights' recompiles rather than working them out again
    # (by import_module: the package's names insights and recompiles are the functions, not their modules)
    insights_module, recompiles_module, sources_module = (
        importlib.import_module(f"compilescope.analyses.{name}") for name in ("insights.analysis", "recompiles", "sources.analysis"))

    trees = _artifacts(_text("module_state.log.gz"), "dynamo_cpp_guards_str")
    assert len(trees) == 7
    parsed: list[str] = []
    monkeypatch.setattr(recompiles_module, "pinned_state",
                        lambda tree, parse=recompiles_module.pinned_state: parsed.append(tree) or parse(tree))
    analyses: list[str] = []
    for module in (insights_module, sources_module):
        monkeypatch.setattr(module, "recompiles", lambda trace, *args, module=module, analyse=module.recompiles:
                            analyses.append(module.__name__) or analyse(trace, *args))
    with read_trace(str(torch213("module_state.log.gz"))) as trace:
        results = analyze(trace)
    assert analyses == ["compilescope.analyses.insights.analysis"]
    assert len(parsed) == 7
    # (the 7 trees, each its own: the hook's list has a new length in each but [0/0]'s)
    assert [pinned.get("G['activations']") for pinned in map(pinned_lengths, parsed)] == [None, 0, 1, 2, 3, 4, 5]
    assert results.insights.recompiles.frames[0].avoidable == ["[0/1]", "[0/2]", "[0/4]", "[0/6]"]


class _SplitCounted(str):
    """A guard tree's text that counts each time it is split into its lines."""

    splits: Counter[str]

    def splitlines(self, keepends: bool = False) -> list[str]:
        self.splits[str(self)] += 1
        return super().splitlines(keepends)


def test_a_report_splits_each_guard_tree_into_lines_once(monkeypatch):
    # module_state: one frame compiled 7 times; the recompiles read its trees for what each pins, the source pages for
    # the line each guard came from: one GuardTrees, made by analyze, parses each tree once for both
    trees = _artifacts(_text("module_state.log.gz"), "dynamo_cpp_guards_str")
    splits: Counter[str] = Counter()
    read_payload = Trace.payload_text

    def payload_text(trace: Trace, ref: PayloadRef | None) -> str:
        text = read_payload(trace, ref)
        if "TREE_GUARD_MANAGER" not in text:
            return text
        counted = _SplitCounted(text)
        counted.splits = splits
        return counted

    monkeypatch.setattr(Trace, "payload_text", payload_text)
    with read_trace(str(torch213("module_state.log.gz"))) as trace:
        results = analyze(trace)
    assert len(splits) == len(trees) == 7
    assert set(splits.values()) == {1}
    assert results.insights.recompiles.frames[0].avoidable == ["[0/1]", "[0/2]", "[0/4]", "[0/6]"]


def _reasons_listing(log: str, guard: str) -> list[str]:
    """The recompiles whose recompile_reasons list guard as failed, for any cached compile."""
    return sorted(cid for cid, reasons in _artifacts(_text(log), "recompile_reasons").items() if guard in reasons)


def _facts(log: str):
    with read_trace(str(torch213(log))) as trace:
        return run_facts(analyze(trace))


def test_diff_says_the_avoidable_recompiles_and_which_guards_still_fail():
    a, b = _facts("module_state.log.gz"), _facts("module_state_fixed.log.gz")
    changes = [c for c in diff_runs(a, b).changes if c.section == "recompiles"]
    # the hook on model.head registered after step 0 (found by [0/1]'s tree), registered first in _fixed: said apart
    [change, hook] = changes
    assert hook.kind == "removed" and hook.title.startswith("self.head: 1 forward hook registered after forward was "
                                                             "compiled in A only: calls A's [0/0] served")
    # avoidable: 4 of module_state's 6, none of _fixed's 2 (test_recompiles_to_a_setting_no_compile_had_are_expected)
    assert change.title.endswith("7 → 3 compiles (6 → 2 recompiles; avoidable 4 → 0)")
    assert (change.detail["avoidable_a"], change.detail["avoidable_b"]) == (["[0/1]", "[0/2]", "[0/4]", "[0/6]"], [])
    # grad mode: the eval() compile's guard, listed at 4 recompiles of module_state and 2 of _fixed: failing in both
    grad = "GLOBAL_STATE changed: grad_mode"
    assert _reasons_listing("module_state.log.gz", grad) == ["[0/3]", "[0/4]", "[0/5]", "[0/6]"]
    assert _reasons_listing("module_state_fixed.log.gz", grad) == ["[0/1]", "[0/2]"]
    lines = {guard: what for what, guard, _ in change.guard_lines}
    assert lines[grad] == "guard failing in both, listed at 4 → 2 recompiles"
    # the float attribute and the list are gone from _fixed: no reason of it names them
    text = _text("module_state_fixed.log.gz")
    assert "self.scale ==" not in text and "G['activations']" not in text
    assert lines["self.scale == 0.5"] == lines["not G['activations']"] == "guard no longer failing"
    # the late dict key's variant against the fix: the one avoidable recompile, the dict's first key, gone
    late = _facts("module_state_late_key.log.gz")
    [change] = [c for c in diff_runs(late, b).changes if c.section == "recompiles"]
    assert change.title.endswith("4 → 3 compiles (3 → 2 recompiles; avoidable 1 → 0)")
    assert _reasons_listing("module_state_late_key.log.gz", "not G['latest']") == ["[0/1]", "[0/3]"]
    assert [(what, guard) for what, guard, _ in change.guard_lines] == [("guard no longer failing", "not G['latest']")]


def _first_failures(log: str) -> dict[str, list[tuple[str, str]]]:
    """compile id -> the (cached compile, guard) its recompile_reasons list that no earlier recompile's listed."""
    seen: set[tuple[str, str]] = set()
    found = {}
    for cid, reasons in sorted(_artifacts(_text(log), "recompile_reasons").items(), key=lambda kv: int(kv[0][3:-1])):
        listed = {(f"[{m[1]}]", m[2].rstrip()) for m in re.finditer(r'^\t"?(\d+/\d+): (.*?)(?: {2,}#|"|$)', reasons, re.M)}
        found[cid] = sorted(listed - seen)
        seen |= listed
    return found


def test_a_line_recompiled_only_where_its_guard_failed_for_the_first_time():
    # [0/0] pinned self.scale == 0.5 (line 32); torch lists that failure again at every recompile after [0/1], as it
    # checks every cached compile, but only [0/1] recompiled for it: later ones failed a newer compile's guard first
    first = _first_failures("module_state.log.gz")
    assert [cid for cid, new in first.items() if ("[0/0]", "self.scale == 0.5") in new] == ["[0/1]"]
    assert sorted(_reasons_listing("module_state.log.gz", "0/0: self.scale == 0.5")) == [
        "[0/1]", "[0/2]", "[0/4]", "[0/5]", "[0/6]"]
    # the list's length (line 43): each of [0/2], [0/4], [0/5], [0/6] fails a guard there first
    assert {cid: [c for c, guard in new if "G['activations']" in guard] for cid, new in first.items()} == {
        "[0/1]": [], "[0/2]": ["[0/1]"], "[0/3]": [], "[0/4]": ["[0/2]"], "[0/5]": ["[0/4]"], "[0/6]": ["[0/5]"]}
    with read_trace(str(torch213("module_state.log.gz"))) as trace:
        [source] = [f for f in analyze_sources(trace).files if f.path.endswith("module_state.py")]
    assert source.notes[32].recompiled == ["[0/1]"]
    assert [note.recompile for note in source.notes[32].recompile_notes] == ["[0/1]"]
    assert source.notes[43].recompiled == ["[0/2]", "[0/4]", "[0/5]", "[0/6]"]


def test_the_source_page_marks_the_hook_registrations_and_the_mode_switches(tmp_path):
    """The trees (tests above): [0/1] counts one forward hook of head where [0/0] counted none; [0/3] pins dropout's
    training False where [0/2] pinned True, [0/4] True again. module_state.py registers the hook on model.head on two
    lines: the fixed variant's, in main() before `torch.compile(model)` with no loop around them, ran before [0/0]
    (whose guards would count that hook) and is not marked; the loop's, after step 0, is the one. It calls model.eval() and
    model.train() once each: those lines, for [0/3] and [0/4]. [0/5]'s trees pin backbone's weight and bias
    requires_grad True where [0/4]'s pinned False: model.backbone.requires_grad_(True), the one call setting it True
    (the other, before compiling, sets False). The fixed run's hook was registered before compiling: no hook line is
    marked, only its eval() for [0/1] and the unfreeze for [0/2] (its first failed guard "0/0: tensor
    'self._modules['backbone']._parameters['bias']' requires_grad mismatch. expected requires_grad=0")."""
    program = torch213("module_state.log.gz").parents[1] / "programs" / "module_state.py"
    registers = [n for n, src in enumerate(program.read_text().splitlines(), 1)
                 if "model.head.register_forward_hook(log_activation)" in src]
    evaluates, trains = line_holding(program, "model.eval()  # validation"), line_holding(program, "            model.train()")
    unfreezes = line_holding(program, "model.backbone.requires_grad_(True)")
    results = analyze(read_trace(torch213_moved("module_state.log.gz", tmp_path)))
    (page,) = [f for f in results.sources.files if f.path.endswith("module_state.py")]
    marked = {line: [(c["recompile"], c["kind"]) for c in n.state_changes] for line, n in page.notes.items()
              if n.state_changes}
    assert len(registers) == 2
    assert registers[0] < line_holding(program, "compiled = torch.compile(model") < registers[1]
    assert marked == {registers[1]: [("[0/1]", "hook")],
                      evaluates: [("[0/3]", "training")], trains: [("[0/4]", "training")],
                      unfreezes: [("[0/5]", "requires_grad")]}
    assert page.notes[trains].state_changes[0]["text"] == (
        "switches self.dropout to training mode (self.dropout.training False → True): forward was compiled again as "
        "[0/4] in that mode (one compile per mode, expected)")
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    results = analyze(read_trace(torch213_moved("module_state_fixed.log.gz", fixed)))
    (page,) = [f for f in results.sources.files if f.path.endswith("module_state.py")]
    assert {line: [(c["recompile"], c["kind"]) for c in n.state_changes] for line, n in page.notes.items()
            if n.state_changes} == {evaluates: [("[0/1]", "training")], unfreezes: [("[0/2]", "requires_grad")]}


def test_the_marked_lines_are_shown_but_not_counted_as_lines_the_log_quotes(tmp_path, monkeypatch):
    """state_lines reads its lines from the file itself: comparing them with that file cannot disagree, so the page's
    "every line the log quotes (N) agrees with it" counts what it counts without them, and the file is still shown
    whole, the marked lines with their text."""
    import compilescope.analyses.sources.guards as sources_module  # (add_state_changes asks it)

    program = torch213("module_state.log.gz").parents[1] / "programs" / "module_state.py"
    log = torch213_moved("module_state.log.gz", tmp_path)
    (page,) = [f for f in analyze(read_trace(log)).sources.files if f.path.endswith("module_state.py")]
    marked = sorted(line for line, n in page.notes.items() if n.state_changes)
    assert marked == [line_holding(program, "model.head.register_forward_hook(log_activation)  # log"),
                      line_holding(program, "model.eval()  # validation"),
                      line_holding(program, "            model.train()"),
                      line_holding(program, "model.backbone.requires_grad_(True)")]
    assert page.origin == "disk" and all(page.text[line] == program.read_text().splitlines()[line - 1] for line in marked)
    monkeypatch.setattr(sources_module, "state_lines", lambda *args, **kwargs: [])
    (unmarked,) = [f for f in analyze(read_trace(log)).sources.files if f.path.endswith("module_state.py")]
    assert not any(n.state_changes for n in unmarked.notes.values())
    assert page.note == unmarked.note and "every line the log quotes (" in page.note
