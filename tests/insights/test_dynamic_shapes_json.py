"""`summary --json`'s dynamic-shape groups (`specialized`, `sizes`, `guards_by_line`: what the report and the terminal
show), each checked against the raw log's create_symbol, symbolic_shape_specialization and guard_added_fast records
(tests/data/torch213/README.md, tests/data/cuda_torch211/README.md)."""

from __future__ import annotations

import gzip
import html
import json
import re
from pathlib import Path

import orjson

from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, run_cli, torch213

KINDS = ("create_symbol", "create_unbacked_symbol", "symbolic_shape_specialization", "guard_added_fast", "guard_added")


class RawLog:
    """The dynamic-shape records of a log as torch wrote them: (kind, compile id, frame id, payload) in log order, and
    the string table the stacks' filenames index."""

    def __init__(self, log: Path):
        self.events: list[tuple[str, str, int, dict]] = []
        self.strings: dict[int, str] = {}
        with (gzip.open if log.suffix == ".gz" else open)(log, "rt", encoding="utf-8") as f:
            for line in f:
                if line.startswith("\t") or "] {" not in line:
                    continue  # a payload line
                record = json.loads(line.split("] ", 1)[1])
                if "str" in record:
                    path, index = record["str"]
                    self.strings[index] = path
                kind = next((k for k in KINDS if k in record), None)
                if kind is not None:
                    attempt = record.get("attempt") or 0
                    cid = f"[{record['frame_id']}/{record['frame_compile_id']}{f'_{attempt}' if attempt else ''}]"
                    self.events.append((kind, cid, record["frame_id"], record[kind]))

    def of(self, *kinds: str) -> list[tuple[str, int, dict]]:
        return [(cid, frame, payload) for kind, cid, frame, payload in self.events if kind in kinds]

    def user_line(self, payload: dict) -> tuple[str, int] | None:
        """The innermost frame of the record's user_stack (file, line); None where it is empty."""
        stack = payload.get("user_stack")
        return (self.strings[stack[-1]["filename"]], stack[-1]["line"]) if stack else None

    def program_line(self, payload: dict) -> tuple[str, int] | None:
        """The innermost frame of the record's Python stack in the recorded program (tests/data/.../programs/)."""
        frames = [f for f in payload.get("stack") or [] if "/programs/" in self.strings[f["filename"]]]
        return (self.strings[frames[-1]["filename"]], frames[-1]["line"]) if frames else None


def _in_groups(items, key) -> list[list]:
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return list(groups.values())


def _distinct(values) -> list:
    return list(dict.fromkeys(values))


def _line(location: dict | None) -> tuple[str, int] | None:
    return (location["filename"], location["line"]) if location else None


def _summary(capsys, log: Path, *flags: str) -> dict:
    assert run_cli("summary", *flags, log) == 0
    out = capsys.readouterr().out
    return json.loads(out) if "--json" in flags else {"text": out}


def _expected_sizes(raw: RawLog) -> list[tuple]:
    """create_symbol records by frame and source: (source, [(symbol, val, vr, compile ids)], first user line)."""
    sizes = []
    for same in _in_groups(raw.of("create_symbol"), lambda e: (e[1], e[2]["source"])):
        symbols = [(g[0][2]["symbol"], g[0][2]["val"], g[0][2]["vr"], _distinct(cid for cid, _, _ in g))
                   for g in _in_groups(same, lambda e: (e[2]["symbol"], e[2]["val"], e[2]["vr"]))]
        # A size of an argument of the compiled frame itself (transformers' wrapper given kwargs['input_ids']), first
        # used in the library's code, is placed at the program's call that passed it in.
        passed_in = re.fullmatch(r"L\['kwargs'\]\['\w+'\]\.size\(\)\[\d+\]", same[0][2]["source"])
        sizes.append((same[0][2]["source"], symbols,
                      raw.program_line(same[0][2]) if passed_in else raw.user_line(same[0][2])))
    return sizes


def _got_sizes(ds: dict) -> list[tuple]:
    return [(z["source"], [(s["symbol"], s["value"], s["range"], s["compile_ids"]) for s in z["symbols"]],
             _line(z["location"])) for z in ds["sizes"]]


def _expected_guard_lines(raw: RawLog) -> list[tuple]:
    """guard_added_fast records by user line, those with an empty user_stack last: (line, count, [(expr, compile
    ids, times)])."""
    places = [(raw.user_line(same[0][2]), len(same),
               [(g[0][2]["expr"], _distinct(cid for cid, _, _ in g), len(g)) for g in _in_groups(same, lambda e: e[2]["expr"])])
              for same in _in_groups(raw.of("guard_added_fast", "guard_added"), lambda e: raw.user_line(e[2]))]
    return sorted(places, key=lambda p: p[0] is None)


def _got_guard_lines(ds: dict) -> list[tuple]:
    return [(_line(p["location"]), p["count"], [(c["expr"], c["compile_ids"], c["count"]) for c in p["conditions"]])
            for p in ds["guards_by_line"]]


def test_dynamic_shapes_json_has_the_groups_the_log_makes(capsys):
    """dynamic_shapes.py: f's x is dynamic from its recompile at n=3 and again at n=5, where `if x.shape[0] == 5`
    specialized it to 5 (f's last call: nothing recompiled for it); g's x, also s77 and L['x'].size()[0], is
    another size (mark_dynamic, frame 1). Two of g's guards were added with an empty user_stack."""
    log = torch213("dynamic_shapes.log")
    raw = RawLog(log)
    program = (log.parents[1] / "programs" / "dynamic_shapes.py").read_text().splitlines()
    branch = 1 + next(i for i, line in enumerate(program) if "if x.shape[0] == 5" in line)
    reshape = 1 + next(i for i, line in enumerate(program) if ".reshape(-1, 2).sum(1)" in line)
    doc = _summary(capsys, log, "--json")
    ds = doc["dynamic_shapes"]

    # The events one by one stay where they were.
    assert (len(ds["symbols"]), len(ds["specializations"]), len(ds["guards"])) == (3, 1, 7) == (
        len(raw.of("create_symbol")), len(raw.of("symbolic_shape_specialization")), len(raw.of("guard_added_fast")))

    assert ds["kind"] == "size"
    sizes = _expected_sizes(raw)
    assert [(source, len(symbols)) for source, symbols, _ in sizes] == [("L['x'].size()[0]", 2), ("L['x'].size()[0]", 1)]
    assert _got_sizes(ds) == sizes
    assert [z["compile_ids"] for z in ds["sizes"]] == [["[0/1]", "[0/2]"], ["[1/0]"]]

    [(cid, _, spec)] = raw.of("symbolic_shape_specialization")
    [specialized] = ds["specialized"]
    assert {k: specialized[k] for k in ("symbols", "values", "sources", "reason", "compile_ids", "recompiles")} == {
        "symbols": [spec["symbol"]], "values": [{"value": spec["value"], "compile_ids": [cid]}],
        "sources": spec["sources"], "reason": spec["reason"], "compile_ids": [cid], "recompiles": []}
    assert (specialized["values"][0]["value"], specialized["reason_text"]) == ("5", "its range narrowed to one value")
    # torch 2.13 logs this record's stack only (no user_stack): the line is the program's branch on the size.
    assert (specialized["location"]["filename"], specialized["location"]["line"]) == (raw.strings[1], branch)

    guard_lines = _expected_guard_lines(raw)
    assert [(line and line[1], count) for line, count, _ in guard_lines] == [(branch, 2), (reshape, 3), (None, 2)]
    assert _got_guard_lines(ds) == guard_lines


def test_every_group_is_in_the_json_not_only_the_rows_the_terminal_shows(capsys):
    """hf_gpt2_generate (transformers' GPT-2 on an H200): 15 guards were added where no line of the model ran (an
    empty user_stack); the terminal shows 3 of them and says --json lists the rest. The prompt's length
    (input_ids' dimension 1) was specialized to 8 in [0/2], and [0/3] (the one-token decode step) recompiled
    because that guard failed."""
    log = cuda211("hf_gpt2_generate.log.gz")
    raw = RawLog(log)
    ds = _summary(capsys, log, "--json")["dynamic_shapes"]

    guard_lines = _expected_guard_lines(raw)
    unplaced = guard_lines[-1]
    assert unplaced[0] is None and len(unplaced[2]) == 15
    assert _got_guard_lines(ds) == guard_lines
    assert sum(p["count"] for p in ds["guards_by_line"]) == len(raw.of("guard_added_fast")) == len(ds["guards"])
    terminal = " ".join(_summary(capsys, log)["text"].split())
    assert "… 12 more (--json lists them)" in terminal

    sizes = _expected_sizes(raw)
    assert len(sizes) == 6
    assert _got_sizes(ds) == sizes

    # The compile whose recompile_reasons first name input_ids' length 8 is the recompile the specialization caused.
    recompiled_by, compile_id = None, None
    with gzip.open(log, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.startswith("\t") and '"recompile_reasons"' in line:
                record = json.loads(line.split("] ", 1)[1])
                compile_id = f"[{record['frame_id']}/{record['frame_compile_id']}]"
            elif line.startswith("\t") and compile_id and "'kwargs['input_ids']' size mismatch at index 1. expected 8" in line:
                recompiled_by = recompiled_by or compile_id
            elif not line.startswith("\t"):
                compile_id = None
    expected = [(spec["symbol"], spec["value"], cid, spec["sources"], spec["reason"], raw.user_line(spec))
                for cid, _, spec in raw.of("symbolic_shape_specialization")]
    assert [(s["symbols"], s["values"], s["sources"], s["reason"], _line(s["location"])) for s in ds["specialized"]] == [
        ([symbol], [{"value": value, "compile_ids": [cid]}], sources, reason, line)
        for symbol, value, cid, sources, reason, line in expected]
    assert [s["recompiles"] for s in ds["specialized"]] == [[recompiled_by], []] == [["[0/3]"], []]
    assert ds["specialized"][0]["text"] == "s27 = 8 in [0/2]"


def test_a_value_specialized_again_at_each_step_is_one_group_with_each_value(capsys):
    """compiled_optimizer (CUDA, torch 2.11): Adam's float lr is specialized again at every new learning rate, one
    symbolic_shape_specialization per compile ([2/1] twice: its retry [2/1_1]); one group, each value once as torch
    wrote it, with the compiles that had it."""
    log = cuda211("compiled_optimizer.log.gz")
    raw = RawLog(log)
    ds = _summary(capsys, log, "--json")["dynamic_shapes"]
    specs = raw.of("symbolic_shape_specialization")
    values = [(g[0][2]["value"], _distinct(cid for cid, _, _ in g)) for g in _in_groups(specs, lambda e: e[2]["value"])]
    assert len(specs) == 6 and len(values) == 5
    assert ds["kind"] == "value"
    [group] = ds["specialized"]
    assert [(v["value"], v["compile_ids"]) for v in group["values"]] == values
    assert group["symbols"] == ["zf8"] and group["sources"] == ["L['self'].param_groups[0]['lr']"]
    assert group["compile_ids"] == _distinct(cid for cid, _, _ in specs)
    assert "0.006 in [2/2]" in group["text"]  # sympy's "0.00600000000000000", its zeros dropped for people


def test_the_json_round_trips(capsys):
    """What --json prints reads back the same through orjson and json, and is what the analysis holds."""
    from .helpers import insights_of

    doc = _summary(capsys, torch213("dynamic_shapes.log"), "--json")
    ds = insights_of("dynamic_shapes").to_json()["dynamic_shapes"]
    assert doc["dynamic_shapes"] == ds
    assert orjson.loads(orjson.dumps(ds)) == ds == json.loads(json.dumps(ds))
    assert ds["guards_by_line"] and ds["sizes"] and ds["specialized"]


def test_the_summary_says_how_many_guards_are_distinct_where_compiles_added_them_again(capsys):
    # dynamic_batch: [0/1] (x's size made dynamic) and [0/2] (factor too) each add their guards on s77, with no user
    # line (an empty user_stack): the raw log's guard_added_fast records, counted and deduplicated here.
    exprs = []
    with gzip.open(cuda211("dynamic_batch.log.gz"), "rt") as f:
        for text in f:
            if '"guard_added_fast"' in text and not text.startswith("\t"):
                record = json.loads(text[text.index("{"):])["guard_added_fast"]
                assert record["user_stack"] == []
                exprs.append(record["expr"])
    assert (len(exprs), len(set(exprs))) == (9, 5)
    assert run_cli("summary", cuda211("dynamic_batch.log.gz")) == 0
    out = capsys.readouterr().out
    # 9 guards, 3 listed and "… 2 more": the 2 are of the 5 distinct, not of the 9
    assert "9 guards (5 distinct) where torch logged no line" in out
    assert "… 2 more (--json lists them)" in out


def test_the_summary_heading_counts_the_sizes_its_rows_show_not_each_compiles_symbol(capsys):
    # dynamic_batch: [0/1] created s77 for x's dimension 0 and [0/2] created s77 for it again, with s48 for factor:
    # three create_symbol records, two sizes (frame and source), one name each. The heading once said "3 symbols"
    # over two rows, and the overview (the page's first line, --json's) "2 sizes compiled as dynamic (3 symbols)".
    log = cuda211("dynamic_batch.log.gz")
    raw = RawLog(log)
    created = raw.of("create_symbol")
    sizes = _in_groups(created, lambda e: (e[1], e[2]["source"]))
    assert (len(created), len(sizes)) == (3, 2)
    assert all(len({e[2]["symbol"] for e in size}) == 1 for size in sizes)
    guards = len(raw.of("guard_added_fast", "guard_added"))
    assert not raw.of("symbolic_shape_specialization")

    terminal = _summary(capsys, log)["text"]
    assert f"Dynamic shapes (2 sizes, {guards} guards)" in terminal
    assert len(re.findall(r"^size  ", terminal, re.MULTILINE)) == 2
    ds = _summary(capsys, log, "--json")["dynamic_shapes"]
    assert len(ds["sizes"]) == 2
    assert ds["overview"] == f"2 sizes compiled as dynamic; {guards} guards added, {guards} where torch logged no line"


def test_a_symbol_torch_made_in_its_own_code_is_placed_at_the_users_call(capsys):
    """compiled_optimizer.log.gz: every create_symbol of the lr (zf8) has a user stack of torch's own frame only
    (adam.py:229, in the Adam.step Dynamo traced); the line the user can change is the program's call into it, the last
    frame of the record's Python stack that is the program's: each symbol is placed there, torch's line kept beside."""
    raw = RawLog(cuda211("compiled_optimizer.log.gz"))
    records = [payload for _, _, payload in raw.of("create_symbol")]
    assert records and all(len(p["user_stack"]) == 1 for p in records)
    torch_line = {raw.user_line(p) for p in records}
    program = {(raw.strings[f["filename"]], f["line"]) for p in records for f in p["stack"]
               if raw.strings[f["filename"]].endswith("/programs/compiled_optimizer.py")}
    called = {max((f for f in p["stack"] if raw.strings[f["filename"]].endswith("/programs/compiled_optimizer.py")),
                  key=p["stack"].index)["line"] for p in records}
    assert len(torch_line) == 1 and next(iter(torch_line))[0].endswith("/torch/optim/adam.py") and len(program) > 1
    ds = _summary(capsys, cuda211("compiled_optimizer.log.gz"), "--json")["dynamic_shapes"]
    assert {(_line(s["location"])[1], _line(s["torch_location"])) for s in ds["symbols"]} == {
        (line, next(iter(torch_line))) for line in called}
    [size] = ds["sizes"]
    assert size["location"]["filename"].endswith("/programs/compiled_optimizer.py") and size["location"]["line"] in called
    assert _line(size["torch_location"]) == next(iter(torch_line))


def _program_line(raw: RawLog, stack: list[dict]) -> int:
    """The line of the innermost frame of a Python stack that is the program's (compiled_optimizer.py)."""
    return [f for f in stack if raw.strings[f["filename"]].endswith("/programs/compiled_optimizer.py")][-1]["line"]


def test_a_specialization_torch_logged_without_a_user_stack_is_placed_where_its_value_was_read(capsys, tmp_path):
    """compiled_optimizer.log.gz: every symbolic_shape_specialization of the lr has user_stack null (AOTAutograd fixed
    the float after Dynamo's trace: no line of step ran). What the log does say: the symbol's source, the create_symbol of
    that symbol from that source in the same compile (user stack: torch's adam.py:229), the record's Python stack
    (through the program's opt.step() call), the frame compiled (dynamo_start: Adam's step) and the guards that failed
    on it, which torch writes in the frame's own names (`___as_tensor(self.param_groups[0]['lr']).item() == ...`)."""
    log = cuda211("compiled_optimizer.log.gz")
    raw = RawLog(log)
    specs = raw.of("symbolic_shape_specialization")
    assert len(specs) == 6 and all(p["user_stack"] is None for _, _, p in specs)
    created = {(cid, p["symbol"], p["source"]): raw.user_line(p) for cid, _, p in raw.of("create_symbol")}
    read_at = {created[(cid, p["symbol"], p["sources"][0])] for cid, _, p in specs}
    called = {_program_line(raw, p["stack"]) for _, _, p in specs}
    assert len(read_at) == 1 and next(iter(read_at))[0].endswith("/torch/optim/adam.py") and called == {24}
    with gzip.open(log, "rt") as f:
        text = f.read()
    [read_as] = set(re.findall(r"\d+/\d+: ___as_tensor\((.+?)\)\.item\(\) == ", text))  # the recompile reasons' guards
    starts = [json.loads(line[line.index("{"):])["dynamo_start"]["stack"] for line in text.splitlines()
              if '{"dynamo_start"' in line and '"frame_id": 2,' in line]
    [read_by] = {stack[-1]["name"] for stack in starts}
    assert (read_as, read_by) == ("self.param_groups[0]['lr']", "step")

    ds = _summary(capsys, log, "--json")["dynamic_shapes"]
    for spec in ds["specializations"]:
        assert (spec["read_as"], spec["read_by"]) == (read_as, read_by)
        assert spec["location"]["filename"].endswith("/programs/compiled_optimizer.py")
        assert (spec["location"]["line"], spec["location"]["code"]) == (24, "opt.step()")
        assert _line(spec["torch_location"]) == next(iter(read_at))
    [group] = ds["specialized"]
    assert group["read_text"] == f"lr, read as {read_as} by {read_by}"
    terminal = " ".join(_summary(capsys, log)["text"].split())
    assert (f"lr, read as {read_as} by {read_by} at torch's adam.py:{next(iter(read_at))[1]}, called at "
            "compiled_optimizer.py:24 in opt_step") in terminal

    # The report's Insights say it as summary does (it said "at compiled_optimizer.py:24", not what was read there).
    assert run_cli(log, "-o", tmp_path, "--no-browser", "--overwrite") == 0
    page = (tmp_path / "index.html").read_text()
    item = page[page.index('<ul class="dyn-list dyn-specialized">'):]
    item = html.unescape(" ".join(re.sub(r"<[^>]+>", "", item[:item.index("</li>")]).split()))
    # (the function is named once, as summary names it: "by step at torch's adam.py:229", not "... in step")
    assert (f"lr, read as {read_as} by {read_by} at torch's adam.py:{next(iter(read_at))[1]}, called at "
            "compiled_optimizer.py:24 in opt_step") in item


def test_each_lr_recompile_is_tied_to_the_specialization_its_guard_failed_on(capsys):
    """compiled_optimizer.log.gz: [2/2] … [2/5] recompile on `___as_tensor(self.param_groups[0]['lr']).item() == V`, a
    guard torch could not name the source of ("unknown source ..., please file a bug"), of the compile before; that
    compile specialized zf8 to V (sympy's 15 digits: 0.00466666666666667 for 0.004666666666666667). Each such step
    names that specialization and where its value was read; [2/1]'s failed guard, on the float itself of [2/0] (which
    made no symbol), is placed by torch (adam.py:229) and names none. The advice stays the optimizer's, not the one for
    a size some line fixed."""
    log = cuda211("compiled_optimizer.log.gz")
    raw = RawLog(log)
    specialized = {cid: p["value"] for cid, _, p in raw.of("symbolic_shape_specialization")}
    with gzip.open(log, "rt") as f:
        failed = re.findall(r"\"(\d+/\d+): ___as_tensor\(self\.param_groups\[0\]\['lr'\]\)\.item\(\) == ([\d.]+)  #", f.read())
    newest = list(dict.fromkeys(failed))  # each reason lists the guards of every cache entry, newest first
    assert len(newest) == 4
    with read_trace(str(log)) as trace:
        ins = insights(trace)
    [frame] = ins.recompiles.frames
    steps = [s for s in frame.steps if s.guard.guard.startswith("___as_tensor(")]
    assert [s.compile_id for s in steps] == ["[2/2]", "[2/3]", "[2/4]", "[2/5]"]
    for step in steps:
        spec = step.specialized
        assert spec is not None and spec.compile_id == step.guard.compile_id
        assert float(spec.value) == float(specialized[spec.compile_id])
        assert abs(float(spec.value) - float(step.guard.guard.rsplit(" == ", 1)[1])) < 1e-15
        # what was read, then the user's line that called the function that read it: the program's opt.step()
        [placed] = step.specialized_placement
        assert placed.text.endswith(": lr, read as self.param_groups[0]['lr'] by step, called at ")
        assert (placed.location, placed.location.code) == (spec.location, "opt.step()")
    assert (frame.steps[0].specialized, frame.steps[0].guard.location.short) == (None, "adam.py:229")
    assert "lr=torch.tensor(" in frame.advice[0] and not any("A size that changed" in a for a in frame.advice)
    out = re.sub(r"[\s│├└─]+", " ", _summary(capsys, log)["text"])  # (the tree's lines, as one)
    assert out.count("lr, read as self.param_groups[0]['lr'] by step, called at compiled_optimizer.py:24 in opt_step "
                     "· opt.step()") == 4


def test_specializations_torch_placed_are_placed_as_before(capsys):
    """hf_gpt2_generate and dynamic_shapes: each specialization has a user stack; its location is that stack's last
    frame, and nothing is said of a value read (read_as is only for those torch logged without one)."""
    for log in (cuda211("hf_gpt2_generate.log.gz"), torch213("dynamic_shapes.log")):
        raw = RawLog(log)
        expected = [raw.user_line(p) for _, _, p in raw.of("symbolic_shape_specialization")]
        assert expected and all(expected)
        ds = _summary(capsys, log, "--json")["dynamic_shapes"]
        assert [_line(s["location"]) for s in ds["specializations"]] == expected
        assert all(s["read_as"] is None and s["read_text"] is None for s in ds["specializations"])


def test_the_finding_of_a_specialized_size_names_it_as_the_program_does():
    # dynamic_shapes.py branches on x.shape[0] == 5: torch's symbolic_shape_specialization fixes s77, from
    # L['x'].size()[0], at 5. The finding says which size that is; "s77=5" alone named it by torch's symbol only,
    # which nothing the user wrote or sees outside the log's records calls it.
    raw = RawLog(torch213("dynamic_shapes.log"))
    [(_, _, _, spec)] = [e for e in raw.events if e[0] == "symbolic_shape_specialization"]
    assert (spec["symbol"], spec["sources"], spec["value"]) == ("s77", ["L['x'].size()[0]"], "5")
    with read_trace(str(torch213("dynamic_shapes.log"))) as trace:
        [finding] = [f for f in insights(trace).findings if "specialized to a constant" in f.title]
    assert finding.detail == "x.size()[0] (s77) = 5"


def test_the_sizes_say_a_restarted_compilation_once_as_the_recompile_steps_do(capsys):
    # gpt2_train (CUDA, torch 2.11): [0/1] restarted at a graph break and its retry [0/1_1] created s27 again (96):
    # one compilation. The recompile steps say [0/1]; the sizes table said "s27 = 96 in [0/1], [0/1_1]", as if two.
    # The JSON keeps each compile id.
    from ..conftest import shared

    log = shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    made = [(cid, p["symbol"], p["val"]) for kind, cid, _, p in RawLog(log).events if kind == "create_symbol"
            and p["symbol"] == "s27"]
    assert [(cid, v) for cid, _, v in made if cid.startswith("[0/1")] == [("[0/1]", "96"), ("[0/1_1]", "96")]
    assert run_cli("summary", log) == 0
    shown = capsys.readouterr().out
    assert "ids.size()[1] (input_ids of GPT2LMHeadModel's forward): s27 = 96 in [0/1] (any value ≥ 2)" in " ".join(
        shown.split())
    assert "[0/1]: tensor size changed" in shown and "├── [0/1_1]:" not in shown
    assert run_cli("summary", "--json", log) == 0
    sizes = json.loads(capsys.readouterr().out)["dynamic_shapes"]["sizes"]
    [s27] = [s for s in sizes if s["text"].startswith("s27 = 96")]
    assert s27["text"] == "s27 = 96 in [0/1] (any value ≥ 2)"
    assert s27["symbols"][0]["compile_ids"] == ["[0/1]", "[0/1_1]"]


def _condition(ds: dict, expr: str) -> dict:
    # (at its line: Inductor added `s70*… > 1` again where torch logged none)
    [condition] = [c for p in ds["guards_by_line"] if p["location"] for c in p["conditions"] if c["expr"] == expr]
    return condition


def test_a_guard_only_a_restarted_attempt_added_is_no_guard_of_its_compilation(capsys, tmp_path):
    # gpt2_train (CUDA, torch 2.11): [0/1]'s first attempt added `s27*Max(…) > 1`, then Dynamo restarted it; the
    # attempt that compiled, [0/1_1], created s27 again and added no such guard: the compiled code does not check it,
    # and no recompile can come of it. The summary, the JSON and the report listed it as [0/1]'s, linking [0/1_1].
    from ..conftest import shared

    log = shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    expr = "s27*Max(1, s27 - (Mod(s27, 8)) + 8) > 1"
    raw = RawLog(log)
    assert [cid for cid, _, p in raw.of("guard_added_fast") if p["expr"] == expr] == ["[0/1]"]
    assert "[0/1_1]" in [cid for cid, _, _ in raw.of("create_symbol")]  # (the attempt that compiled logged its own)
    note = "added only by [0/1]'s first attempt, which Dynamo restarted; no later attempt of [0/1] added this expression"

    shown = " ".join(_summary(capsys, log)["text"].split())  # (the terminal wraps the note)
    assert f"{expr} {note}" in shown and f"{expr} [0/1]" not in shown
    ds = _summary(capsys, log, "--json")["dynamic_shapes"]
    assert _condition(ds, expr) == {"expr": expr, "compile_ids": ["[0/1]"], "count": 1, "compilations": [],
                                    "discarded_attempts": ["[0/1]"], "discarded_text": note}
    # Both attempts of [1/1] added `s70*… > 1`: its compiled attempt did, so it is [1/1]'s, with nothing discarded.
    kept = _condition(ds, "s70*Max(1, s70 - (Mod(s70, 8)) + 8) > 1")
    assert (kept["compilations"], kept["discarded_attempts"], kept["discarded_text"]) == (["[1/1]"], ["[1/1]"], None)

    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    guards = page[page.index("<strong>Guards added, by line</strong>"):page.index('<details class="dyn-events">')]
    row = guards[guards.index(html.escape(expr)):]
    row = row[:row.index("</li>")]
    assert note in html.unescape(row) and "href=" not in row  # a link only where the compiled attempt added it

    # The source page of the line that added it says the same, not that it is [0/1]'s: it listed it as [0/1]'s,
    # linking [0/1_1], and sources.json said {"kind": "guard", "compile_id": "[0/1]", ...}.
    notes = [s for f in json.loads((tmp_path / "r" / "sources.json").read_text(encoding="utf-8"))["files"]
             for line in f["lines"].values() for s in line.get("symbols", []) if s.get("expr") == expr]
    assert notes == [{"kind": "guard", "attempts": ["[0/1]"], "expr": expr, "discarded": note}]
    [source_page] = [p for p in (tmp_path / "r" / "sources").iterdir() if p.name.startswith("sdpa_attention")]
    said = html.unescape(source_page.read_text(encoding="utf-8"))
    line = said[said.index(f"guard on shapes <code>{expr}</code>"):]
    assert line[:line.index("</li>")] == f"guard on shapes <code>{expr}</code>: {note}"


def test_a_torch_213_guard_only_a_restarted_attempt_added_is_said_so(capsys, tmp_path):
    # library_args_multiline (tests/data/torch213/README.md): [0/1]'s first attempt added Eq(s77, s48) and was
    # restarted at loss2's print; [0/1_1], which compiled, added none. [1/1]'s attempts both added Eq(s70, s48).
    # Only the expressions' text is compared: had [0/1_1] named the size otherwise (Eq(s99, s48), the same guard), "the
    # compiled code does not check it", as the note said, would have been false; it says what is known.
    log = torch213("library_args_multiline.log.gz")
    raw = RawLog(log)
    assert [cid for cid, _, p in raw.of("guard_added_fast") if p["expr"] == "Eq(s77, s48)"] == ["[0/1]"]
    assert [cid for cid, _, p in raw.of("guard_added_fast") if p["expr"] == "Eq(s70, s48)"] == ["[1/1]", "[1/1_1]"]
    shown = _summary(capsys, log)["text"]
    assert "Eq(s77, s48)  [0/1]" not in shown and "Eq(s70, s48)  [1/1]" in shown
    ds = _summary(capsys, log, "--json")["dynamic_shapes"]
    discarded = _condition(ds, "Eq(s77, s48)")
    note = "added only by [0/1]'s first attempt, which Dynamo restarted; no later attempt of [0/1] added this expression"
    assert (discarded["compilations"], discarded["discarded_text"]) == ([], note)
    assert _condition(ds, "Eq(s70, s48)")["compilations"] == ["[1/1]"]
    # __init__.py's page (the line that added it) listed it as [0/1]'s
    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    notes = [s for f in json.loads((tmp_path / "r" / "sources.json").read_text(encoding="utf-8"))["files"]
             for line in f["lines"].values() for s in line.get("symbols", []) if s.get("expr") in ("Eq(s77, s48)", "Eq(s70, s48)")]
    assert notes == [{"kind": "guard", "compile_id": "[1/1]", "expr": "Eq(s70, s48)"},
                     {"kind": "guard", "attempts": ["[0/1]"], "expr": "Eq(s77, s48)", "discarded": note}]


def test_the_events_table_names_compilations_not_attempts(tmp_path):
    # gpt2_train: the report's "Each event as torch logged it" rows named attempts ([1/1_1], [0/1_1]) where every
    # other table names the compilation; a row of a restarted attempt says so. Each link leads to a row on the page.
    from ..conftest import shared

    log = shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    table = page[page.index('<details class="dyn-events">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr><td><a [^>]*href="#([^"]+)"[^>]*>([^<]*)</a></td><td>([^<]*)</td>', html.unescape(table))
    assert len(rows) == len(RawLog(log).events)
    assert not [label for _, label, _ in rows if "_" in label]
    assert ("[0/1]", "[0/1] first try, restarted", "guard added") in rows
    assert ("[1/1_1]", "[1/1]", "guard added") in rows  # (the compiled attempt's row, linked)
    anchors = set(re.findall(r'\bid="([^"]+)"', page))
    assert all(html.unescape(target) in anchors for target, _, _ in rows)


def test_a_restarted_attempts_guard_is_not_said_unchecked_where_the_compiled_attempt_named_its_size_otherwise(
        capsys, tmp_path):
    # library_args_multiline with [0/1_1] (the attempt that compiled) naming x's size s99 where [0/1] named it s77,
    # and adding the same guard on it, Eq(s99, s48): the compiled code does check that condition, so "added only by
    # [0/1]'s first attempt ...: the compiled code does not check it", decided by the expressions' text, was false.
    # The note says what the text shows: no later attempt added this expression.
    lines = gzip.decompress(torch213("library_args_multiline.log.gz").read_bytes()).decode("utf-8").split("\n")
    [guard] = [line for line in lines if '"guard_added_fast": {"expr": "Eq(s77, s48)"' in line]
    assert '"frame_id": 0, "frame_compile_id": 1, "attempt": 0}' in guard
    [at] = [i for i, line in enumerate(lines) if '{"create_symbol": {"symbol": "s77",' in line
            and '"frame_id": 0, "frame_compile_id": 1, "attempt": 1' in line]
    lines[at] = lines[at].replace('"symbol": "s77"', '"symbol": "s99"')
    lines.insert(at + 1, guard.replace("Eq(s77, s48)", "Eq(s99, s48)").replace('"attempt": 0}', '"attempt": 1}'))
    log = tmp_path / "renamed.log"
    log.write_text("\n".join(lines), encoding="utf-8")
    ds = _summary(capsys, log, "--json")["dynamic_shapes"]
    assert _condition(ds, "Eq(s99, s48)")["compilations"] == ["[0/1]"]
    said = _condition(ds, "Eq(s77, s48)")["discarded_text"]
    assert said == ("added only by [0/1]'s first attempt, which Dynamo restarted; no later attempt of [0/1] added this "
                    "expression")
    assert "does not check" not in " ".join(_summary(capsys, log)["text"].split())


def test_grouping_guards_works_out_the_compilations_only_of_conditions_a_restarted_attempt_added(monkeypatch):
    # Counting work, not time: a condition's compilations parse each of its compile ids, and grouping the guards (three
    # times a report) asked it of every condition to sort those only restarted attempts added last, and
    # discarded_text asked it before looking whether any attempt was restarted. gpt2_train (CUDA, torch 2.11): [0/1]
    # and [1/1] restarted, most of its conditions added by no restarted attempt.
    from compilescope.analyses.dynamic_shapes import GuardCondition, dynamic_shapes, group_guards

    from ..conftest import shared

    ds = dynamic_shapes(read_trace(str(shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"))))
    asked: list[GuardCondition] = []
    compilations = GuardCondition.compilations.fget
    monkeypatch.setattr(GuardCondition, "compilations", property(lambda c: asked.append(c) or compilations(c)))
    conditions = [c for place in group_guards(ds.guards, ds.discarded_attempts) for c in place.conditions]
    restarted = [c for c in conditions if c.discarded_attempts]
    assert restarted and len(restarted) < len(conditions)
    assert sorted(map(id, asked)) == sorted(map(id, restarted))  # (asked before sorting: in another order)
    asked.clear()
    assert [c.discarded_text for c in conditions if not c.discarded_attempts] == [None] * (len(conditions) - len(restarted))
    assert asked == []
