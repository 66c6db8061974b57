"""A real 2-rank FSDP2 training job on CPU (gloo, torch 2.13), recorded by `compilescope run --fresh-cache --
torchrun`: tests/data/torch213/multi_rank_fsdp/ from tests/multirank/programs/fsdp2_blocks.py (make_multi_rank.py
--fsdp): each block and the model sharded with fully_shard, then torch.compile(model). multi_rank_fsdp_fixed/
(--fsdp-fixed): each block compiled, then sharded.

What the logs say (zcat | grep, as _raw below reads them): on each rank [0/0] is Model.forward (first line 44), whose
one dynamo_graph_break_reason is "Graph break in user code at .../torch/distributed/fsdp/_fully_shard/
_fsdp_common.py:30" ("Attempted to call function marked as skipped": `disable`), with the program's line 46
`x = block(x)` in its user traceback and "frame skipped: forward (...fsdp2_blocks.py line 44)" after "graph break in
loop"; its compilation_metrics name _fsdp_common.py line 30 as fail_user_frame. [1/0] and [1/1] are Block.forward
(first line 34). No graph of either log calls torch.ops._c10d_functional (FSDP's collectives run in its hooks).
"""

from __future__ import annotations

import gzip
import json
from html import unescape

import pytest

from compilescope.analyses.insights.analysis import insights
from compilescope.api import load

from ..conftest import REPO
from .conftest import Landing, peer_dir, write_landing

DATA = REPO / "tests" / "data" / "torch213"
JOB, FIXED = DATA / "multi_rank_fsdp", DATA / "multi_rank_fsdp_fixed"
PROGRAM = "fsdp2_blocks.py"


def _log(job, rank: int):
    return job / f"dedicated_log_torch_trace_rank_{rank}.log.gz"


def _raw(job, rank: int) -> str:
    with gzip.open(_log(job, rank), "rt", encoding="utf-8") as f:
        return f.read()


def _metrics(job, rank: int) -> list[dict]:
    return [json.loads(line[line.index("{"):])["compilation_metrics"]
            for line in _raw(job, rank).splitlines() if '{"compilation_metrics": ' in line]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Landing:
    return write_landing(JOB, tmp_path_factory.mktemp("fsdp_cpu") / "out")


def test_the_logs_break_in_fsdps_hook_under_the_programs_loop():
    for rank in (0, 1):
        raw = _raw(JOB, rank)
        assert [(m["compile_id"], m["co_firstlineno"]) for m in _metrics(JOB, rank)] == [
            ("0/0", 44), ("1/0", 34), ("1/1", 34)]
        failed = _metrics(JOB, rank)[0]
        assert failed["fail_user_frame_filename"].endswith("torch/distributed/fsdp/_fully_shard/_fsdp_common.py")
        assert failed["fail_user_frame_lineno"] == 30
        assert raw.count('"name": "dynamo_graph_break_reason"') == 1
        assert f'{PROGRAM}", line 46, in forward\n\t    x = block(x)' in raw
        assert "_c10d_functional" not in raw  # no graph calls a collective
    assert all("_c10d_functional" not in _raw(FIXED, rank) and "dynamo_graph_break_reason" not in _raw(FIXED, rank)
               for rank in (0, 1))


def test_the_break_is_fsdps_with_the_users_call_and_what_to_do():
    ins = insights(load(_log(JOB, 0)))
    [brk] = ins.graph_breaks.breaks
    # Where torch placed it (FSDP's file), and the program's line that called the sharded module.
    assert brk.location is not None and brk.location.short == "_fsdp_common.py:30"
    assert brk.in_fsdp_hook and brk.fsdp_call is not None
    assert (brk.fsdp_call.short, brk.fsdp_call.code) == (f"{PROGRAM}:46", "x = block(x)")
    # In place of torch's hint ("Avoid calling the function `disable`"), FSDP's: compile each block, then shard it.
    assert brk.note is not None and f"{PROGRAM}:46 (`x = block(x)`)" in brk.note
    assert "torch.compile(submodule) first, then fully_shard()" in brk.note and "disable`" not in brk.note
    [err] = ins.errors.errors
    assert err.in_fsdp_hook and err.hints == []
    assert not any("Remove the break" in step for step in err.next_steps)
    assert any("FSDP2's hooks broke the graph, not your code" in step for step in err.next_steps)
    [finding] = [f for f in ins.findings if f.section == "errors"]
    assert finding.detail.startswith(f"a graph break inside one of its loops at {PROGRAM}:46: in FSDP2's hooks")


def test_other_skipped_frames_keep_their_advice():
    # checkpoint_autocast_print: a print breaks inside a loop of the user's own forward, no FSDP.
    ins = insights(load(DATA / "logs" / "checkpoint_autocast_print.log.gz"))
    [err] = ins.errors.errors
    assert not err.in_fsdp_hook and any("Remove the break" in step for step in err.next_steps)
    assert not any(b.in_fsdp_hook for b in ins.graph_breaks.breaks)


def test_the_landing_page_says_no_graph_calls_a_collective(fleet, capsys):
    assert fleet.analysis["graph_collectives"] == {}
    said = fleet.analysis["collectives_in_graphs"]
    assert said.startswith("No compiled graph of any rank calls a collective: the job's collectives")
    assert f'<p id="collectives-in-graphs">{said}</p>' in unescape(fleet.html)
    from ..conftest import run_cli

    assert run_cli("summary", JOB) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "No compiled graph of any rank calls a collective" in out
    assert "cache outcomes, collectives and" not in out  # (none was compared)


def test_graphs_that_call_collectives_are_named(tmp_path):
    # multi_rank_schedule (peer logs): [0/0]'s inductor_collective_schedule holds all_gather_into_tensor,
    # reduce_scatter_tensor and all_reduce calls, [1/0]'s all_reduce only.
    report = write_landing(peer_dir("multi_rank_schedule"), tmp_path / "out")
    assert report.analysis["graph_collectives"] == {"[0/0]": ["all_gather", "all_reduce", "reduce_scatter"],
                                                    "[1/0]": ["all_reduce"]}
    assert report.analysis["collectives_in_graphs"] == (
        "Compiled graphs call collectives: [0/0]: all_gather, all_reduce, reduce_scatter; [1/0]: all_reduce.")


def test_ranks_that_compiled_about_as_long_are_no_straggler(fleet):
    # The same three compiles on each rank, on shared cores: their compile times differ by a percent or so.
    ct = fleet.analysis["compile_time"]
    fast, slow = min(ct["seconds"]), max(ct["seconds"])
    assert slow < 1.25 * fast and not ct["notable"]
    assert "no straggler" in unescape(fleet.html) and 'class="bar slow"' not in fleet.html


def test_a_rank_that_compiled_much_longer_is_marked(landing):
    # multi_rank_schedule: ranks 0 and 2 compiled [0/0]'s 6 scheduled collectives, rank 1 4 of them, in less time.
    report = landing("multi_rank_schedule")
    ct = report.analysis["compile_time"]
    fast, slow = min(ct["seconds"]), max(ct["seconds"])
    assert slow - fast >= 1 and slow >= 1.25 * fast and ct["notable"]
    assert 'class="bar slow"' in report.html and "keeps them waiting at the next collective" in report.html


def test_check_gates_the_job_and_passes_the_fixed_one(capsys):
    from ..conftest import run_cli

    assert run_cli("check", JOB) == 1
    assert "no-failures: rank 0: 1 failed compile" in capsys.readouterr().out
    # The fixed job: no break, no divergence; Block.forward recompiles once ([0/1], its input x requires grad from the
    # second block on: "0/0: tensor 'x' requires_grad mismatch. expected requires_grad=0").
    assert "\t0/0: tensor 'x' requires_grad mismatch. expected requires_grad=0" in _raw(FIXED, 0)
    assert run_cli("check", "--no-rank-divergence", "--max-graph-breaks", "0", "--max-recompiles", "1", FIXED) == 0
    assert run_cli("check", "--max-recompiles", "0", FIXED) == 1


def _dynamo_start_callers(job, rank: int) -> dict[str, tuple[int, str]]:
    """Per compile id, the innermost frame of the program's file below the compiled one on its dynamo_start stack:
    the program's line that called it (torch's frames between are in other files)."""
    out = {}
    for line in _raw(job, rank).splitlines():
        if '{"dynamo_start": ' in line:
            rec = json.loads(line[line.index("{"):])
            *below, compiled = rec["dynamo_start"]["stack"]
            caller = next(f for f in reversed(below) if f["filename"] == compiled["filename"])
            out[f"{rec['frame_id']}/{rec['frame_compile_id']}"] = (caller["line"], caller.get("loc"))
    return out


@pytest.mark.parametrize("job, first, second", [(JOB, "[1/0]", "[1/1]"), (FIXED, "[0/0]", "[0/1]")])
def test_the_requires_grad_recompile_is_the_loops_and_expected(job, first, second):
    # The raw log: both compiles of Block.forward were called by line 46 (x = block(x)); the recompile's guard says the
    # first compile's x had requires_grad=0 (block 0 gets the data, block 1 block 0's output).
    callers = _dynamo_start_callers(job, 0)
    assert callers[first.strip("[]")] == callers[second.strip("[]")] == (46, "x = block(x)")
    reason = f"\t{first.strip('[]')}: tensor 'x' requires_grad mismatch. expected requires_grad=0"
    assert reason in _raw(job, 0)
    ins = insights(load(_log(job, 0)))
    [frame] = ins.recompiles.frames
    assert frame.chain == [first, second] and frame.changes == ["requires_grad"]
    [step] = frame.steps
    assert step.expected == "input_requires_grad" and frame.avoidable == []
    # The cause is the call that passed x requiring grad (the second compile's TENSOR_MATCH of L['x'] says
    # requires_grad=True, the first's False), not where forward first uses x (line 35, self.fc1(x), the user's frame of
    # that guard's F.linear): the row names line 46.
    matches = [line for line in _raw(job, 0).splitlines() if "TENSOR_MATCH: check_tensor(L['x']" in line]
    assert ["requires_grad=False" in m for m in matches] == [True, False]
    assert all("requires_grad=True" in m for m in matches[1:])
    [guard] = step.failed_guards
    assert guard.location is not None and (guard.location.short, guard.location.code) == (f"{PROGRAM}:46", "x = block(x)")
    assert guard.location_label == "x passed in by the call at"
    [advice] = frame.advice
    assert "training and inference" not in advice
    assert f"compiled as {first} and {second} for calls from the same line, {PROGRAM}:46 (`x = block(x)`)" in advice
    assert "what the call before returned" in advice and "mark_dynamic or dynamic=True does not apply" in advice
    [finding] = [f for f in ins.findings if f.section == "recompiles"]
    assert finding.severity == "info" and finding.title == "forward recompiled once, as expected"


def test_a_requires_grad_change_between_two_calls_keeps_the_general_advice():
    # recompiles.py: cg(torch.ones(8, dtype=float64)) at line 36, then cg(torch.ones(..., requires_grad=True)) at 39.
    from compilescope.analyses.recompiles.advice import ADVICE

    ins = insights(load(DATA / "logs" / "recompiles.log"))
    [g] = [f for f in ins.recompiles.frames if f.name == "g"]
    step = next(s for s in g.steps if s.guard and s.guard.change == "requires_grad")
    assert step.compile_id == "[0/3]" and step.expected is None
    assert ADVICE["requires_grad"] in g.advice


def test_diff_places_the_gone_break_at_the_users_call(capsys):
    from ..conftest import run_cli

    run_cli("diff", _log(JOB, 0), _log(FIXED, 0))
    out = " ".join(capsys.readouterr().out.split())
    # torch placed it at _fsdp_common.py:30 (fail_user_frame_lineno); the program's call of the block is line 46.
    assert (f"graph break gone: Attempted to call function marked as skipped in FSDP2's hooks (torch's "
            f"_fsdp_common.py:30), called at {PROGRAM}:46") in out


def test_summary_report_and_check_place_the_break_at_the_users_call(tmp_path, capsys):
    from ..conftest import report, run_cli

    # torch placed the break at _fsdp_common.py:30 (fail_user_frame_lineno, in its wrapper); the program's line 46
    # called the sharded block (test_the_logs_break_in_fsdps_hook_under_the_programs_loop).
    assert run_cli("summary", _log(JOB, 0)) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (f"1. {PROGRAM}:46 in forward, in FSDP2's hooks (torch's _fsdp_common.py:30 in wrapper) · 1 time · [0/0] "
            "Attempted to call function marked as skipped code: x = block(x)") in out
    report(_log(JOB, 0), tmp_path / "out")
    for page in ("index.html", "-_0_0_0/index.html"):
        html = " ".join(unescape((tmp_path / "out" / page).read_text()).split())
        assert (f">{PROGRAM}:46</a> <span class=\"muted\">in forward</span> <span class=\"muted torch-line\">in FSDP2's "
                "hooks (torch's _fsdp_common.py:30 in wrapper)</span><br><code>x = block(x)</code>") in html
    assert run_cli("check", "--max-graph-breaks", "0", _log(JOB, 0)) == 1
    assert ("max-graph-breaks: 1 distinct graph break, at most 0 allowed: Attempted to call function marked as skipped "
            f"in FSDP2's hooks (torch's _fsdp_common.py:30), called at {PROGRAM}:46") in capsys.readouterr().out


def test_check_does_not_count_the_loops_requires_grad_recompile(capsys):
    from ..conftest import run_cli

    # The fixed job's one recompile ([0/1]) is the loop's requires_grad one: expected, and said to be of that kind.
    assert run_cli("check", "--max-avoidable-recompiles", "0", _log(FIXED, 0)) == 0
    assert ("0 avoidable recompiles (1 more expected, not counted: a module's mode, a parameter's requires_grad or a "
            "tensor's requires_grad from the same calling line that no compiled version had)") in capsys.readouterr().out


def test_the_source_page_says_fsdps_hook_broke_the_graph_at_the_users_call(tmp_path):
    from ..conftest import report

    # The break torch placed at its _fsdp_common.py:30 (test_the_logs_break_in_fsdps_hook_under_the_programs_loop) is
    # listed at the program's line 46, x = block(x), the user's call of the sharded block: that line says FSDP2's hook
    # broke the graph there, as the insights do, and what to do, in place of torch's "placed by torch in ...".
    report(_log(JOB, 0), tmp_path / "out")
    pages = sorted(p.name for p in (tmp_path / "out" / "sources").glob("*.html"))
    assert [p.rsplit("_", 1)[0] for p in pages] == [PROGRAM]  # no page of torch's file
    html = " ".join(unescape((tmp_path / "out" / "sources" / pages[0]).read_text()).split())
    line_46 = html[html.index('id="L46"'):]
    line_46 = line_46[:line_46.index('class="src-')]  # up to the next line (or gap)
    torch_line = "in FSDP2's hooks (torch's _fsdp_common.py:30 in wrapper), which this line called"
    assert (f"<strong>graph break</strong>: Attempted to call function marked as skipped <span class=\"muted\">"
            f"({torch_line})</span>") in line_46
    assert "FSDP2's hooks broke the graph, not your code" in line_46
    assert "To do: compile each module you shard on its own, before sharding it" in line_46
    assert "torch.compile(submodule) first, then fully_shard()" in line_46 and "placed by torch" not in html
    # The page's list of breaks says it too; line 44, where forward starts, carries no break.
    assert f'line 46</a>: Attempted to call function marked as skipped <span class="muted">({torch_line})' in html
    line_44 = html[html.index('id="L44"'):html.index('id="L45"')]
    assert "graph break" not in line_44
