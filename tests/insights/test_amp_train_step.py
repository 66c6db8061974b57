"""A mixed-precision training step compiled whole, on real torch 2.13 logs (tests/data/torch213/README.md,
`amp_train_step*.log.gz`, from programs/amp_train_step.py).

What the user of autocast + GradScaler("cpu") meets when the whole step is `@torch.compile`d: each of
`scaler.scale(loss).backward()`, `scaler.step(opt)`, `scaler.update()` and `opt.zero_grad()` breaks the graph, and the
optimizer's own step, run by `scaler.step(opt)`, is compiled as frames of its own; with `clip`, the `loss.item()`
printed inside the step is a Python float passed past a graph break, whose recompile fails.
"""

from __future__ import annotations

import gzip
import json

from compilescope.analyses.insights import insights
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, torch213

LOG = torch213("amp_train_step.log.gz")
CLIP_LOG = torch213("amp_train_step_clip.log.gz")
PROGRAM = REPO / "tests" / "data" / "torch213" / "programs" / "amp_train_step.py"


def _insights(log=LOG):
    with read_trace(str(log)) as trace:
        return insights(trace)


def _line(code: str) -> int:
    """The program's line whose code is `code`, read from the program itself."""
    return next(i for i, line in enumerate(PROGRAM.read_text().splitlines(), 1) if line.strip() == code)


def _innermost_program_lines(log) -> dict[str, tuple[int, str]]:
    """Compile id -> (the innermost line of the program in its dynamo_start stack, the compiled function), for the
    compiles of functions outside the program (torch's optimizer), read from the raw log."""
    files: dict[int, str] = {}
    found = {}
    with gzip.open(log, "rt") as f:
        for text in f:
            if text.startswith("\t") or "{" not in text:
                continue
            record = json.loads(text[text.index("{"):])
            if "str" in record:
                files[record["str"][1]] = record["str"][0]
            elif "dynamo_start" in record:
                stack = record["dynamo_start"]["stack"]
                if files[stack[-1]["filename"]].endswith("/amp_train_step.py"):
                    continue
                ours = [fr["line"] for fr in stack if files[fr["filename"]].endswith("/amp_train_step.py")]
                found[f"[{record['frame_id']}/{record['frame_compile_id']}]"] = (ours[-1], stack[-1]["name"])
    return found


def test_the_optimizer_frames_are_placed_under_scaler_step_not_the_first_break():
    # After breaks at line 41 (scaler.scale(loss).backward()) each resume function calls the next, so the stacks of
    # the optimizer's frames pass through line 41 as well as through line 46, scaler.step(opt), the call that ran them.
    step_line, backward_line = _line("scaler.step(opt)"), _line("scaler.scale(loss).backward()")
    raw = _innermost_program_lines(LOG)
    # (a resume function, torch_dynamo_resume_in_wrapper_at_530, is what comes after a break, not below the call)
    through_step = {cid: name for cid, (line, name) in raw.items()
                    if line == step_line and not name.startswith("torch_dynamo_resume_in_")}
    assert {"wrapper", "step"} <= set(through_step.values())  # Optimizer's profile wrapper, SGD.step
    breaks = _insights().graph_breaks.breaks
    [at_step] = [b for b in breaks if b.location is not None and b.location.line == step_line
                 and b.location.filename.endswith("amp_train_step.py")]
    placed = {cid for c in at_step.compiled_callees for cid in c.compile_ids}
    assert {cid.strip("[]") for cid in through_step} <= {cid.strip("[]") for cid in placed}
    assert {c.function for c in at_step.compiled_callees} >= {"wrapper", "step"}
    at_backward = [b for b in breaks if b.location is not None and b.location.line == backward_line]
    assert at_backward and all(not b.compiled_callees for b in at_backward)

