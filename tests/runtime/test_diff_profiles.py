"""`compilescope diff A B` with the runs' profiles (tests/data/cuda_torch211, an H200): each side's profile is the
one beside its log (`<name>.profile.json.gz`) or the one given, and the diff says what changed in run time per call.

Expected values are read from the raw profiles with json: kernel durations, graph ranges, the GPU's span.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil

import pytest

from ..conftest import cuda211, run_cli, torch213
from .intervals import union_length


def _events(name: str) -> list[dict]:
    with gzip.open(cuda211(f"{name}.profile.json.gz"), "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def _diff_json(capsys, *args) -> tuple[int, dict]:
    capsys.readouterr()
    rc = run_cli("diff", *args, "--json")
    [run] = json.loads(capsys.readouterr().out)["ranks"]  # two single logs: one pair
    return rc, run


def test_diff_reads_the_profile_beside_each_log_and_compares_the_run_per_call(capsys):
    """The same MLP in the default mode (A: 20 calls, one profile) and with reduce-overhead (B: 5 CUDA graph replays
    in the profile's "compiled" range, after 5 eager calls). Per call, [0/0]'s kernels take 29.5 µs in A and 30.3 µs
    in B (B's replays, its input copy left to the graph's wrapper), and the GPU ~226 µs against ~222 µs: CUDA graphs
    did not make these calls faster, as profiled; said as a note, not a change, beside the CUDA graphs change."""
    a = _events("profile_launch_bound")
    a_kernels = [e for e in a if e["cat"] == "kernel"]
    a_span = max(e["ts"] + e["dur"] for e in a_kernels) - min(e["ts"] for e in a_kernels)
    a_calls = sum(1 for e in a if e["cat"] == "cpu_op" and e["name"].startswith("## Call CompiledFxGraph"))
    assert a_calls == 20
    b = _events("profile_cudagraphs")
    graphs = [e for e in b if e["cat"] == "cpu_op" and e["name"].startswith("## Call CompiledFxGraph")]
    replays = {e["args"]["correlation"] for e in b if e["name"] == "cudaGraphLaunch"
               and any(g["ts"] <= e["ts"] < g["ts"] + g["dur"] for g in graphs)}
    b_replayed = sum(e["dur"] for e in b if e["cat"] == "kernel" and e["args"].get("correlation") in replays)
    assert (len(graphs), len(replays)) == (5, 5)

    rc, run = _diff_json(capsys, cuda211("profile_launch_bound.log.gz"), cuda211("profile_cudagraphs.log.gz"))
    assert rc == 1  # CUDA graphs now used: a change of the log's
    assert [c["section"] for c in run["changes"]] == ["cudagraphs"]
    [note] = [n for n in run["notes"] if n.startswith("run time")]
    assert note.startswith("run time (profiles profile_launch_bound.profile.json.gz → profile_cudagraphs.profile.json.gz)")
    a_per_call = sum(e["dur"] for e in a_kernels) / a_calls
    assert f"[0/0] kernels {_us(a_per_call)} → {_us(b_replayed / 5)} per call" in note
    assert f"GPU time {_us(a_span / a_calls)} → " in note
    a_idle = (a_span - union_length([(e["ts"], e["ts"] + e["dur"]) for e in a_kernels])) / a_span
    assert f"GPU idle {a_idle:.0%} → " in note and "not a change (under 1.2x" in note


def _us(us: float) -> str:
    from compilescope.wording import format_us

    return format_us(us)


def test_a_profile_after_the_first_step_halves_nothing_but_the_first_calls(capsys, tmp_path):
    """capture_profile's log against itself, B profiled as compilescope advises (after a first step): its profile cut
    to the events from the second forward graph call on. A's five steps hold the compile's first calls (GPU time
    ~53 ms a call); B's four 6.8 ms each (the GPU span of the cut over its 4 steps): a change of run time per call,
    said with the calls each side made."""
    events = _events("capture_profile")
    forward = sorted((e for e in events if e["cat"] == "cpu_op" and e["name"].startswith("## Call CompiledFxGraph")),
                     key=lambda e: e["ts"])
    start = forward[2]["ts"]  # calls alternate forward, backward: [2] is the second step's forward
    kept = [e for e in events if e["ts"] >= start]
    with gzip.open(cuda211("capture_profile.profile.json.gz"), "rt") as f:
        doc = json.load(f)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") != "X"] + kept
    cut = tmp_path / "after_first_step.json"
    cut.write_text(json.dumps(doc))
    log_a = tmp_path / "a" / "capture_profile.log.gz"
    log_a.parent.mkdir()
    shutil.copy(cuda211("capture_profile.log.gz"), log_a)
    shutil.copy(cuda211("capture_profile.profile.json.gz"), tmp_path / "a" / "capture_profile.profile.json.gz")

    rc, out = _diff_json(capsys, log_a, cuda211("capture_profile.log.gz"), "--profile-b", cut)
    assert rc == 1
    [change] = [c for c in out["changes"] if c["section"] == "runtime"]
    assert change["detail"]["profile_a"] == "capture_profile.profile.json.gz"
    assert change["detail"]["profile_b"] == "after_first_step.json"
    [graph] = change["detail"]["graphs"]
    assert (graph["compile_id"], graph["a_calls"], graph["b_calls"]) == ("[0/0]", 5, 4)
    b_kernels = [(e["ts"], e["ts"] + e["dur"]) for e in kept if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    b_span = max(t for _, t in b_kernels) - min(s for s, _ in b_kernels)
    a_per_call, b_per_call = change["detail"]["per_call_us"]
    assert b_per_call == pytest.approx(b_span / 4, rel=1e-6)
    assert a_per_call > 5 * b_per_call  # the first calls' ~170 ms of GPU idle (and the compile's 5.4 s), gone
    assert change["title"].startswith(f"run time: GPU time {_us(a_per_call)} → {_us(b_span / 4)} per call; [0/0] kernels")


def test_no_profiles_and_a_side_without_one(capsys, tmp_path):
    """--no-profiles compares no run time; a profile on one side only is a note, not a change."""
    a, b = cuda211("profile_launch_bound.log.gz"), cuda211("profile_cudagraphs.log.gz")
    _, doc = _diff_json(capsys, a, b, "--no-profiles")
    assert not any(n.startswith("run time") for n in doc["notes"])
    alone = tmp_path / "profile_cudagraphs.log.gz"
    shutil.copy(b, alone)
    _, doc = _diff_json(capsys, a, alone)
    assert "run time not compared: only A was read with a profile (a profile beside each log, or --profile-a/--profile-b)" \
        in doc["notes"]


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"traceEvents": []}'], ids=["empty", "garbage", "no-events"])
def test_a_bad_profile_found_beside_a_log_is_a_warning_and_one_given_an_error(capsys, tmp_path, content):
    """A profile diff finds on its own that cannot be read leaves A without run time (one warning line, the logs still
    compared: the CUDA graphs change, exit 1), and the note says why (the warning's reason), not that A had none; the
    same file given with --profile-a is the clear error (exit 2): one line, as check's refusal of a profile given
    (`--max-run-time-ratio: the run has a profile, X, that cannot be used: why`), not the reader's own error; a
    profile given that is not there says so alike."""
    a = tmp_path / "profile_launch_bound.log.gz"
    shutil.copy(cuda211("profile_launch_bound.log.gz"), a)
    bad = tmp_path / "profile_launch_bound.profile.json"
    bad.write_bytes(content)
    capsys.readouterr()
    rc = run_cli("diff", a, cuda211("profile_cudagraphs.log.gz"), "--json")
    captured = capsys.readouterr()
    assert rc == 1
    [run] = json.loads(captured.out)["ranks"]
    assert [c["section"] for c in run["changes"]] == ["cudagraphs"]
    [warning] = [line for line in captured.err.splitlines() if "profile_launch_bound.profile.json" in line
                 or "beside profile_launch_bound.log.gz" in line]
    said = "compilescope: warning: the profile beside profile_launch_bound.log.gz is not read, its run time not compared ("
    assert warning.startswith(said) and warning.endswith(")")
    why = warning.removeprefix(said)[:-1]
    assert f"run time not compared: A's profile {bad.name} cannot be used ({why})" in run["notes"]
    assert run_cli("diff", a, cuda211("profile_cudagraphs.log.gz"), "--profile-a", bad) == 2
    [error] = [line for line in capsys.readouterr().err.splitlines() if line.startswith("compilescope: error:")]
    assert error == f"compilescope: error: --profile-a: A has a profile, {bad.name}, that cannot be used: {why}"
    missing = tmp_path / "missing.profile.json"
    assert run_cli("diff", a, cuda211("profile_cudagraphs.log.gz"), "--profile-b", missing) == 2
    [error] = [line for line in capsys.readouterr().err.splitlines() if line.startswith("compilescope: error:")]
    assert error == (f"compilescope: error: --profile-b: B has a profile, {missing.name}, that cannot be used: "
                     f"{os.strerror(errno.ENOENT)}")


def test_a_cpu_profile_and_a_gpu_one_are_said_and_not_compared(capsys):
    """A's profile a CPU one (torch213's cpu_slower_than_eager: no GPU event in it), B's a GPU one (profile_launch_bound's
    kernels): their times are of different things, so run time is not compared (no 'run time' change labelled with
    A's timeline) and the note says which side is which."""
    with gzip.open(torch213("cpu_slower_than_eager.compiled.profile.json.gz"), "rt") as f:
        assert not any(e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") for e in json.load(f)["traceEvents"])
    assert any(e["cat"] == "kernel" for e in _events("profile_launch_bound"))
    _, run = _diff_json(capsys, torch213("cpu_slower_than_eager.log.gz"), cuda211("profile_launch_bound.log.gz"),
                        "--profile-a", torch213("cpu_slower_than_eager.compiled.profile.json.gz"))
    assert not any(c["section"] == "runtime" for c in run["changes"])
    [note] = [n for n in run["notes"] if n.startswith("run time")]
    assert note.startswith("run time not compared: B has a GPU profile, profile_launch_bound.profile.json.gz, and A a "
                           "CPU one, cpu_slower_than_eager.compiled.profile.json.gz: ")


def test_a_profile_given_for_a_directory_of_rank_logs_is_refused(capsys):
    """ddp_uneven_batch holds two rank logs (rank_0, rank_1): a profile is joined to one log, so --profile-a/-b given
    for it is refused (exit 2, saying so), not dropped while the ranks compare as if none were given; check's --profile
    too."""
    ranks = cuda211("ddp_uneven_batch")
    assert sorted(p.name.split("_rank_")[1][0] for p in ranks.glob("*.log.gz")) == ["0", "1"]
    profile = cuda211("profile_cudagraphs.profile.json.gz")
    capsys.readouterr()
    assert run_cli("diff", ranks, ranks, "--profile-a", profile, "--profile-b", profile) == 2
    message = f"{ranks} holds 2 rank logs, and the profile given for it, profile_cudagraphs.profile.json.gz, is read " \
              "with one log: give one rank's log with it"
    assert message in capsys.readouterr().err
    assert run_cli("check", ranks, "--baseline", ranks, "--max-run-time-ratio", "1.5", "--profile", profile) == 2
    assert message in capsys.readouterr().err


def test_a_profile_of_another_run_is_said_and_not_compared(capsys):
    """B given hf_gpt2_profile's profile with capture_profile's log: none of its graphs or kernel names is the log's
    (another program), so B's run time is not compared, and the note says whose profile was not joined."""
    log = cuda211("capture_profile.log.gz")
    _, run = _diff_json(capsys, log, log, "--profile-b", cuda211("hf_gpt2_profile.profile.json.gz"))
    [note] = [n for n in run["notes"] if n.startswith("run time")]
    assert note.startswith("run time not compared: B's profile hf_gpt2_profile.profile.json.gz is not joined to its log "
                           "(this profile is from another run")
    assert not any(c["section"] == "runtime" for c in run["changes"])


def _part_kernels(events: list[dict], part: str) -> list[dict]:
    """The GPU work launched inside the profile's record_function range `part` ("eager", "compiled")."""
    [span] = [e for e in events if e["cat"] == "user_annotation" and e["name"] == part]
    inside = {e["args"]["correlation"] for e in events if e["cat"] in ("cuda_runtime", "cuda_driver")
              and span["ts"] <= e["ts"] < span["ts"] + span["dur"] and "correlation" in e.get("args", {})}
    return [e for e in events if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")
            and e["args"].get("correlation") in inside]


def test_the_eager_part_of_a_profile_holding_both_runs_is_compared_too(capsys, tmp_path):
    """profile_cudagraphs holds the MLP eager (5 calls in its "eager" range) and compiled (5 replays in "compiled"):
    diff compared only its compiled part and said nothing of the eager one. Against the launch-bound profile (no
    eager run), the note says what B's compiled part took against its own eager part; against a copy of itself, the
    eager parts' kernels and idle are compared (the same code in both: a control for the machine) and the speed-ups."""
    b = _events("profile_cudagraphs")
    eager, compiled = _part_kernels(b, "eager"), _part_kernels(b, "compiled")
    eager_us, compiled_us = sum(e["dur"] for e in eager), sum(e["dur"] for e in compiled)
    speedup = eager_us / compiled_us
    assert 1.0 < speedup < 1.2  # 184 µs against 172 µs
    eager_span = max(e["ts"] + e["dur"] for e in eager) - min(e["ts"] for e in eager)
    eager_idle = (eager_span - union_length([(e["ts"], e["ts"] + e["dur"]) for e in eager])) / eager_span

    _, run = _diff_json(capsys, cuda211("profile_launch_bound.log.gz"), cuda211("profile_cudagraphs.log.gz"))
    [note] = [n for n in run["notes"] if n.startswith("run time")]
    assert f"B's profile also holds an eager run: its compiled part ran {speedup:.2f}x faster (kernel time)" in note

    copy = tmp_path / "profile_cudagraphs.log.gz"
    shutil.copy(cuda211("profile_cudagraphs.log.gz"), copy)
    shutil.copy(cuda211("profile_cudagraphs.profile.json.gz"), tmp_path / "profile_cudagraphs.profile.json.gz")
    _, run = _diff_json(capsys, cuda211("profile_cudagraphs.log.gz"), copy)
    [note] = [n for n in run["notes"] if n.startswith("run time")]
    assert (f"eager part {_us(eager_us)} → {_us(eager_us)} of kernels, GPU idle {eager_idle:.0%} → {eager_idle:.0%}; "
            f"the compiled part's speed-up over its profile's eager part (kernel time) {speedup:.2f}x → {speedup:.2f}x") in note


def _scaled_copy(tmp_path, name: str, scale: float):
    """A copy of a cuda_torch211 log and its profile in tmp_path, the profile's times multiplied by `scale`: every
    event's start (from the first) and duration."""
    with gzip.open(cuda211(f"{name}.profile.json.gz"), "rt") as f:
        trace = json.load(f)
    t0 = min(e["ts"] for e in trace["traceEvents"] if "ts" in e)
    for e in trace["traceEvents"]:
        if "ts" in e:
            e["ts"] = t0 + (e["ts"] - t0) * scale
        if "dur" in e:
            e["dur"] *= scale
    tmp_path.mkdir()
    shutil.copy(cuda211(f"{name}.log.gz"), tmp_path / f"{name}.log.gz")
    with gzip.open(tmp_path / f"{name}.profile.json.gz", "wt") as f:
        json.dump(trace, f)
    return tmp_path / f"{name}.log.gz", trace


def test_a_diff_whose_eager_part_changed_as_much_as_the_compiled_one_says_the_machine_changed(capsys, tmp_path):
    """No real pair of profiles of one program on two machines exists here, so B is profile_cudagraphs with every time
    multiplied by 1.5 (a machine that runs everything 1.5x slower: the same events, order and nesting). Its compiled
    part's kernels per call are 1.5x A's, and its eager part's too: the speed-up over eager holds, so diff says the
    machine changed, not the compile. The control: B with only the compiled part's kernels 1.5x longer (the eager
    part as recorded) is a change of the compiled code, which diff must not put down to the machine."""
    a = _events("profile_cudagraphs")
    compiled = _part_kernels(a, "compiled")
    eager_us, compiled_us = sum(e["dur"] for e in _part_kernels(a, "eager")), sum(e["dur"] for e in compiled)

    slower, trace = _scaled_copy(tmp_path / "slower", "profile_cudagraphs", 1.5)
    _, run = _diff_json(capsys, cuda211("profile_cudagraphs.log.gz"), slower)
    [change] = [c for c in run["changes"] if c["section"] == "runtime"]
    assert change["detail"]["machine_changed"] is True
    # its speed-ups: eager over compiled kernel time, in each (the same 1.5x on both sides of B's)
    b = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert sum(e["dur"] for e in _part_kernels(b, "compiled")) == pytest.approx(1.5 * compiled_us)
    assert change["detail"]["speedup"] == pytest.approx([eager_us / compiled_us] * 2, rel=1e-4)
    assert ("the eager parts slowed down as much as the compiled ones ([0/0]'s kernels 1.50x slower per call, the "
            "speed-up over eager held): the machine or its load changed, not the compile") in change["title"]

    with gzip.open(cuda211("profile_cudagraphs.profile.json.gz"), "rt") as f:
        raw = json.load(f)["traceEvents"]
    compiled_ids = {(e["ts"], e["name"]) for e in compiled}
    assert sum(1 for e in raw if e.get("ph") == "X" and (e["ts"], e["name"]) in compiled_ids) == len(compiled)
    control = tmp_path / "control"
    control.mkdir()
    for e in raw:
        if e.get("ph") == "X" and (e["ts"], e["name"]) in compiled_ids:
            e["dur"] *= 1.5
    shutil.copy(cuda211("profile_cudagraphs.log.gz"), control / "profile_cudagraphs.log.gz")
    with gzip.open(control / "profile_cudagraphs.profile.json.gz", "wt") as f:
        json.dump({"traceEvents": raw}, f)
    _, run = _diff_json(capsys, cuda211("profile_cudagraphs.log.gz"), control / "profile_cudagraphs.log.gz")
    [change] = [c for c in run["changes"] if c["section"] == "runtime"]
    assert change["detail"]["machine_changed"] is False and "the machine" not in change["title"]
    assert change["detail"]["speedup"][1] == pytest.approx(eager_us / compiled_us / 1.5, rel=1e-4)
