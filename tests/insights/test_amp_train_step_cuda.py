"""The mixed-precision training step compiled whole, on the GPU logs (tests/data/cuda_torch211/README.md,
`amp_train_step_cuda*.log.gz`, from programs/amp_train_step_cuda.py, torch 2.11 on an H200): what the CPU journey
(test_amp_train_step.py) found, where torch 2.11 writes it otherwise.
"""

from __future__ import annotations

import re

from compilescope.analyses.insights import insights
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, cuda211, run_cli
from ..tracelog import raw_records

LOG = cuda211("amp_train_step_cuda_whole.log.gz")
CLIP_LOG = cuda211("amp_train_step_cuda_clip.log.gz")
FIXED_LOG = cuda211("amp_train_step_cuda_fixed.log.gz")
PROGRAM = REPO / "tests" / "data" / "cuda_torch211" / "programs" / "amp_train_step_cuda.py"


def _line(code: str) -> int:
    """The line of train_step whose code is `code`: the first in the program (fixed_step repeats the scaler's calls)."""
    return next(i for i, line in enumerate(PROGRAM.read_text().splitlines(), 1) if line.strip() == code)


def _insights(log=LOG):
    with read_trace(str(log)) as trace:
        return insights(trace)


def _raw_breaks(log) -> list[dict]:
    """Each dynamo_graph_break_reason of the raw log: its compile id, the line torch placed it at ("Graph break in user
    code at ..."), its reason and its payload."""
    found = []
    for record, body in raw_records(log):
        if record.get("artifact", {}).get("name") == "dynamo_graph_break_reason":
            where = body.split("\n")[0].removeprefix("Graph break in user code at ")
            found.append({"compile_id": f"{record['frame_id']}/{record['frame_compile_id']}",
                          "file": where.rpartition(":")[0], "line": int(where.rpartition(":")[2]),
                          "reason": next(p for p in body.split("\n")[2:] if p.strip()).strip(), "payload": body})
    return found


def _skipped_calls(log) -> dict[int, tuple[str, str, str]]:
    """The program's line -> (qualname, file, skip reason) of each break at a function Dynamo's skip list holds."""
    found = {}
    for b in _raw_breaks(log):
        m = re.search(r"qualname: ([\w.]+), name: \w+, filename: `([^`]+)`, skip reason: (.*)", b["payload"])
        if m and b["file"].endswith("/amp_train_step_cuda.py"):
            found[b["line"]] = (m[1], m[2], m[3].strip())
    return found


def test_torch_211s_skip_reason_names_no_directory_and_gradscaler_is_still_told():
    # torch 2.11 writes "skip reason: skipped according trace_rules.lookup MOD_SKIPLIST", not 2.13's "file matches
    # MOD_SKIPLIST (/…/torch/amp)": the directory is read from the function's file.
    for log, calls in ((LOG, ("scaler.scale(loss).backward()", "scaler.step(opt)", "scaler.update()")),
                       (CLIP_LOG, ("scaler.scale(loss).backward()", "scaler.unscale_(opt)", "scaler.step(opt)",
                                   "scaler.update()"))):
        raw = _skipped_calls(log)
        amp = {line: qualname for line, (qualname, file, _) in raw.items() if "/torch/amp/" in file}
        assert set(amp) == {_line(c) for c in calls}
        assert all(reason == "skipped according trace_rules.lookup MOD_SKIPLIST" for _, _, reason in raw.values())
        [(other, other_file, _)] = [v for line, v in raw.items() if line not in amp]  # zero_grad: torch/_compile.py
        assert other == "Optimizer.zero_grad" and other_file.endswith("/torch/_compile.py")
        breaks = {b.location.line: b for b in _insights(log).graph_breaks.breaks
                  if b.reason == "Attempted to inline function marked as skipped"}
        first = min(amp)
        for line, qualname in amp.items():
            brk = breaks[line]
            assert brk.amp_function == qualname and brk.amp_note is not None
            assert [h for h in brk.hints if "dont_skip_tracing" in h] == brk.hints_set_aside != []
            assert ("out of train_step" in brk.amp_note) == (line == first)
            assert brk.amp_said_at == (None if line == first else f"amp_train_step_cuda.py:{first}")
        assert breaks[_line("opt.zero_grad()")].amp_function is None


def test_the_summary_says_what_to_do_about_gradscaler_once(capsys):
    first = _line("scaler.scale(loss).backward()")
    assert run_cli("summary", CLIP_LOG) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("note: Dynamo never traces torch.amp (GradScaler)") == 4  # scale, unscale_, step, update
    assert out.count("Keep the scaler's calls out of train_step") == 1
    assert out.count(f"as the GradScaler call at amp_train_step_cuda.py:{first} did") == 3
    assert re.findall(r"hint: Apply `@torch._dynamo.dont_skip_tracing` to the function `(\S+)`", out) == [
        "Optimizer.zero_grad"]
