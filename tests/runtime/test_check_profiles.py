"""`compilescope check --baseline B --max-run-time-ratio R`: the CI gate on run time, from each run's profile (the one
beside its log, or --profile / --baseline-profile); a side without a profile is refused.

The pair is tests/data/cuda_torch211's MLP (an H200): profile_launch_bound, the default mode, 20 calls profiled;
profile_cudagraphs, reduce-overhead, 5 CUDA graph replays in its "compiled" range (after 5 eager calls). Expected values
are read from the raw profiles with json.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil

from compilescope.wording import format_us

from ..conftest import cuda211, run_cli, torch213

LAUNCH_BOUND, CUDAGRAPHS = cuda211("profile_launch_bound.log.gz"), cuda211("profile_cudagraphs.log.gz")


def _events(name: str) -> list[dict]:
    with gzip.open(cuda211(f"{name}.profile.json.gz"), "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def _per_call() -> dict[str, tuple[float, float]]:
    """Each profile's (kernel time, GPU time) per call of [0/0], the one graph each ran: the launch-bound one's 140
    kernels over 20 calls and its GPU span; the CUDA graphs one's kernels that its 5 cudaGraphLaunch calls replayed,
    and the span of the kernels launched inside its "compiled" range."""
    a = _events("profile_launch_bound")
    kernels = [e for e in a if e["cat"] == "kernel"]
    calls = sum(1 for e in a if e["cat"] == "cpu_op" and e["name"].startswith("## Call CompiledFxGraph"))
    assert calls == 20
    span = max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels)
    out = {"launch_bound": (sum(e["dur"] for e in kernels) / calls, span / calls)}
    b = _events("profile_cudagraphs")
    [compiled] = [e for e in b if e["cat"] == "user_annotation" and e["name"] == "compiled"]
    inside = {e["args"]["correlation"] for e in b if e["cat"] == "cuda_runtime"
              and compiled["ts"] <= e["ts"] < compiled["ts"] + compiled["dur"]}
    replays = {e["args"]["correlation"] for e in b if e["name"] == "cudaGraphLaunch"} & inside
    assert len(replays) == 5
    replayed = sum(e["dur"] for e in b if e["cat"] == "kernel" and e["args"].get("correlation") in replays)
    gpu = [e for e in b if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"].get("correlation") in inside]
    out["cudagraphs"] = (replayed / 5, (max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)) / 5)
    return out


def test_a_graph_whose_kernels_per_call_grew_past_the_ratio_fails(capsys):
    """The CUDA graphs run against the launch-bound baseline: [0/0]'s kernels take 29.5 µs a call in the baseline and
    30.3 µs in the run (1.03x), the GPU time per call 226 µs against 222 µs. R 1.02 fails naming the graph; R 1.05
    passes, and the pass says what it compared."""
    per_call = _per_call()
    (a_kernels, a_gpu), (b_kernels, b_gpu) = per_call["launch_bound"], per_call["cudagraphs"]
    assert 1.02 < b_kernels / a_kernels < 1.05 and b_gpu < a_gpu
    capsys.readouterr()
    assert run_cli("check", CUDAGRAPHS, "--baseline", LAUNCH_BOUND, "--max-run-time-ratio", "1.02") == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        f"baseline-run-time: [0/0]'s kernels {format_us(a_kernels)} → {format_us(b_kernels)} per call, "
        f"{b_kernels / a_kernels:.2f}x the baseline's, more than the 1.02x allowed (--max-run-time-ratio)")
    assert run_cli("check", CUDAGRAPHS, "--baseline", LAUNCH_BOUND, "--max-run-time-ratio", "1.05", "--json") == 0
    [rule] = [r for r in json.loads(capsys.readouterr().out)["rules"] if r["rule"] == "baseline-run-time"]
    assert rule["passed"] and rule["message"] == (
        f"GPU time {format_us(a_gpu)} → {format_us(b_gpu)} per call ({b_gpu / a_gpu:.2f}x); [0/0]'s kernels "
        f"{format_us(a_kernels)} → {format_us(b_kernels)} per call ({b_kernels / a_kernels:.2f}x): no regression")


def test_the_gpu_time_per_call_counts_its_idle(capsys):
    """The other way round: the launch-bound run's kernels are faster per call than the CUDA graphs baseline's, but
    its GPU waits between them, 226 µs a call against 222 µs (1.02x): R 1.01 fails on the GPU time per call."""
    per_call = _per_call()
    (a_kernels, a_gpu), (b_kernels, b_gpu) = per_call["cudagraphs"], per_call["launch_bound"]
    assert b_kernels < a_kernels and 1.01 < b_gpu / a_gpu < 1.05
    capsys.readouterr()
    assert run_cli("check", LAUNCH_BOUND, "--baseline", CUDAGRAPHS, "--max-run-time-ratio", "1.01", "--json") == 1
    [rule] = [r for r in json.loads(capsys.readouterr().out)["rules"] if r["rule"] == "baseline-run-time"]
    assert rule["details"] == [f"GPU time {format_us(a_gpu)} → {format_us(b_gpu)} per call, {b_gpu / a_gpu:.2f}x the "
                               "baseline's, more than the 1.01x allowed (--max-run-time-ratio)"]


def test_profiles_given_and_a_side_without_one_is_refused(capsys, tmp_path):
    """A log with no profile beside it is refused (exit 2), naming the side and how to give one; --profile and
    --baseline-profile give them; each needs the gate, and the gate needs --baseline."""
    alone = tmp_path / "profile_cudagraphs.log.gz"
    shutil.copy(CUDAGRAPHS, alone)
    capsys.readouterr()
    assert run_cli("check", alone, "--baseline", LAUNCH_BOUND, "--max-run-time-ratio", "1.5") == 2
    err = capsys.readouterr().err
    assert "--max-run-time-ratio: the run was read with no profile: put its torch.profiler trace beside its log" in err
    assert run_cli("check", LAUNCH_BOUND, "--baseline", alone, "--max-run-time-ratio", "1.5") == 2
    assert "--max-run-time-ratio: the baseline was read with no profile" in capsys.readouterr().err
    assert run_cli("check", alone, "--baseline", LAUNCH_BOUND, "--max-run-time-ratio", "1.5",
                   "--profile", cuda211("profile_cudagraphs.profile.json.gz")) == 0
    assert "baseline-run-time passed: GPU time " in capsys.readouterr().out
    # A profile of another program is not this log's: refused too, not compared
    assert run_cli("check", alone, "--baseline", LAUNCH_BOUND, "--max-run-time-ratio", "1.5",
                   "--profile", cuda211("hf_gpt2_profile.profile.json.gz")) == 2
    assert "the run has a profile, hf_gpt2_profile.profile.json.gz, that is not joined to its log" in capsys.readouterr().err
    for args in (("--max-run-time-ratio", "1.5"), ("--baseline", LAUNCH_BOUND, "--profile", "x.json"),
                 ("--baseline", LAUNCH_BOUND, "--max-run-time-ratio", "0.9")):
        assert run_cli("check", CUDAGRAPHS, *args) == 2
    err = capsys.readouterr().err
    assert "--max-run-time-ratio compares with a baseline: give --baseline LOG" in err
    assert "--profile is read for the run-time gate: give --max-run-time-ratio R" in err
    assert "--max-run-time-ratio must be 1 or more" in err


def test_without_the_option_no_profile_is_read_and_no_rule_added(capsys):
    """The gate is asked for: a plain --baseline check reads no profile (its stderr names none) and has no such rule."""
    capsys.readouterr()
    assert run_cli("check", CUDAGRAPHS, "--baseline", LAUNCH_BOUND, "--json") == 0
    captured = capsys.readouterr()
    assert "baseline-run-time" not in [r["rule"] for r in json.loads(captured.out)["rules"]]
    assert "profile" not in captured.err


def test_a_cpu_profile_against_a_gpu_one_is_refused(capsys):
    """The baseline's profile a CPU one (torch213's cpu_slower_than_eager, recorded on a CPU: no GPU event in it), the
    run's a GPU one (profile_launch_bound's kernels): a CPU op's time is no kernel's, so the gate refuses (exit 2)
    rather than pass '[0/0]'s kernels 86 µs → 29 µs per call (0.34x)'."""
    with gzip.open(torch213("cpu_slower_than_eager.compiled.profile.json.gz"), "rt") as f:
        cpu_events = json.load(f)["traceEvents"]
    assert not any(e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") for e in cpu_events)
    assert any(e["cat"] == "kernel" for e in _events("profile_launch_bound"))
    capsys.readouterr()
    assert run_cli("check", LAUNCH_BOUND, "--baseline", torch213("cpu_slower_than_eager.log.gz"),
                   "--baseline-profile", torch213("cpu_slower_than_eager.compiled.profile.json.gz"),
                   "--max-run-time-ratio", "1.5") == 2
    captured = capsys.readouterr()
    assert "baseline-run-time" not in captured.out
    assert ("--max-run-time-ratio: the run has a GPU profile, profile_launch_bound.profile.json.gz, and the baseline a "
            "CPU one, cpu_slower_than_eager.compiled.profile.json.gz: ") in captured.err


def _cut_beside(tmp_path, name: str, size: int):
    """A copy of a real log with the first `size` bytes of its real .gz profile beside it (a copy cut short)."""
    folder = tmp_path / f"cut_{size}"
    folder.mkdir()
    log = folder / f"{name}.log.gz"
    shutil.copy(cuda211(f"{name}.log.gz"), log)
    data = cuda211(f"{name}.profile.json.gz").read_bytes()
    assert size < len(data)
    (folder / f"{name}.profile.json.gz").write_bytes(data[:size])
    return log, folder / f"{name}.profile.json.gz"


def test_a_profile_that_cannot_be_used_is_refused_saying_why(capsys, tmp_path):
    """A profile beside the log cut short (a copy of profile_launch_bound's .gz): half of it still holds events of
    [0/0]'s calls, and the gate compared their part as if it were the run (passing at a fraction of the baseline's
    time per call); its first
    300 bytes hold no event list, and the gate said the run 'was read with no profile: put its torch.profiler trace
    beside its log', where one lay. Each is refused (exit 2) on one line saying why the profile is unusable: what
    summary says of the same file (the note on its runtime section, or its error)."""
    half = len(cuda211("profile_launch_bound.profile.json.gz").read_bytes()) // 2
    for size in (half, 300):
        log, profile = _cut_beside(tmp_path, "profile_launch_bound", size)
        with gzip.open(profile, "rb") as f:  # cut: the gzip stream ends before its end
            try:
                f.read()
                raise AssertionError("not cut")
            except EOFError:
                pass
        capsys.readouterr()
        if size == half:
            assert run_cli("summary", "--json", log, "--profile", profile) == 0
            [read] = json.loads(capsys.readouterr().out)["runtime"]["profiles"]
            assert read["matched"] and read["graphs"]  # [0/0]'s calls in the part read: a run-time gate could compare
            why = read["notes"][0]
            assert why.startswith("read stopped early: the compressed file is truncated; ")
        else:
            assert run_cli("summary", log, "--profile", profile) == 2
            why = capsys.readouterr().err.strip().splitlines()[-1].removeprefix(f"compilescope: error: {profile}: ")
            assert why.startswith("not a torch.profiler Chrome trace (no traceEvents list; read stopped early: the "
                                  "compressed file is truncated)")
        assert run_cli("check", log, "--baseline", CUDAGRAPHS, "--max-run-time-ratio", "1.5") == 2
        captured = capsys.readouterr()
        assert "baseline-run-time" not in captured.out
        refusal = [line for line in captured.err.splitlines() if "--max-run-time-ratio:" in line]
        assert refusal == [f"compilescope: error: --max-run-time-ratio: the run has a profile, {profile.name}, that "
                           f"cannot be used: {why}"]
        assert run_cli("check", CUDAGRAPHS, "--baseline", log, "--max-run-time-ratio", "1.5") == 2
        assert f"--max-run-time-ratio: the baseline has a profile, {profile.name}, that cannot be used: {why}" in \
            capsys.readouterr().err
        # diff compares the logs, and says why not their run time
        assert run_cli("diff", log, CUDAGRAPHS, "--json") in (0, 1)
        [rank] = json.loads(capsys.readouterr().out)["ranks"]
        notes = rank["notes"]
        assert f"run time not compared: A's profile {profile.name} cannot be used ({why})" in notes


def test_a_profile_given_that_cannot_be_used_is_refused_as_one_beside_the_log(capsys, tmp_path):
    """--profile / --baseline-profile naming the first 300 bytes of profile_launch_bound's .gz (no event list in them)
    ended with the reader's own error (`compilescope: error: <path>: not a torch.profiler Chrome trace ...`), where the
    same file beside the log was refused as unusable, saying why: now both are that one line (exit 2); a profile
    given that is not there says so the same way."""
    cut = tmp_path / "given.profile.json.gz"
    cut.write_bytes(cuda211("profile_launch_bound.profile.json.gz").read_bytes()[:300])
    capsys.readouterr()
    assert run_cli("summary", LAUNCH_BOUND, "--profile", cut) == 2
    why = capsys.readouterr().err.strip().splitlines()[-1].removeprefix(f"compilescope: error: {cut}: ")
    assert why.startswith("not a torch.profiler Chrome trace (no traceEvents list")
    for option, side, log, baseline in (("--profile", "run", LAUNCH_BOUND, CUDAGRAPHS),
                                        ("--baseline-profile", "baseline", CUDAGRAPHS, LAUNCH_BOUND)):
        assert run_cli("check", log, "--baseline", baseline, "--max-run-time-ratio", "1.5", option, cut) == 2
        captured = capsys.readouterr()
        errors = [line for line in captured.err.splitlines() if line.startswith("compilescope: error:")]
        assert errors == [f"compilescope: error: --max-run-time-ratio: the {side} has a profile, {cut.name}, that "
                          f"cannot be used: {why}"]
        assert "baseline-run-time" not in captured.out
    missing = tmp_path / "missing.profile.json"
    assert run_cli("check", LAUNCH_BOUND, "--baseline", CUDAGRAPHS, "--max-run-time-ratio", "1.5",
                   "--profile", missing) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"compilescope: error: --max-run-time-ratio: the run has a profile, {missing.name}, that cannot be used: "
        f"{os.strerror(errno.ENOENT)}")
