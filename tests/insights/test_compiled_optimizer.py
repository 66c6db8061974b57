"""The optimizer step compiled with an LR scheduler, on a real torch 2.13 log (tests/data/torch213/README.md,
`compiled_optimizer.log.gz`, from programs/compiled_optimizer.py as `compilescope run` records it).

What a user of PyTorch's compiled-optimizer recipe meets: the Python-float learning rate the scheduler changes
recompiles Adam.step, whose fix is a tensor learning rate; the scheduler's wrapper of opt.step is in a file Dynamo
skips, so the user's function breaks there while Adam.step is compiled as frames of its own; and torch's optimizer
breaks its own graph on purpose in _use_grad, which no user can remove.
"""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.graph_breaks.wording import EXPLICIT_BREAK
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import CUDA211_LOGS, REPO, run_cli, torch213

LOG = torch213("compiled_optimizer.log.gz")
PROGRAM = REPO / "tests" / "data" / "torch213" / "programs" / "compiled_optimizer.py"


def _insights():
    with read_trace(str(LOG)) as trace:
        return insights(trace)


def _step_line() -> int:
    """The program's line that calls opt.step() inside the compiled function, read from the program itself."""
    return next(i for i, line in enumerate(PROGRAM.read_text().splitlines(), 1) if line.strip() == "opt.step()")


def _compiles_through(line: int) -> dict[str, str]:
    """Compile id -> compiled function, for every dynamo_start whose stack passes through the program's line, read
    from the raw log."""
    files: dict[int, str] = {}
    found = {}
    with gzip.open(LOG, "rt") as f:
        for text in f:
            if text.startswith("\t") or "{" not in text:
                continue
            record = json.loads(text[text.index("{"):])
            if "str" in record:
                files[record["str"][1]] = record["str"][0]
            elif "dynamo_start" in record:
                stack = record["dynamo_start"]["stack"]
                if any(files[fr["filename"]].endswith("/compiled_optimizer.py") and fr["line"] == line
                       for fr in stack[:-1]):
                    found[f"[{record['frame_id']}/{record['frame_compile_id']}]"] = stack[-1]["name"]
    return found


def test_the_float_learning_rate_recompile_gets_the_tutorials_fix():
    ins = _insights()
    [frame] = ins.recompiles.frames
    [step] = frame.steps
    assert re.search(r"param_groups\[0\]\['lr'\] == 0\.\d+", step.guard.guard)
    assert step.guard.change == "optimizer_setting" and frame.changes == ["optimizer_setting"]
    assert "lr=torch.tensor(" in frame.advice[0]
    assert not any("Python number/string argument" in a for a in frame.advice)


def test_the_optimizer_step_compiled_below_the_users_break():
    ins = _insights()
    line = _step_line()
    user = next(b for b in ins.graph_breaks.breaks if b.location.line == line)
    assert user.location.filename.endswith("compiled_optimizer.py") and not user.by_torch
    # Independently: every non-resume compile whose logged stack passes through that line.
    through = {cid: name for cid, name in _compiles_through(line).items() if not name.startswith("torch_dynamo_resume")}
    assert through and set(through.values()) == {"step"}
    [callee] = user.compiled_callees
    assert callee.function == "step" and callee.location.short == "adam.py:214"
    assert callee.compile_ids == sorted(through)
    finding = next(f for f in ins.findings if f.title.startswith(f"graph break at compiled_optimizer.py:{line}"))
    assert finding.severity == "warning" and "compiled on its own: [2/0], [2/1] step (adam.py:214)" in finding.detail


def test_torchs_own_graph_break_is_not_the_users_to_fix(capsys):
    ins = _insights()
    [torchs] = [b for b in ins.graph_breaks.breaks if b.by_torch]
    assert torchs.reason == EXPLICIT_BREAK and torchs.location.code == "torch._dynamo.graph_break()"
    assert "/torch/optim/optimizer.py" in torchs.location.filename and torchs.location.function == "_use_grad"
    assert not torchs.compiled_callees
    # Not a warning at the top: one INFO line that says where and that nothing is to change.
    assert not [f for f in ins.findings if f.severity == "warning" and " optimizer.py:" in f.title]
    [info] = [f for f in ins.findings if f.title.startswith("PyTorch breaks the graph on purpose")]
    assert info.severity == "info" and "optimizer.py:79 (_use_grad)" in info.title

    assert run_cli("summary", LOG) == 0
    out = capsys.readouterr().out
    assert "note: PyTorch's own code breaks the graph here on purpose" in out
    assert "Remove the `torch._dynamo.graph_break()` call" not in out  # torch's hint names a line in torch
    assert "compiled on its own: [2/0], [2/1] step (adam.py:214)" in out
    assert "lr=torch.tensor(0.01)" in out


def test_the_report_and_json_say_the_same(tmp_path, capsys):
    out = tmp_path / "report"
    assert run_cli(LOG, "-o", out, "--no-browser") == 0
    page = (out / "index.html").read_text()
    insights_table = page[page.index('id="insights-graph_breaks"'):]
    insights_table = insights_table[:insights_table.index("</table>")]
    assert "PyTorch&#39;s own code breaks the graph here on purpose" in insights_table
    shown = re.sub(r"<details>.*?</details>", "", insights_table, flags=re.S)  # torch's own text stays, folded
    assert "Remove the" not in shown
    assert re.search(r'compiled on its own: <a [^>]*>\[2/0\]</a>, <a [^>]*>\[2/1\]</a> <code>step</code>', shown)
    capsys.readouterr()
    assert run_cli("summary", LOG, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    breaks = data["graph_breaks"]["breaks"]
    assert [b["by_torch"] for b in breaks].count(True) == 1
    [user] = [b for b in breaks if b["compiled_callees"]]
    assert user["compiled_callees"][0]["compile_ids"] == ["[2/0]", "[2/1]"]
    assert data["recompiles"]["frames"][0]["steps"][0]["change"] == "optimizer_setting"


def test_no_other_fixture_has_either():
    """Neither idea fires where it does not belong: an ordinary break's resume functions are not callees, nor are
    compiled autograd's backward graphs (generated code) under loss.backward()."""
    logs = [torch213(name) for name in ("graph_breaks.log", "source_view.log", "compiled_autograd.log.gz",
                                        "diff_break.log.gz", "empty_graph.log", "caught_fullgraph.log.gz")]
    for name in logs + [CUDA211_LOGS / "train_break_recompile.log.gz"]:
        with read_trace(str(name)) as trace:
            ins = insights(trace)
        assert ins.graph_breaks.breaks, name
        assert not any(b.by_torch or b.compiled_callees for b in ins.graph_breaks.breaks), name


# The same recipe on an H100 under torch 2.11 (tests/data/cuda_torch211/README.md): there the float is specialized
# again at every new learning rate, so the step recompiles five times; with a tensor lr it compiles once.
CUDA_FLOAT = CUDA211_LOGS / "compiled_optimizer.log.gz"
CUDA_TENSOR = CUDA211_LOGS / "compiled_optimizer_tensor_lr.log.gz"


def _specialized_compilations(log) -> set[str]:
    """Compilations (attempts counted once) with a symbolic_shape_specialization of a float symbol, from the raw log."""
    found = set()
    with gzip.open(log, "rt") as f:
        for text in f:
            if '"symbolic_shape_specialization"' in text and not text.startswith("\t"):
                record = json.loads(text[text.index("{"):])
                if record["symbolic_shape_specialization"]["symbol"].startswith("zf"):
                    found.add(f"{record['frame_id']}/{record['frame_compile_id']}")
    return found


def test_on_cuda_every_recompile_is_the_learning_rate():
    with read_trace(str(CUDA_FLOAT)) as trace:
        ins = insights(trace)
    [frame] = ins.recompiles.frames
    assert frame.name == "step" and frame.recompiles == 5
    # The first guard is on the float itself, the next four on the value Adam's code specialized it to again.
    guards = [s.guard.guard for s in frame.steps]
    assert guards[0].startswith("self.param_groups[0]['lr'] == ")
    assert all(g.startswith("___as_tensor(self.param_groups[0]['lr']).item() == ") for g in guards[1:])
    assert {s.guard.change for s in frame.steps} == {"optimizer_setting"}
    assert "lr=torch.tensor(" in frame.advice[0]
    compilations = _specialized_compilations(CUDA_FLOAT)
    [spec] = [f for f in ins.findings if f.section == "dynamic_shapes"]
    assert spec.title == f"1 dynamic float specialized to a constant ({len(compilations)} compilations)"
    assert len(compilations) == 5 and spec.detail.startswith("self.param_groups[0]['lr'] (zf8) = 0.00466667, 0.006, ")
    # The learning rates as a user writes them, not sympy's 15 digits ("0.00466666666666667") nor Python's 17
    # ("0.004666666666666667"): in the recompile steps, the specializations and the symbols' example values
    assert [s.specialized_placement[0].text.split(" (")[0] for s in frame.steps[1:]] == [
        f"{cid} had specialized zf8 = {v}" for cid, v in (("[2/1]", "0.00466667"), ("[2/2]", "0.006"),
                                                          ("[2/3]", "0.00733333"), ("[2/4]", "0.00866667"))]
    assert [s.value_text for s in ins.dynamic_shapes.specializations][:2] == ["0.00466667", "0.00466667"]
    assert {s.value: s.value_text for s in ins.dynamic_shapes.symbols}["0.004666666666666667"] == "0.00466667"
    with read_trace(str(CUDA_TENSOR)) as trace:
        fixed = insights(trace)
    assert not fixed.recompiles.frames and not fixed.dynamic_shapes.specializations
    [user] = [b for b in fixed.graph_breaks.breaks if b.compiled_callees]
    assert [c.label for c in user.compiled_callees] == ["[2/0] step (adam.py:214)"]


def test_diff_of_the_fix_says_each_guard_once(capsys):
    assert run_cli("diff", CUDA_FLOAT, CUDA_TENSOR) in (0, 1)
    out = capsys.readouterr().out
    # (torch's step, named as the report names it: by the program's opt.step() at line 24 that called it)
    assert ("step (adam.py:214, called at compiled_optimizer.py:24): 6 → 1 compiles (5 → 0 recompiles)"
            in " ".join(out.split()))
    # Four failures of one guard at four learning rates are one line with the values and their count, not four
    # lines, nor one line with the numbers masked. The values: each `.item() == X` the raw log's guards hold.
    assert out.count("guard no longer failing: ___as_tensor(") == 1
    text = gzip.open(CUDA_FLOAT, "rt").read()
    rates = list(dict.fromkeys(re.findall(r"___as_tensor\(self\.param_groups\[0\]\['lr'\]\)\.item\(\) == ([\d.]+)", text)))
    assert len(rates) == 4
    assert (f"guard no longer failing: ___as_tensor(self.param_groups[0]['lr']).item() == one of {', '.join(rates)} "
            "(×4)") in " ".join(out.split())
    [first] = {*re.findall(r"self\.param_groups\[0\]\['lr'\] == ([\d.]+)", text[:text.index("___as_tensor(self.param_groups")])}
    assert f"guard no longer failing: self.param_groups[0]['lr'] == {first} guard" in " ".join(out.split())
    # (the source as step's code names it: torch's L['self'] is step's self)
    assert out.count("dynamic symbol for self.param_groups[0]['lr'] removed") == 1
    # Each learning rate it was specialized to, in one line: one fix (a tensor lr) undoes them all.
    values = []
    with gzip.open(CUDA_FLOAT, "rt") as f:
        for text in f:
            if '"symbolic_shape_specialization"' in text and not text.startswith("\t"):
                value = json.loads(text[text.index("{"):])["symbolic_shape_specialization"]["value"]
                values += [value] if value not in values else []
    assert len(values) == 5
    flat = " ".join(out.split())
    assert flat.count("no longer specialized:") == 1
    # Placed as the report places it: torch logged the specializations with user_stack null, so what was read (lr,
    # by step), at the symbol's line in torch's adam.py (its create_symbol's user stack) and the program's opt.step()
    # that called step
    program = (CUDA211_LOGS.parent / "programs" / "compiled_optimizer.py").read_text().splitlines()
    [call] = [n for n, line in enumerate(program, 1) if line.strip() == "opt.step()"]
    [read_at] = set(re.findall(r"\"source\": \"L\['self'\]\.param_groups\[0\]\['lr'\]\", \"user_stack\": "
                               r"\[\{\"line\": (\d+), \"name\": \"step\"", gzip.open(CUDA_FLOAT, "rt").read()))
    assert (f"no longer specialized: self.param_groups[0]['lr'] = 5 values: "
            f"{', '.join(f'{float(v):.6g}' for v in values)} (lr, read as self.param_groups[0]['lr'] by step at "
            f"torch's adam.py:{read_at}, called at compiled_optimizer.py:{call})") in flat  # (as a user writes them)
    assert "0.00466667, 0.006, 0.00733333, 0.00866667, 0.01 (lr" in flat and "0.004666666" not in flat.split("no longer specialized")[1]


def _step_graph_inputs(log) -> list[str]:
    """The inputs of step's first graph ([2/0]), from the `def forward(self, ...)` of its raw dynamo_output_graph."""
    with gzip.open(log, "rt") as f:
        lines = iter(f)
        for text in lines:
            if '"dynamo_output_graph"' in text and '"frame_id": 2, "frame_compile_id": 0,' in text:
                signature = next(line for line in lines if "def forward(self, " in line)
                return re.findall(r"(\w+): \"", signature)
    raise AssertionError("no graph [2/0]")


def test_diff_counts_the_new_graph_input_in_words(capsys):
    # With a tensor lr, step's graph takes the lr as one more input (a placeholder); nothing else in it moves.
    float_inputs, tensor_inputs = _step_graph_inputs(CUDA_FLOAT), _step_graph_inputs(CUDA_TENSOR)
    assert [i for i in tensor_inputs if i not in float_inputs] == ["L_self_param_groups_0_lr_"]
    assert len(tensor_inputs) == len(float_inputs) + 1
    assert run_cli("diff", CUDA_FLOAT, CUDA_TENSOR) == 1
    out = capsys.readouterr().out
    # "1 FX node added", not "FX nodes 1 added"
    assert ("step (adam.py:214, called at compiled_optimizer.py:24): graph [2/0] → [2/0]: 1 FX node added"
            in " ".join(out.split()))
    assert "+ placeholder L_self_param_groups_0_lr_" in out


def _cuda_step_call() -> int:
    """The line of the CUDA run's program that calls opt.step(), read from the program itself."""
    program = (CUDA211_LOGS.parent / "programs" / "compiled_optimizer.py").read_text().splitlines()
    [call] = [n for n, line in enumerate(program, 1) if line.strip() == "opt.step()"]
    return call


def test_where_the_learning_rate_was_read_comes_in_parts_the_renderers_only_write():
    # torch logged the lr's specializations with user_stack null: the page and `summary` place it where it was read,
    # in Adam's step (torch's adam.py, which names the function already), called at the program's opt.step(); the lr
    # made dynamic is placed at the same two lines, torch's and the user's call into it.
    with read_trace(str(CUDA_FLOAT)) as trace:
        ds = insights(trace).dynamic_shapes
    [spec] = ds.specialized
    read, called = spec.placement
    assert read.text == "lr, read as self.param_groups[0]['lr'] by step at torch's " and read.function_said
    assert read.location.filename.endswith("/torch/optim/adam.py") and read.location.function == "step"
    assert (called.text, called.location.short, called.function_said) == (
        ", called at ", f"compiled_optimizer.py:{_cuda_step_call()}", False)
    [size] = ds.sizes
    assert [(p.text, p.location) for p in size.placement] == [("in torch's ", read.location),
                                                              (", called at ", called.location)]


def test_a_guard_fixing_the_float_lr_is_placed_where_its_symbol_was_made():
    """The H100 run of the recipe (cuda_torch211/logs/compiled_optimizer.log.gz): each compile of Adam.step makes the
    float lr a symbol, zf8 (create_symbol, source L['self'].param_groups[0]['lr'], user stack adam.py:229 in step), and
    AOTAutograd then fixes it to its value: `guard_added_fast` "Eq(zf8, 0.00466666666666667)" with an empty user
    stack, one per compile. Such a guard is the specialization's own fact, and is placed as the specialization is:
    the line the symbol came from, the user's opt.step() call into torch (compiled_optimizer.py:24). A guard torch
    logged no line for that fixes no symbol's value stays unplaced (hf_gpt2_generate's, test_analyses)."""
    log = CUDA211_LOGS / "compiled_optimizer.log.gz"
    with gzip.open(log, "rt", encoding="utf-8") as f:
        records = [json.loads(line.split("] ", 1)[1]) for line in f if '{"guard_added_fast"' in line
                   or '{"create_symbol"' in line]
    raw_guards = [r["guard_added_fast"] for r in records if "guard_added_fast" in r]
    assert raw_guards and all(g["user_stack"] == [] and g["expr"].startswith("Eq(zf8, ") for g in raw_guards)
    created = [r["create_symbol"] for r in records if "create_symbol" in r]
    assert {(c["symbol"], c["user_stack"][-1]["line"], c["user_stack"][-1]["name"]) for c in created} == {
        ("zf8", 229, "step")}
    with read_trace(str(log)) as trace:
        ds = insights(trace).dynamic_shapes
    assert ds.unplaced_guards is None
    [place] = ds.guard_lines
    assert (place.location.short, place.location.function) == ("compiled_optimizer.py:24", "opt_step")
    assert sum(c.count for c in place.conditions) == len(raw_guards)
    assert all(g.torch_location is not None and g.torch_location.short == "adam.py:229" for g in ds.guards)
