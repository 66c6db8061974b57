"""`compilescope dump-src LOG DIR`: depyf's file layout, every file valid Python."""

from __future__ import annotations

import ast

from ..conftest import peer, run_cli, torch213


def test_layout_of_a_recorded_log(tmp_path):
    out = tmp_path / "dump"
    assert run_cli("dump-src", torch213("transformed_code.log"), out) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "full_code_for_f_0.py" in names and "__transformed_code_0_for_f.py" in names
    graphs = [n for n in names if n.endswith(" Captured Graph 0.py")]
    assert len(graphs) == 4 and all(n.startswith("__compiled_fn_") for n in graphs)
    for path in out.iterdir():
        ast.parse(path.read_text(), filename=path.name)  # valid Python, unlike depyf's full_code
    transformed = (out / "__transformed_code_0_for_f.py").read_text()
    fn = next(n for n in ast.parse(transformed).body if isinstance(n, ast.FunctionDef))
    assert fn.name == "f" and [a.arg for a in fn.args.args] == ["x", "n"]
    # The graph the transformed code calls has its file.
    called = next(n for n in graphs if n.split(" ")[0] in transformed)
    assert "class GraphModule" in (out / called).read_text()
    full = (out / "full_code_for_f_0.py").read_text()
    assert "# Guards" in full and "def f(x, n):" in full


def test_inductor_log_has_aot_graphs_and_kernels(tmp_path):
    out = tmp_path / "dump"
    assert run_cli("dump-src", torch213("provenance.log"), out) == 0
    names = {p.name for p in out.iterdir()}
    for title in ("Captured Graph 0", "Joint graph 0", "Forward graph 0", "Backward graph 0", "kernel 0", "kernel 1"):
        assert f"__compiled_fn_0_0 {title}.py" in names
    for path in out.iterdir():
        ast.parse(path.read_text(), filename=path.name)
    # No transformed code in a plain TORCH_TRACE log of a frame without graph breaks: the full code says so.
    assert "not in this log" in (out / "full_code_for_forward_0.py").read_text()


def test_inference_graphs_fx_names_lambda_are_valid_python(tmp_path):
    # FX prints AOTAutograd's inference graph as `class <lambda>(torch.nn.Module):`; the file must still parse, with
    # the graph's code kept (not turned into comments).
    out = tmp_path / "dump"
    assert run_cli("dump-src", torch213("dynamic_shapes.log"), out) == 0
    forward = sorted(out.glob("* Forward graph 0.py"))
    assert forward and "class <lambda>" in torch213("dynamic_shapes.log").read_text()
    for path in out.iterdir():
        ast.parse(path.read_text(), filename=path.name)
    tree = ast.parse(forward[0].read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert cls.name == "lambda_" and any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in cls.body)


def test_a_restarted_attempt_points_at_its_retry_not_at_recording_again(tmp_path):
    # transformed_code.log was recorded by `compilescope run`: [1/0] restarted at a graph break and [1/0_1] holds
    # the code. The note said to record the log with `compilescope run`, which it was.
    assert run_cli("dump-src", torch213("transformed_code.log"), tmp_path / "out") == 0
    full = (tmp_path / "out" / "full_code_for_torch_dynamo_resume_in_f_at_22_0.py").read_text()
    assert "record it with" not in full
    attempt, retry = full.index("# ===== compile id [1/0] ====="), full.index("# ===== compile id [1/0_1] =====")
    assert "Dynamo compiled the frame again as [1/0_1], whose code follows" in full[attempt:retry]
    ast.parse(full)


def test_an_aotinductor_package_has_its_graphs_and_cpp_code(tmp_path, capsys):
    """aoti_deploy's package is built outside any compile id: its graphs and its C++ wrapper and kernels are written
    (dump-src wrote 0 files of the log), the C++ as .cpp, each file saying whose it is."""
    out = tmp_path / "dump"
    assert run_cli("dump-src", torch213("aoti_deploy.log.gz"), out) == 0
    assert "Wrote 4 files" in capsys.readouterr().out
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert names == ["__aoti_package AFTER POST GRAD 0.py", "__aoti_package AOTInductor kernels 0.cpp",
                     "__aoti_package AOTInductor wrapper 0.cpp", "__aoti_package Forward graph 0.py"]
    for name in names:
        text = (out / name).read_text()
        comment = "//" if name.endswith(".cpp") else "#"
        assert text.startswith(f"{comment} AOTInductor package of aoti_deploy.py:41 (compilescope dump-src from ")
        if name.endswith(".py"):
            ast.parse(text, filename=name)
    assert "#include <torch/csrc/inductor/aoti_include/cpu.h>" in (out / names[2]).read_text()


def test_log_text_in_a_header_stays_in_its_comment(tmp_path):
    """A header names the package by the user stack's file (Aoti.name) and the log by its path: a newline in either
    ended the header's comment and made the rest code, run by whoever ran the dump's .py file (or compiled its .cpp).
    The crafted log is aoti_deploy's, its file name given a newline and a line of Python after it; the log's own
    path has one too."""
    import gzip

    text = gzip.open(torch213("aoti_deploy.log.gz"), "rt", encoding="utf-8").read()
    payload = 'import os; os.system(\\"echo PWNED\\")  #'
    evil = text.replace('/aoti_deploy.py"', f'/aoti_deploy.py\\n{payload}"')
    assert evil.count("PWNED") == 1
    log = tmp_path / "evil\nimport os; os.system('echo PWNED2')\n.log"
    log.write_text(evil, encoding="utf-8")
    out = tmp_path / "dump"
    assert run_cli("dump-src", log, out) == 0
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert len(names) == 4
    for name in names:
        lines = (out / name).read_text().splitlines()
        assert "PWNED" in lines[0] and all("PWNED" not in line for line in lines[1:])
        if name.endswith(".py"):
            assert "PWNED" not in ast.dump(ast.parse((out / name).read_text()))  # (all of it in the comment)


def test_a_cut_log_is_said_to_be_read_in_part(tmp_path, capsys):
    """training.log cut inside a record (as a killed run leaves it): the report and summary warn that the files show
    what was read; dump-src wrote its files without a word, as if they were all the run compiled."""
    cut = tmp_path / "training.log"
    cut.write_bytes(torch213("training.log").read_bytes()[:30000])
    assert run_cli("dump-src", cut, tmp_path / "dump") == 0
    err = capsys.readouterr().err
    assert "compilescope: warning: training.log: " in err and "the log ends in the middle of line 516" in err
    assert err.rstrip().endswith("The dump shows what was read.")
    assert run_cli("dump-src", torch213("training.log"), tmp_path / "whole") == 0
    assert capsys.readouterr().err == ""


def test_log_text_that_is_not_a_graph_or_function_is_written_as_comments(tmp_path):
    """A graph payload that parses as Python was written as code, and transformed code the log says is decompiled
    verbatim: a log with `import os; os.system(...)` in either had it run by whoever ran (or imported) the file. The
    crafted log is transformed_code.log with such a line at the start of [0/0]'s captured graph, in a method's default
    of [1/0]'s, and after the header of f's decompiled code. The real log's files stay code (test_layout_...)."""
    text = torch213("transformed_code.log").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    graph = next(i for i, line in enumerate(lines) if '{"dynamo_output_graph"' in line and '"frame_id": 0' in line)
    resumed = next(i for i, line in enumerate(lines) if '{"dynamo_output_graph"' in line and '"frame_id": 1' in line)
    code = next(i for i, line in enumerate(lines) if "runs instead of f (decompiled" in line)
    assert lines[graph + 1].startswith("\tclass GraphModule") and lines[resumed + 2].startswith("\t    def forward(self,")
    lines[resumed + 2] = lines[resumed + 2].replace("def forward(self,", "def forward(self, _=__import__('os').system('echo PWNED3'),")
    lines[code] += "\timport os; os.system('echo PWNED2')\n"
    lines[graph] += "\timport os; os.system('echo PWNED1')\n"
    log = tmp_path / "crafted.log"
    log.write_text("".join(lines), encoding="utf-8")
    out = tmp_path / "dump"
    assert run_cli("dump-src", log, out) == 0
    found = set()
    for path in out.iterdir():
        if path.suffix == ".py":
            source = path.read_text()
            found.update(w for w in ("PWNED1", "PWNED2", "PWNED3") if w in source)
            assert "PWNED" not in ast.dump(ast.parse(source)), path.name  # (all of it in comments)
    assert found == {"PWNED1", "PWNED2", "PWNED3"}
    assert "\n# class GraphModule(torch.nn.Module):" in (out / "__compiled_fn_1 Captured Graph 0.py").read_text()
    assert "\n# def f(x, n):" in (out / "__transformed_code_0_for_f.py").read_text()


def test_the_graph_the_transformed_code_calls_is_found_by_its_name(tmp_path):
    """transformed_code.log holds transformed code, which calls torch's graphs by torch's names (`__compiled_fn_6`),
    as depyf names their files. dump-src named every compile's files by its compile id (`__compiled_fn_1_0_1`), so
    grepping the call found no file, and depyf's habits found nothing. A compile's files are torch's name where the log
    gives it, else its compile id's (two or more number parts: never one of torch's)."""
    import re

    out = tmp_path / "dump"
    assert run_cli("dump-src", torch213("transformed_code.log"), out) == 0
    calls = {}
    for path in out.glob("__transformed_code_*.py"):
        source = path.read_text()
        (cid,) = re.findall(r"^# compile id (\[[^\]]+\]): ", source, re.M)
        (fn,) = set(re.findall(r"= (__compiled_fn_\d+)(?:_\w+)?\(", source))  # (torch adds a uuid to the call)
        calls[fn] = cid
    assert sorted(calls.values()) == ["[0/0]", "[1/0_1]", "[2/0_1]", "[3/0]"]
    for fn, cid in calls.items():
        first = (out / f"{fn} Captured Graph 0.py").read_text().splitlines()[0]
        assert re.match(rf"# compile id {re.escape(cid)}, called {fn}_[0-9a-f]{{8}}_\w+ in its transformed code", first)
        # (the name called in full, torch's uuid too: grepping the call finds the file)
        (call,) = set(re.findall(rf"= ({fn}_\w+)\(", (out / next(
            p.name for p in out.glob("__transformed_code_*.py") if f"compile id {cid}:" in p.read_text())).read_text()))
        assert f"called {call} in" in first
    assert sorted(p.name.split(" ")[0] for p in out.glob("* Captured Graph 0.py")) == sorted(calls)


def test_an_exported_program_is_dumped_as_python(tmp_path):
    """export_draft.log holds torch.export's ExportedProgram (an exported_program artifact): dump-src wrote nothing of
    it. Its GraphModule is now a file of its own, valid Python, the graph signature and range constraints as comments."""
    out = tmp_path / "dump"
    assert run_cli("dump-src", torch213("export_draft.log"), out) == 0
    path = out / "__exported_program Exported program 0.py"
    source = path.read_text()
    tree = ast.parse(source)
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert cls.name == "GraphModule" and [n.name for n in cls.body if isinstance(n, ast.FunctionDef)] == ["forward"]
    assert "torch.ops.aten.nonzero.default(x)" in source
    assert "\n# Range constraints: {u0: VR[3, int_oo], u1: VR[0, 6]}" in source


def test_the_transformed_code_names_graph_files_only_where_some_are_written(tmp_path):
    """transformed_code.log without [0/0]'s dynamo_output_graph (a log cut, or torch logging the code but not the
    graph): __transformed_code_0_for_f.py said "the files __compiled_fn_1 *", and there were none."""
    lines = torch213("transformed_code.log").read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if '{"dynamo_output_graph"' in line)
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("\t"))
    log = tmp_path / "no_first_graph.log"
    log.write_text("".join(lines[:start] + lines[end:]))
    out = tmp_path / "dump"
    assert run_cli("dump-src", log, out) == 0
    transformed = (out / "__transformed_code_0_for_f.py").read_text()
    assert "__compiled_fn_1_66055ec2_bfd1_468a_a49a_7ae48f5359dc(x)" in transformed
    assert not list(out.glob("__compiled_fn_1 *"))
    assert "the files __compiled_fn_1 *" not in transformed
    assert ("# __compiled_fn_1_66055ec2_bfd1_468a_a49a_7ae48f5359dc is this compile's graph, which this log does not "
            "hold: no file of it is written\n") in transformed
    # (where the graph is logged, its files are named)
    named = [p.name for p in out.glob("__transformed_code_*") if "is this compile's graph: the files __compiled_fn_"
             in p.read_text()]
    assert len(named) == 3


def test_an_exported_program_whose_md5_does_not_match_is_dumped_whole(tmp_path):
    """The peer export.log's ExportedProgram (line 60) has an md5 that is not its payload's: the report keeps it as
    payloads/<md5>-L60.txt (by the envelope's line, so a forged md5 names no other payload), and dump-src writes it
    all the same, the whole program as read."""
    log = peer("export.log")
    assert run_cli("dump-src", log, tmp_path / "dump") == 0
    assert run_cli(log, "-o", tmp_path / "report", "--no-browser") == 0
    (kept,) = (tmp_path / "report" / "payloads").glob("*-L60.txt")
    program = kept.read_text()
    assert program.startswith("ExportedProgram:") and (tmp_path / "report" / "-_-_-_-" / "exported_program_0.txt").read_text() == program
    source = (tmp_path / "dump" / "__exported_program Exported program 0.py").read_text()
    ast.parse(source)
    graph, _, rest = program.partition("\nGraph signature:")
    assert all(line.strip() in source for line in graph.splitlines()[1:] if line.strip())
    assert "\n# Graph signature:" + rest.replace("\n", "\n# ") + "\n" in source
