"""The user's own Triton kernel in compiled code, on the real CUDA logs of user_triton_kernel.py (torch 2.11, H200):
launched raw and through torch.library.triton_op, at 4,096 then 8,192 elements (a recompile to dynamic)."""

from __future__ import annotations

import gzip
import re

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.analyses.diff.compiled_code import user_kernel_changes
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.run_facts.printed_graphs import graph_nodes
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.analyses.provenance import is_users_file
from compilescope.analyses.sources.file_text import is_user_source
from compilescope.analyses.user_kernels import UserKernels
from compilescope.analyses.user_locations import is_torch_file, is_triton_file
from compilescope.ingest.reader import read_trace

from ..analysis_files import def_line_here, insights_here, user_kernels_here
from ..conftest import CUDA211_LOGS, cuda211, cuda211_moved, line_holding, report, run_cli
from ..user_kernel_logs import with_copies

PROGRAM = CUDA211_LOGS.parent / "programs" / "user_triton_kernel.py"


def _raw(name: str) -> str:
    return gzip.open(cuda211(name), "rt").read()


@pytest.mark.parametrize("variant, launch_text", [("raw", "launch[(triton.cdiv(n, 1024),)]"),
                                                  ("triton_op", "return scaled_add(h, y, 0.5).sum()")])
def test_the_users_kernel_is_found_apart_from_inductors_with_its_lines(variant, launch_text, tmp_path):
    log = f"user_triton_kernel_{variant}.log.gz"
    raw = _raw(log)
    # The log: Inductor's output code defines it after "# Original path: <program>:<line>" (its @triton.jit line, the
    # line inspect.getsourcelines starts at) and marks it custom_kernel=True; its own kernels are triton_poi/red_*.
    (defined,) = set(re.findall(r"# Original path: \S+/user_triton_kernel\.py:(\d+)\n\tscaled_add_kernel_0 = ", raw))
    decorator = [n for n, src in enumerate(PROGRAM.read_text().splitlines(), 1) if src == "@triton.jit"]
    def_line = line_holding(PROGRAM, "def scaled_add_kernel(")
    assert decorator == [int(defined)] and int(defined) + 1 == def_line
    assert raw.count("custom_kernel=True") == 2  # one per compile id
    # The code's body quotes the def line (Triton keeps the source from it on): the program on disk holds it next
    assert "\t@triton.jit\n\tdef scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):\n" in raw
    found = user_kernels_here(read_trace(cuda211_moved(log, tmp_path)))
    assert [(k.compile_id, k.name, k.code_name) for k in found.kernels] == [
        ("[0/0]", "scaled_add_kernel", "scaled_add_kernel_0"), ("[0/1]", "scaled_add_kernel", "scaled_add_kernel_0")]
    for k in found.kernels:
        # said at its def, as the user knows it, where the program is on this machine; torch's line kept beside it
        assert k.defined_at is not None and (k.defined_at.line, k.decorator_line) == (def_line, int(defined))
        assert k.defined_text == f"user_triton_kernel.py:{def_line}"
        # Launched where the post-grad graph's FX comment above triton_kernel_wrapper_mutation says: the launch
        # itself when raw (the mapping's stack traces also list line 44, whose relu/mul Inductor fused before it),
        # the custom op's call as a triton_op.
        assert [u.line for u in k.launched_at] == [line_holding(PROGRAM, launch_text)]
        assert k.calls == ["scaled_add_kernel_0:2"]  # "# [Provenance debug handles] scaled_add_kernel_0:2"


@pytest.mark.parametrize("variant", ["raw", "triton_op"])
def test_each_compile_says_whether_n_was_compiled_in_or_symbolic_and_how_triton_compiled_it(variant):
    log = f"user_triton_kernel_{variant}.log.gz"
    raw = _raw(log)
    # The calls: [0/0] passes n as the number 4096 (the first call's size); [0/1], the dynamic recompile, as s77.
    calls = re.findall(r"scaled_add_kernel_0\.run\(\w+, \w+, \w+, (\w+), ([\d.]+),", raw)
    assert calls == [("4096", "0.5"), ("s77", "0.5")]
    # triton_kernel_info: "scaled_add_kernel": {"autotune_cache_state": "only 1 config", ..., "compile_time_us": N}
    infos = re.findall(r'"scaled_add_kernel": \{"autotune_cache_state": "([^"]+)", [^}]*"compile_time_us": (\d+)\}', raw)
    assert len(infos) == 2
    found = user_kernels_here(read_trace(cuda211(log)))
    for k, (n, alpha), (state, us) in zip(found.kernels, calls, infos, strict=True):
        assert [(a.name, a.value, a.symbolic) for a in k.arguments] == [("n", n, n == "s77"), ("alpha", alpha, False)]
        assert k.autotune == state == "only 1 config" and not k.autotuned
        assert k.compile_s == int(us) / 1e6
    fixed, dynamic = found.kernels
    assert "n = 4096 (compiled in)" in fixed.arguments_text and "n = s77 (symbolic)" in dynamic.arguments_text
    assert found.notes == ["scaled_add_kernel was compiled 2 times, once in each compile id: [0/0] with n = 4096 "
                           "compiled in, [0/1] with n symbolic (any size runs it without compiling again)."]


def test_a_log_without_user_kernels_has_none():
    # hf_gpt2_generate compiles only Inductor's kernels: its output code never says custom_kernel=True
    log = cuda211("hf_gpt2_generate.log.gz")
    assert "custom_kernel=True" not in gzip.open(log, "rt").read()
    assert not user_kernels_here(read_trace(log))


def test_the_summary_and_json_name_the_users_kernel(capsys, tmp_path):
    log = cuda211_moved("user_triton_kernel_raw.log.gz", tmp_path)
    assert run_cli("summary", log) == 0
    out = capsys.readouterr().out
    section = " ".join(out[out.index("Your Triton kernels (scaled_add_kernel)"):out.index("Caches (")].split())
    # (table cells wrap beside each other: each word is looked for on its own)
    assert all(w in section for w in ("defined at", "launched at", "user_triton_kernel.py:34", "user_triton_kernel.py:21",
                                      "autotuned", "(symbolic)"))
    doc = insights_here(read_trace(log)).to_json()["user_kernels"]
    assert [k["arguments"][0]["value"] for k in doc["kernels"]] == ["4096", "s77"]
    run_cli(log, "-o", tmp_path / "r", "--no-browser")
    page = (tmp_path / "r" / "index.html").read_text()
    assert 'id="insights-user_kernels"' in page and "<code>scaled_add_kernel_0</code> in the output code" in page


def test_check_gates_on_the_users_kernel_being_in_the_compiled_code(capsys):
    # Both variants' output code defines scaled_add_kernel (custom_kernel=True) in [0/0] and [0/1]; dynamic_batch
    # compiles none of the user's kernels.
    for variant in ("raw", "triton_op"):
        assert run_cli("check", cuda211(f"user_triton_kernel_{variant}.log.gz"), "--user-kernel", "scaled_add_kernel",
                       "--json") == 0
        out = capsys.readouterr().out
        launch = "34" if variant == "raw" else "45"
        assert (f"scaled_add_kernel compiled in [0/0], [0/1] (n symbolic), launched at user_triton_kernel.py:{launch}"
                in out)
    assert "custom_kernel=True" not in gzip.open(cuda211("dynamic_batch.log.gz"), "rt").read()
    assert run_cli("check", cuda211("dynamic_batch.log.gz"), "--user-kernel", "scaled_add_kernel") == 1
    assert "no compiled code in the log holds your Triton kernel scaled_add_kernel" in capsys.readouterr().out
    assert run_cli("check", cuda211("user_triton_kernel_raw.log.gz"), "--user-kernel", "add_kernel") == 1
    assert "the code holds scaled_add_kernel" in capsys.readouterr().out


def test_tritons_own_files_are_not_the_users_on_any_view(capsys, tmp_path):
    # raw: Dynamo traced line 34's triton.cdiv(n, 1024) inline, so [0/1]'s graph (n symbolic) holds its add, sub and
    # floordiv under "# File: <venv>/site-packages/triton/__init__.py:68 in cdiv"; the triton_op run names no Triton
    # file (Dynamo called the custom op without tracing into it).
    raw = _raw("user_triton_kernel_raw.log.gz")
    (cdiv,) = set(re.findall(r"# File: (\S+/site-packages/triton/__init__\.py):68 in cdiv, code: return \(x \+ y - 1\) // y\n"
                             r"\t +add: ", raw))
    assert "site-packages/triton/" not in _raw("user_triton_kernel_triton_op.log.gz")
    assert is_triton_file(cdiv) and not is_torch_file(cdiv) and not is_users_file(cdiv) and not is_user_source(cdiv)
    # (a folder named triton elsewhere is the user's; a model library installed beside Triton stays the model's code)
    assert not is_triton_file("/home/me/triton/train.py") and is_user_source(str(PROGRAM))
    assert is_users_file(cdiv.replace("/triton/__init__.py", "/transformers/models/gpt2/modeling_gpt2.py"))
    for variant in ("raw", "triton_op"):
        report(cuda211(f"user_triton_kernel_{variant}.log.gz"), tmp_path / variant)
        assert [p.name.split("_")[0] for p in (tmp_path / variant / "sources").glob("*.html")] == ["user"]
        assert "__init__.py" not in (tmp_path / variant / "index.html").read_text()
    # diff: the cdiv nodes A has and B lacks are listed at the user's launch whose grid they compute, not as
    # "(__init__.py:68)" (test_diff_places_tritons_cdiv_nodes_at_the_launch_whose_grid_they_compute)
    assert run_cli("diff", cuda211("user_triton_kernel_raw.log.gz"), cuda211("user_triton_kernel_triton_op.log.gz")) == 1
    out = " ".join(capsys.readouterr().out.split())  # (as wrapped at any width)
    launch = line_holding(PROGRAM, "launch[(triton.cdiv(n, 1024),)]")
    assert f"- call_function operator // (user_triton_kernel.py:{launch}, the launch's grid)" in out
    assert "__init__.py" not in out


def test_the_kernel_is_said_at_its_def_where_the_source_is_known_else_at_torchs_line_said_as_its_decorator(tmp_path):
    # torch's "# Original path: ...:20" is inspect.getsourcelines' first line, the @triton.jit; the def is on 21.
    text = "def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):"
    def_at = line_holding(PROGRAM, "def scaled_add_kernel(")
    decorator = def_at - 1
    assert PROGRAM.read_text().splitlines()[decorator - 1] == "@triton.jit"
    assert def_line_here(str(PROGRAM), decorator, text) == def_at == decorator + 1
    # a second decorator between (an @triton.autotune above): the def further down, found after decorators only
    two = tmp_path / "two.py"
    two.write_text("@triton.autotune(\n    configs=[],\n    key=['n'])\n@triton.jit\n" + text + "\n    pass\n")
    assert def_line_here(str(two), 1, text) == 5
    # a file that is not the run's (another def first, or no decorator at torch's line) or not here: unknown
    other = tmp_path / "other.py"
    other.write_text("@triton.jit\ndef other_kernel(x):\n    pass\n" + text + "\n")
    assert def_line_here(str(other), 1, text) is None and def_line_here(str(other), 2, text) is None
    assert def_line_here(str(tmp_path / "gone.py"), 1, text) is None
    # The log on a machine without the program: torch's line, said as the decorator's, on every view
    log = cuda211_moved("user_triton_kernel_raw.log.gz", tmp_path, programs=tmp_path / "elsewhere")
    found = user_kernels_here(read_trace(log))
    assert {(k.defined_at.line, k.decorator_line) for k in found.kernels if k.defined_at} == {(decorator, decorator)}
    assert found.kernels[0].defined_text == f"user_triton_kernel.py:{decorator} (its decorator line)"


def test_the_programs_page_marks_the_kernels_def_and_launch_lines(tmp_path):
    for variant, launch_text in (("raw", "launch[(triton.cdiv(n, 1024),)]"),
                                 ("triton_op", "return scaled_add(h, y, 0.5).sum()")):
        out = tmp_path / variant
        out.mkdir()
        report(cuda211_moved(f"user_triton_kernel_{variant}.log.gz", out), out / "r")
        (page,) = (out / "r" / "sources").glob("user_triton_kernel.py_*.html")
        rows = _marked_rows(page.read_text())
        def_at, launch = line_holding(PROGRAM, "def scaled_add_kernel("), line_holding(PROGRAM, launch_text)
        assert rows == {
            def_at: "your Triton kernel scaled_add_kernel, defined here: Inductor compiled it as you wrote it into "
                    "graphs [0/0], [0/1] (scaled_add_kernel_0 in their code)",
            launch: f"launches your Triton kernel scaled_add_kernel (defined at user_triton_kernel.py:{def_at}): the "
                    "graph traced this launch, and Inductor compiled it as you wrote it into graphs [0/0], [0/1] "
                    "(scaled_add_kernel_0 in their code)"}


def _marked_rows(page: str) -> dict[int, str]:
    """Line number -> the text of its user-kernel note, on a source page."""
    found = {}
    for row in re.split(r'(?=<div class="src-line[^"]*" id="L\d+")', page):
        m = re.match(r'<div class="src-line[^"]*" id="L(\d+)"', row)
        note = re.search(r'<li class="n-user-kernel">(.*?)</li>', row, re.S)
        if m and note:
            found[int(m[1])] = re.sub(r"<[^>]+>", "", note[1])
    return found


def test_diff_says_the_launch_changed_and_the_kernel_and_its_compiles_did_not():
    raw, op = _raw("user_triton_kernel_raw.log.gz"), _raw("user_triton_kernel_triton_op.log.gz")
    launch, call = line_holding(PROGRAM, "launch[(triton.cdiv(n, 1024),)]"), line_holding(PROGRAM, "scaled_add(h, y, 0.5)")
    # The Dynamo graphs: raw traces the launch as the wrapper node at 34; triton_op calls its custom op at 45.
    assert re.search(rf":{launch} in scaled_add, code: .*\n\t +triton_kernel_wrapper_mutation = "
                     r"torch\.ops\.higher_order\.triton_kernel_wrapper_mutation\(", raw)
    assert "triton_kernel_wrapper_mutation = torch.ops.higher_order" not in op.split("aot_inference_graph")[0]
    assert re.search(rf":{call} in layer, code: .*\n\t +scaled_add_default: .* = torch\.ops\.mylib\.scaled_add\.default\(", op)
    # The output code: the same kernel, from its def on, in each compile of both runs, called with 4096 then s77
    def bodies(text: str) -> set[str]:
        return set(re.findall(r"\n\t(def scaled_add_kernel\(.*?)\n\t''', device_str", text, re.S))
    assert len(bodies(raw)) == 1 and bodies(raw) == bodies(op)
    for text in (raw, op):
        assert re.findall(r"scaled_add_kernel_0\.run\(\w+, \w+, \w+, (\w+),", text) == ["4096", "s77"]
    a, b = (run_facts(analyze(read_trace(cuda211(f"user_triton_kernel_{v}.log.gz")))) for v in ("raw", "triton_op"))
    (change,) = [c for c in diff_runs(a, b).changes if "your Triton kernel" in c.title]
    assert (change.section, change.kind) == ("graphs", "changed")
    assert change.title == (
        f"your Triton kernel scaled_add_kernel: how its launch enters the graph changed: launched at "
        f"user_triton_kernel.py:{launch}, traced into the graph as triton_kernel_wrapper_mutation → called at "
        f"user_triton_kernel.py:{call}, through the custom op mylib::scaled_add; the kernel is the same in both: its "
        "code, compiled in [0/0], [0/1] (n symbolic in [0/1])")
    # the same run against itself: nothing of the kernel changed
    assert not [c for c in diff_runs(a, a).changes if "your Triton kernel" in c.title]
    # its code edited between the runs, or the kernel gone: said so
    edited = [{**k, "source_md5": "0" * 32} for k in b.user_kernels or ()]
    (change,) = user_kernel_changes(a.user_kernels, edited)
    assert change.title.endswith("mylib::scaled_add; the kernel is the same in both: compiled in [0/0], [0/1] (n symbolic "
                                 "in [0/1]); its code changed")
    (gone,) = user_kernel_changes(a.user_kernels, [])
    assert (gone.kind, gone.title) == ("removed", "your Triton kernel scaled_add_kernel is no longer in the compiled code "
                                                  "(A: [0/0], [0/1] (n symbolic in [0/1]))")



def test_diff_of_a_kernel_whose_way_in_one_log_does_not_say_says_that_not_a_change():
    """No real pair has it (each user-kernel log here has its Dynamo graph, so both sides say how the launch enters):
    the real raw and triton_op logs' facts, with one side's launch_call gone, as a log whose Dynamo graph was not
    logged (or was cut) leaves it. The diff said "how its launch enters the graph changed: ... → launched at
    user_triton_kernel.py:45", a change the logs do not show; now only the other lines, and which log does not say."""
    launch, call = line_holding(PROGRAM, "launch[(triton.cdiv(n, 1024),)]"), line_holding(PROGRAM, "scaled_add(h, y, 0.5)")
    a, b = (run_facts(analyze(read_trace(cuda211(f"user_triton_kernel_{v}.log.gz")))) for v in ("raw", "triton_op"))
    assert a.user_kernels and b.user_kernels and all(k["launch_call"] for k in a.user_kernels + b.user_kernels)
    unsaid_a = [{**k, "launch_call": None} for k in a.user_kernels]
    unsaid_b = [{**k, "launch_call": None} for k in b.user_kernels]
    (change,) = user_kernel_changes(a.user_kernels, unsaid_b)
    assert change.title == (
        f"your Triton kernel scaled_add_kernel: launched at user_triton_kernel.py:{launch}, traced into the graph as "
        f"triton_kernel_wrapper_mutation → launched at user_triton_kernel.py:{call}: from other lines (B's log does "
        "not say how its launch enters the graph); the kernel is the same in both: its code, compiled in [0/0], [0/1] "
        "(n symbolic in [0/1])")
    (change,) = user_kernel_changes(unsaid_a, b.user_kernels)
    assert "(A's log does not say how its launch enters the graph)" in change.title and "changed" not in change.title
    # the same lines, one log silent on the way in: nothing known to differ
    assert user_kernel_changes(a.user_kernels, unsaid_a) == [] and user_kernel_changes(unsaid_b, b.user_kernels) == []


def test_diff_of_a_kernel_entering_the_graph_the_same_way_from_other_lines_says_so():
    """triton_op_mutation.py and its fixed twin, triton_op_mutation_fixed.py, both call scale_kernel through the custom
    op mylib::scale_tr (torch.library.triton_op in each program) at lines 41 and 46 of their own files. Nothing of how
    its launch enters the graph changed, only the file: the diff says the same way in, from other lines, not "how
    its launch enters the graph changed"."""
    programs = CUDA211_LOGS.parent / "programs"
    for name in ("triton_op_mutation.py", "triton_op_mutation_fixed.py"):
        assert "@triton_op(\"mylib::scale_tr\"" in (programs / name).read_text().replace("torch.library.", "")
    a_at, b_at = (", ".join(f"{name}:{line_holding(programs / name, code)}"
                            for code in ("scaled = scale_tr(x, 2.0)", "    scale_tr(x, 2.0)"))
                  for name in ("triton_op_mutation.py", "triton_op_mutation_fixed.py"))
    a, b = (run_facts(analyze(read_trace(cuda211(f"triton_op_mutation{v}.log.gz")))) for v in ("", "_fixed"))
    (change,) = [c for c in diff_runs(a, b).changes if "your Triton kernel" in c.title]
    assert change.title == (
        f"your Triton kernel scale_kernel: called at {a_at}, through the custom op mylib::scale_tr → called at {b_at}: "
        "the same way into the graph, from other lines; the kernel is the same in both: its code, compiled in [0/0], "
        "[1/0]")


def test_diff_of_a_kernel_from_other_lines_where_the_log_says_not_how_it_enters_the_graph_keeps_all_lines():
    """The same real kernels with no graph call known for their launches (launch_call None: how() is ""): B's side
    keeps both its lines (its text was cut at the first ", " among them), and nothing says "the same way into the
    graph" when the log says of neither run which way that is."""
    programs = CUDA211_LOGS.parent / "programs"
    a_at, b_at = (", ".join(f"{name}:{line_holding(programs / name, code)}"
                            for code in ("scaled = scale_tr(x, 2.0)", "    scale_tr(x, 2.0)"))
                  for name in ("triton_op_mutation.py", "triton_op_mutation_fixed.py"))
    a, b = ([{**k, "launch_call": None} for k in run_facts(analyze(read_trace(cuda211(f"triton_op_mutation{v}.log.gz"))))
             .user_kernels or ()] for v in ("", "_fixed"))
    (change,) = user_kernel_changes(a, b)
    assert change.title == (
        f"your Triton kernel scale_kernel: launched at {a_at} → launched at {b_at}: from other lines; the kernel is "
        "the same in both: its code, compiled in [0/0], [1/0]")


def test_diff_places_tritons_cdiv_nodes_at_the_launch_whose_grid_they_compute():
    # [0/0] took n = 4096 as a number: its grid is cdiv(4096, 1024) = 4, no node. [0/1]'s n is s77: triton.cdiv's
    # `(x + y - 1) // y`, three nodes at Triton's own line (no user line, so diff listed them with none), computes the
    # grid of the launch at line 34. The triton_op run's graphs call the custom op, whose launch and grid are inside it.
    raw, op = _raw("user_triton_kernel_raw.log.gz"), _raw("user_triton_kernel_triton_op.log.gz")
    graphs = re.findall(r'"dynamo_output_graph".*?\n((?:\t[^\n]*\n)+)', raw)
    assert [re.findall(r"grid = \[([^\]]*)\]", g) for g in graphs] == [["(4, 1, 1)"], ["(floordiv, 1, 1)"]]
    assert "in cdiv" not in graphs[0] and re.search(
        r"# File: \S+/triton/__init__\.py:\d+ in cdiv, code: return \(x \+ y - 1\) // y\n\t +add: [^\n]* = s77 \+ 1024\n"
        r"\t +sub: [^\n]* = add - 1;[^\n]*\n\t +floordiv: [^\n]* = sub // 1024;", graphs[1])
    assert "in cdiv" not in op and "grid = " not in "".join(re.findall(r'"dynamo_output_graph".*?\n((?:\t[^\n]*\n)+)', op))
    launch, empty = line_holding(PROGRAM, "launch[(triton.cdiv(n, 1024),)]"), line_holding(PROGRAM, "torch.empty_like(x)")
    wrapper = "torch.ops.higher_order.triton_kernel_wrapper_mutation"
    a, b = (run_facts(analyze(read_trace(cuda211(f"user_triton_kernel_{v}.log.gz")))) for v in ("raw", "triton_op"))
    removed = {c.detail["compile_a"]: [(n["target"], n["line"].rsplit("/", 1)[-1] if n["line"] else None, n["grid_of"])
                                       for n in c.detail["removed"]]
               for c in diff_runs(a, b).changes if c.section == "graphs" and "FX node" in c.title}
    assert removed == {
        "[0/0]": [("torch.empty_like", f"user_triton_kernel.py:{empty}", None),
                  (wrapper, f"user_triton_kernel.py:{launch}", None)],
        "[0/1]": [("torch.empty_like", f"user_triton_kernel.py:{empty}", None),
                  *((f"operator {o}", f"user_triton_kernel.py:{launch}", wrapper) for o in ("+", "-", "//")),
                  (wrapper, f"user_triton_kernel.py:{launch}", None)]}
    # given the launch's line and code, as the wrapper node has them; a grid given as a number leaves them at no line
    nodes = graph_nodes(graphs[1])
    (launched,) = [n for n in nodes if n[1] == wrapper]
    assert [n[1:] for n in nodes if n[4]] == [[f"operator {o}", *launched[2:4], wrapper] for o in ("+", "-", "//")]
    assert [n[2:] for n in graph_nodes(graphs[1].replace("grid = [(floordiv, 1, 1)]", "grid = [(4, 1, 1)]"))
            if n[1] in ("operator +", "operator -", "operator //")] == [[None, None, None]] * 3


def test_a_compile_whose_code_defines_the_kernel_twice_is_counted_once_with_its_repeat(tmp_path, capsys):
    # [0/0]'s code also defines scaled_add_kernel_1, the same kernel (a copy of the real definition and call): three
    # definitions, in two compile ids. Said "3 times, once in each compile id: [0/0], [0/0] ..." and "[0/0], [0/0], [0/1]".
    log = with_copies(tmp_path, 1)
    text = log.read_text()
    assert text.count("= async_compile.triton('scaled_add_kernel', '''") == 3
    assert re.findall(r"(scaled_add_kernel_\d)\.run\(\w+, \w+, \w+, (\w+),", text) == [
        ("scaled_add_kernel_0", "4096"), ("scaled_add_kernel_1", "4096"), ("scaled_add_kernel_0", "s77")]
    found = user_kernels_here(read_trace(log))
    assert [(k.compile_id, k.code_name) for k in found.kernels] == [
        ("[0/0]", "scaled_add_kernel_0"), ("[0/0]", "scaled_add_kernel_1"), ("[0/1]", "scaled_add_kernel_0")]
    assert found.notes == ["scaled_add_kernel was compiled 3 times in 2 compile ids, twice in [0/0] (as scaled_add_kernel_0, "
                           "scaled_add_kernel_1): [0/0] with n = 4096 compiled in, [0/1] with n symbolic (any size runs it "
                           "without compiling again)."]
    assert run_cli("check", log, "--user-kernel", "scaled_add_kernel", "--json") == 0
    assert ("scaled_add_kernel compiled in [0/0] (2 times), [0/1] (n symbolic), launched at user_triton_kernel.py:34"
            in capsys.readouterr().out)
    (gone,) = user_kernel_changes(run_facts(analyze(read_trace(log))).user_kernels, [])
    assert gone.title == ("your Triton kernel scaled_add_kernel is no longer in the compiled code (A: [0/0] (2 times), "
                          "[0/1] (n symbolic in [0/1]))")
    # one compile id only: the copy in [0/0], [0/1]'s code cut out of the log
    alone = UserKernels([k for k in found.kernels if k.compile_id == "[0/0]"])
    assert alone.notes == ["scaled_add_kernel was compiled 2 times, all in compile id [0/0] (as scaled_add_kernel_0, "
                           "scaled_add_kernel_1)."]
